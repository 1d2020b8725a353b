#pragma once
// Reading a GoogleTest binary's console output: which tests failed. Used by
// `selftest --mutations` to name the tests that caught a mutation.
#include <string>
#include <string_view>
#include <vector>

namespace harness {

// The names ("Suite.Test", "Prefix/Suite.Test/3") of the tests a GoogleTest run
// reported as failed, in first-seen order, each once. The per-test result line
// and the summary list both read "[  FAILED  ] <name> …"; the summary's count
// line ("[  FAILED  ] 2 tests, listed below:") is not a name.
std::vector<std::string> failed_gtest_names(std::string_view output);

}  // namespace harness
