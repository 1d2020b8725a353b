#include "harness/scenario/checker.h"

#include "harness/scenario/limits.h"

namespace harness {

std::string join_path(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string index_path(const std::string& prefix, size_t i) { return prefix + "[" + std::to_string(i) + "]"; }

void Checker::error(const Pos& pos, const std::string& key_path, const std::string& message) {
  // Past the shown ones only the count matters (ScenarioError): keep a slim
  // entry, not a copy of the line, so a list of 100,000 bad values stays small.
  if (diags_.size() >= kMaxDiagnostics) {
    Diagnostic d;
    d.line = pos.line;
    diags_.push_back(std::move(d));
    return;
  }
  diags_.push_back(sources_.diagnostic(pos, key_path, message));
}

bool Checker::expect_map(const YNode& n, const std::string& path, const std::string& what) {
  if (n.is_map()) return true;
  error(n.pos, path, "expected " + what + ", got " + n.describe());
  return false;
}

bool Checker::expect_seq(const YNode& n, const std::string& path, const std::string& what) {
  if (n.is_seq()) return true;
  error(n.pos, path, "expected " + what + ", got " + n.describe());
  return false;
}

void Checker::check_keys(const YNode& map, const std::string& path, const std::vector<std::string>& allowed) {
  for (auto& e : map.entries) {
    bool known = false;
    for (auto& a : allowed) known = known || a == e.key;
    if (!known) error(e.key_pos, join_path(path, e.key), "unknown key" + did_you_mean(e.key, allowed));
  }
}

std::optional<std::string> Checker::string(const YNode& n, const std::string& path) {
  if (n.is_scalar()) return n.text;
  error(n.pos, path, "expected a string, got " + n.describe());
  return std::nullopt;
}

std::optional<std::string> Checker::one_of(const YNode& n, const std::string& path,
                                           const std::vector<std::string>& choices) {
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", ")) + choices[i];
  if (n.is_scalar())
    for (auto& c : choices)
      if (n.text == c) return c;
  // No "did you mean" here: the choices are few and all listed, and the closest
  // spelling is often the wrong one ('gpu' is one edit from 'cpu', meant 'cuda').
  error(n.pos, path, "expected " + list + ", got " + n.describe());
  return std::nullopt;
}

namespace {
// A number written in quotes is a string in YAML; saying so explains the error.
std::string got(const YNode& n) {
  return n.is_scalar() && n.quoted ? "the quoted string " + n.describe() : n.describe();
}

// An integer written as one but above `max` (or past long long altogether):
// refused, never wrapped or truncated into another value.
bool too_large(const YNode& n, long long max) {
  if (!n.is_scalar() || n.quoted || !is_integer_text(n.text) || n.text[0] == '-') return false;
  auto v = parse_integer(n.text);
  return !v || *v > max;
}
}  // namespace

std::optional<long long> Checker::positive_int(const YNode& n, const std::string& path, long long max) {
  if (n.is_scalar() && !n.quoted)
    if (auto v = parse_integer(n.text); v && *v > 0 && *v <= max) return v;
  if (too_large(n, max)) error(n.pos, path, "expected a positive integer ≤ " + std::to_string(max) + ", got " + got(n));
  else error(n.pos, path, "expected a positive integer, got " + got(n));
  return std::nullopt;
}

std::optional<long long> Checker::non_negative_int(const YNode& n, const std::string& path, long long max) {
  if (n.is_scalar() && !n.quoted)
    if (auto v = parse_integer(n.text); v && *v >= 0 && *v <= max) return v;
  if (too_large(n, max)) error(n.pos, path, "expected an integer from 0 to " + std::to_string(max) + ", got " + got(n));
  else error(n.pos, path, "expected an integer ≥ 0, got " + got(n));
  return std::nullopt;
}

std::optional<double> Checker::number(const YNode& n, const std::string& path) {
  if (n.is_scalar() && !n.quoted)
    if (auto v = parse_number(n.text)) return v;
  error(n.pos, path, "expected a number, got " + got(n));
  return std::nullopt;
}

std::optional<double> Checker::positive_number(const YNode& n, const std::string& path) {
  if (n.is_scalar() && !n.quoted)
    if (auto v = parse_number(n.text); v && *v > 0) return v;
  error(n.pos, path, "expected a number > 0, got " + got(n));
  return std::nullopt;
}

std::optional<double> Checker::non_negative_number(const YNode& n, const std::string& path) {
  if (n.is_scalar() && !n.quoted)
    if (auto v = parse_number(n.text); v && *v >= 0) return v;
  error(n.pos, path, "expected a number ≥ 0, got " + got(n));
  return std::nullopt;
}

std::optional<double> Checker::fraction(const YNode& n, const std::string& path) {
  if (n.is_scalar() && !n.quoted)
    if (auto v = parse_number(n.text); v && *v >= 0 && *v <= 1) return v;
  error(n.pos, path, "expected a number between 0 and 1, got " + got(n));
  return std::nullopt;
}

std::optional<bool> Checker::boolean(const YNode& n, const std::string& path) {
  if (n.is_scalar() && !n.quoted)
    if (auto v = parse_bool(n.text)) return v;
  std::string msg = "expected true or false, got " + got(n);
  if (n.is_scalar() && !n.quoted && is_yaml11_bool_word(n.text))
    msg += " (a YAML 1.1 boolean word: its meaning depends on the parser, so it is not guessed)";
  error(n.pos, path, msg);
  return std::nullopt;
}

}  // namespace harness
