#pragma once
// A deliberately small XML reader for tests: checks well-formedness (balanced,
// properly nested tags; quoted attributes; only the five predefined entities;
// no raw '<' or '&') and returns the elements in document order.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // unescaped character data directly inside
  int depth = 0;
  int parent = -1;   // index into the element list
};

inline std::string xml_unescape_checked(const std::string& s) {
  static const std::map<std::string, char> kEntities{
      {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') throw std::runtime_error("raw '<' in text or attribute");
    if (s[i] != '&') { out += s[i]; continue; }
    size_t semi = s.find(';', i);
    if (semi == std::string::npos) throw std::runtime_error("unterminated entity");
    auto it = kEntities.find(s.substr(i + 1, semi - i - 1));
    if (it == kEntities.end()) throw std::runtime_error("unknown entity &" + s.substr(i + 1, semi - i - 1) + ";");
    out += it->second;
    i = semi;
  }
  return out;
}

inline std::vector<XmlElement> parse_xml(const std::string& doc) {
  std::vector<XmlElement> elems;
  std::vector<int> open;
  size_t i = 0;
  if (doc.compare(0, 5, "<?xml") == 0) i = doc.find("?>") + 2;
  auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ':'; };
  while (i < doc.size()) {
    size_t lt = doc.find('<', i);
    std::string text = xml_unescape_checked(doc.substr(i, lt == std::string::npos ? std::string::npos : lt - i));
    if (!open.empty()) elems[open.back()].text += text;
    else if (text.find_first_not_of(" \t\r\n") != std::string::npos) throw std::runtime_error("text outside root");
    if (lt == std::string::npos) break;
    i = lt + 1;
    if (doc[i] == '/') {
      size_t gt = doc.find('>', i);
      std::string name = doc.substr(i + 1, gt - i - 1);
      if (open.empty() || elems[open.back()].name != name) throw std::runtime_error("mismatched </" + name + ">");
      open.pop_back();
      i = gt + 1;
      continue;
    }
    XmlElement e;
    while (i < doc.size() && is_name(doc[i])) e.name += doc[i++];
    if (e.name.empty()) throw std::runtime_error("bad tag name");
    bool self_closing = false;
    for (;;) {
      while (i < doc.size() && std::isspace(static_cast<unsigned char>(doc[i]))) ++i;
      if (doc.compare(i, 2, "/>") == 0) { self_closing = true; i += 2; break; }
      if (doc[i] == '>') { ++i; break; }
      std::string key;
      while (i < doc.size() && is_name(doc[i])) key += doc[i++];
      if (key.empty() || doc[i] != '=' || doc[i + 1] != '"') throw std::runtime_error("bad attribute in <" + e.name + ">");
      size_t end = doc.find('"', i + 2);
      if (end == std::string::npos) throw std::runtime_error("unterminated attribute");
      if (e.attrs.count(key)) throw std::runtime_error("duplicate attribute " + key);
      e.attrs[key] = xml_unescape_checked(doc.substr(i + 2, end - i - 2));
      i = end + 1;
    }
    e.depth = static_cast<int>(open.size());
    e.parent = open.empty() ? -1 : open.back();
    if (open.empty() && !elems.empty()) throw std::runtime_error("second root element");
    elems.push_back(e);
    if (!self_closing) open.push_back(static_cast<int>(elems.size()) - 1);
  }
  if (!open.empty()) throw std::runtime_error("unclosed <" + elems[open.back()].name + ">");
  if (elems.empty()) throw std::runtime_error("no root element");
  return elems;
}

}  // namespace harness::testing
