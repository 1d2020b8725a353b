#pragma once
// Problems found in a scenario file, reported the way ninja's lexer reports
// bad input: `file:line:col: key.path: message`, then the offending line and a
// caret under the column. Every problem is collected before anything throws,
// so one `validate` shows them all.
#include <stdexcept>
#include <string>
#include <vector>

namespace harness {

struct Diagnostic {
  std::string file;
  int line = 0;  // 1-based; 0 when the position is unknown
  int col = 0;   // 1-based
  std::string key_path;     // "train.precision", "matrix.include[1].seq_len"; may be empty
  std::string message;
  std::string source_line;  // the text of `line`, without its newline
  int source_shift = 0;     // columns cut from the front of a long line shown as a window
};

// Three lines, each ending in '\n' (the last two only when the source line is known):
//   file:line:col: key.path: message
//   <source line>
//   <spaces>^
std::string format_diagnostic(const Diagnostic& d);

// Thrown by load_scenario when any diagnostic was found; what() is all of them,
// formatted (past kMaxDiagnostics, the first ones and a count of the rest).
struct ScenarioError : std::runtime_error {
  explicit ScenarioError(std::vector<Diagnostic> diags);
  std::vector<Diagnostic> diagnostics;

 private:
  ScenarioError(std::vector<Diagnostic> diags, int);
};

// " (did you mean 'x'?)", " (did you mean 'x' or 'y'?)", or "" when nothing is close.
// Candidates within edit distance 2 (3 for names longer than 8 characters), best first.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);
// The same, for names another registry already ranked (e.g. nsa::close_flag_matches).
std::string did_you_mean_ranked(const std::vector<std::string>& ranked);

}  // namespace harness
