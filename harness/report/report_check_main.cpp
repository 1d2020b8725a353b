// report_check DIR [--max-bytes N]: the reader's view of a run directory as a
// test. Exit 0 when every relative link in report.md and the pages it links
// to resolves and report.md is at most N bytes; 1 (with each problem on
// stderr) when not; 2 for a usage error.
#include <filesystem>
#include <iostream>
#include <string>

#include "harness/report/link_check.h"

int main(int argc, char** argv) {
  std::string dir;
  long long max_bytes = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--max-bytes" && i + 1 < argc) {
      try {
        max_bytes = std::stoll(argv[++i]);
      } catch (const std::exception&) {
        std::cerr << "report_check: --max-bytes wants a number, got '" << argv[i] << "'\n";
        return 2;
      }
    } else if (dir.empty() && a.rfind("--", 0) != 0) {
      dir = a;
    } else {
      std::cerr << "usage: report_check DIR [--max-bytes N]\n";
      return 2;
    }
  }
  if (dir.empty()) {
    std::cerr << "usage: report_check DIR [--max-bytes N]\n";
    return 2;
  }
  const auto report = harness::check_links(dir);
  int rc = report.problems.empty() ? 0 : 1;
  std::cerr << harness::describe(report);
  std::error_code ec;
  const auto size = std::filesystem::file_size(std::filesystem::path(dir) / "report.md", ec);
  if (ec) {
    std::cerr << dir << "/report.md: " << ec.message() << "\n";
    return 1;
  }
  if (max_bytes >= 0 && static_cast<long long>(size) > max_bytes) {
    std::cerr << dir << "/report.md: " << size << " bytes, over the limit of " << max_bytes << "\n";
    rc = 1;
  }
  std::cout << "report.md " << size << " bytes; " << report.pages.size() << " page(s), " << report.links
            << " relative link(s), " << report.problems.size() << " broken\n";
  return rc;
}
