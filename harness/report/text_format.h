#pragma once
// Small formatting rules shared by the writers, so a number or a missing value
// reads the same in every table: missing → "n/a", NaN → "NaN".
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace harness {

// `obj[key]` as text: strings as they are, numbers and booleans via JSON,
// missing/null/empty → "n/a".
std::string field_text(const nlohmann::json& obj, const char* key);

// Fixed-point with `decimals`; NaN → "NaN", ±inf → "inf"/"-inf"; nullopt → "n/a".
std::string number_text(std::optional<double> v, int decimals);

// Safe inside a markdown table cell: '|' escaped, line breaks become spaces.
std::string table_cell(const std::string& s);

// `text` as an inline code span.
std::string code(const std::string& s);

// XML text/attribute escaping; characters XML 1.0 forbids are dropped.
std::string xml_escape(const std::string& s);

}  // namespace harness
