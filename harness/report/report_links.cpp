#include "harness/report/report_links.h"

#include <cstring>

#include <fmt/format.h>

#include "harness/core/cell_dir.h"
#include "harness/report/text_format.h"

namespace harness {

std::string cell_page_path(const std::string& cell_id) {
  return "cells/" + cell_dir_name(cell_id) + "/" + kCellPageFile;
}

std::string link_target(const std::string& path) {
  static const char* kKeep = "._~,=+/:@!$&'*;-";
  std::string out;
  for (unsigned char c : path) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || (c != 0 && std::strchr(kKeep, c))) out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string md_link(const std::string& text, const std::string& path, const std::string& fragment) {
  return "[" + text + "](" + link_target(path) + (fragment.empty() ? "" : "#" + fragment) + ")";
}

std::string cell_link(const std::string& cell_id) { return md_link(code(cell_id), cell_page_path(cell_id)); }

}  // namespace harness
