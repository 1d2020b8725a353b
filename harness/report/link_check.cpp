#include "harness/report/link_check.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace harness {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Inline code spans hold text, not links ("[0x55e0…]" in a stack line), but a
// link's text may be a code span: the span is blanked, the brackets stay.
std::string without_code_spans(const std::string& line) {
  std::string out = line;
  for (size_t open = out.find('`'); open != std::string::npos; open = out.find('`', open)) {
    const size_t after = out.find_first_not_of('`', open);
    if (after == std::string::npos) break;
    const size_t ticks = after - open;
    size_t close = out.find(std::string(ticks, '`'), open + ticks);
    if (close == std::string::npos) break;
    std::fill(out.begin() + static_cast<long>(open), out.begin() + static_cast<long>(close + ticks), ' ');
    open = close + ticks;
  }
  return out;
}

std::set<std::string> anchors_of(const fs::path& page) {
  std::set<std::string> out;
  bool fenced = false;
  for (auto& l : read_lines(page)) {
    if (l.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || l.empty() || l[0] != '#') continue;
    size_t text = l.find_first_not_of('#');
    if (text == std::string::npos || l[text] != ' ') continue;
    out.insert(heading_anchor(l.substr(text + 1)));
  }
  return out;
}

bool inside(const fs::path& root, const fs::path& p) {
  auto r = root.lexically_normal(), q = p.lexically_normal();
  auto [a, b] = std::mismatch(r.begin(), r.end(), q.begin(), q.end());
  return a == r.end() || (std::next(a) == r.end() && a->empty());
}

}  // namespace

std::string heading_anchor(const std::string& heading) {
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_') out += static_cast<char>(std::tolower(c));
    else if (c == ' ') out += '-';
    else if (c >= 0x80) out += static_cast<char>(c);  // GitHub keeps non-ASCII letters
  }
  return out;
}

LinkReport check_links(const std::string& run_dir, const std::string& start) {
  static const std::regex kLink(R"(!?\[[^\]]*\]\(([^)\s]+)(\s+"[^"]*")?\))");
  const fs::path root = fs::absolute(run_dir);
  LinkReport report;
  std::vector<std::string> todo{start};
  std::set<std::string> seen{start};
  while (!todo.empty()) {
    const std::string page = todo.back();
    todo.pop_back();
    report.pages.push_back(page);
    const fs::path page_path = root / page;
    if (!fs::exists(page_path)) {
      report.problems.push_back({page, 0, page, "no such file"});
      continue;
    }
    bool fenced = false;
    const auto lines = read_lines(page_path);
    for (size_t n = 0; n < lines.size(); ++n) {
      if (lines[n].rfind("```", 0) == 0) fenced = !fenced;
      if (fenced) continue;
      const std::string line = without_code_spans(lines[n]);
      for (std::sregex_iterator it(line.begin(), line.end(), kLink), end; it != end; ++it) {
        const std::string target = (*it)[1].str();
        if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
        ++report.links;
        const size_t hash = target.find('#');
        const std::string file = percent_decode(target.substr(0, hash));
        const std::string fragment = hash == std::string::npos ? "" : target.substr(hash + 1);
        const fs::path resolved = file.empty() ? page_path : (page_path.parent_path() / file).lexically_normal();
        const int line_no = static_cast<int>(n + 1);
        if (!inside(root, resolved)) { report.problems.push_back({page, line_no, target, "outside the run directory"}); continue; }
        if (!fs::is_regular_file(resolved)) { report.problems.push_back({page, line_no, target, "no such file"}); continue; }
        const bool markdown = resolved.extension() == ".md";
        if (!fragment.empty() && markdown && !anchors_of(resolved).count(fragment))
          report.problems.push_back({page, line_no, target, "no heading #" + fragment});
        const std::string rel = resolved.lexically_relative(root).generic_string();
        if (markdown && seen.insert(rel).second) todo.push_back(rel);
      }
    }
  }
  return report;
}

std::string describe(const LinkReport& r) {
  std::ostringstream s;
  for (auto& p : r.problems) s << p.page << ":" << p.line << ": " << p.target << ": " << p.why << "\n";
  return s.str();
}

}  // namespace harness
