#include "harness/report/text_format.h"

#include <cmath>

#include <fmt/format.h>

namespace harness {

std::string field_text(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return "n/a";
  const auto& v = obj.at(key);
  if (v.is_null()) return "n/a";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.empty() ? "n/a" : s;
}

std::string number_text(std::optional<double> v, int decimals) {
  if (!v) return "n/a";
  if (std::isnan(*v)) return "NaN";
  if (std::isinf(*v)) return *v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}f}", *v, decimals);
}

std::string table_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

std::string code(const std::string& s) {
  // A backtick inside the text needs a longer fence (CommonMark code spans).
  if (s.find('`') != std::string::npos) return "`` " + s + " ``";
  return "`" + s + "`";
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') break;  // not allowed in XML 1.0
        out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace harness
