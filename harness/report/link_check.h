#pragma once
// Checks what a reader of a run directory clicks: every relative link and
// image in report.md and in every page it links to (appendix.md, cell pages)
// names a file that exists inside the run directory, and every #fragment a
// heading of the page it points into. The report tests and `report_check`
// (the CTest that runs a scenario) use it.
#include <string>
#include <vector>

namespace harness {

struct LinkProblem {
  std::string page;    // relative to the run directory
  int line = 0;        // 1-based
  std::string target;  // as written
  std::string why;     // "no such file", "outside the run directory", "no heading #x in y"
};

struct LinkReport {
  std::vector<LinkProblem> problems;
  std::vector<std::string> pages;  // every page visited, start first
  int links = 0;                   // relative links checked
};

// Follows relative links from `start` (relative to `run_dir`) through every
// linked .md page. Links with a scheme (https:, mailto:) are not followed.
LinkReport check_links(const std::string& run_dir, const std::string& start = "report.md");

// "page:line: target: why", one per line.
std::string describe(const LinkReport& r);

// GitHub's anchor for a heading: lower case, spaces to '-', punctuation dropped.
std::string heading_anchor(const std::string& heading);

}  // namespace harness
