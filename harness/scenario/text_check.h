#pragma once
// Byte-level checks of scenario text, before and after YAML parsing. yaml-cpp
// reads invalid UTF-8 as if it were Latin-1 and stops at a NUL byte without a
// word, so a file with either would load as something other than what it
// holds; and a value that is not UTF-8 cannot be written into results.json.
#include <optional>
#include <string>
#include <string_view>

namespace harness {

struct BadByte {
  int line = 0;  // 1-based
  int col = 0;   // 1-based, in bytes
  std::string message;
};

// The first NUL byte or byte that does not belong to a valid UTF-8 sequence
// (overlong forms, surrogates and code points above U+10FFFF included).
std::optional<BadByte> find_bad_byte(std::string_view text);
bool is_valid_utf8(std::string_view text);

// `text` with every byte find_bad_byte would stop at replaced by '?': same
// lines and columns, so the YAML structure around a bad byte can still be read.
std::string replace_bad_bytes(std::string_view text);

// At most `max` bytes of `text`, cut at a character boundary, "…" appended when cut.
std::string excerpt(std::string_view text, size_t max);

// 'text' for a message, shortened to kMaxQuotedChars.
std::string quote(std::string_view text);

}  // namespace harness
