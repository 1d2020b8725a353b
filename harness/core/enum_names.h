#pragma once
// Enum ↔ name as one table per enum: the name and the parser read the same
// rows, so a name is never spelled twice. A new enumerator needs its row; the
// tests that print or parse every value catch one left out.
#include <cstddef>
#include <optional>
#include <string_view>

namespace harness {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `v` in `table`; `unknown` for a value with no row.
template <class E, std::size_t N>
constexpr std::string_view name_in(const EnumName<E> (&table)[N], E v, std::string_view unknown = "?") {
  for (const auto& row : table)
    if (row.value == v) return row.name;
  return unknown;
}

// The value named `name` in `table`, or nothing.
template <class E, std::size_t N>
constexpr std::optional<E> value_in(const EnumName<E> (&table)[N], std::string_view name) {
  for (const auto& row : table)
    if (row.name == name) return row.value;
  return std::nullopt;
}

}  // namespace harness
