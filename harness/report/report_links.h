#pragma once
// Links between the pages of a run directory: report.md at the top,
// appendix.md beside it, one page per cell under cells/<dir>/cell.md. Every
// link target is a path relative to the linking page, percent-encoded where a
// character would end or break a markdown link, and points at a file the
// writers create or found on disk (a missing artifact is named, not linked).
#include <functional>
#include <string>

namespace harness {

inline constexpr const char* kAppendixFile = "appendix.md";
inline constexpr const char* kCellPageFile = "cell.md";

// Does a run-directory-relative path exist? The writers ask the disk; tests
// answer from a list.
using FileExists = std::function<bool(const std::string& run_relative_path)>;

// "cells/<cell_dir_name(id)>/cell.md", relative to the run directory.
std::string cell_page_path(const std::string& cell_id);

// A link target safe inside "(...)": characters outside [A-Za-z0-9._~,=+/:@!$&'*;-]
// written as %XX (so spaces, parentheses, '|' and '#' survive).
std::string link_target(const std::string& path);

// "[text](path#fragment)": `path` encoded by link_target; `fragment` (a
// heading_anchor) after an unencoded '#', when given.
std::string md_link(const std::string& text, const std::string& path, const std::string& fragment = "");

// "[`id`](cells/…/cell.md)" for the top page and the appendix.
std::string cell_link(const std::string& cell_id);

}  // namespace harness
