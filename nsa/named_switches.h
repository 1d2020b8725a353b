#pragma once
// Faults (faults.h) and mutations (mutations.h) are both process-wide named
// switches: a registry of rows {id, name, …}, a bit mask of the rows switched
// on (one relaxed atomic load to ask), and names read from a comma-separated
// list. This is that shape, written once; each catalogue keeps its own rows,
// mask width and error type. find_row also serves the flag registry (flags.h).
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nsa {

template <class Row>
const Row* find_row(const std::vector<Row>& rows, std::string_view name) {
  for (auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

template <class Row>
std::string row_names(const std::vector<Row>& rows) {
  std::string known;
  for (auto& r : rows) known += (known.empty() ? "" : ", ") + std::string(r.name);
  return known;
}

template <class Mask, class Row>
bool row_on(const std::atomic<Mask>& active, const Row& row) {
  return (active.load(std::memory_order_relaxed) >> static_cast<uint32_t>(row.id)) & 1u;
}

// Switches on the named rows; "none" and empty names are ignored. An unknown
// name throws Error("unknown <what> 'x' (known: …)") before anything changes.
template <class Error, class Mask, class Row>
void switch_on(std::atomic<Mask>& active, const std::vector<Row>& rows, const std::vector<std::string>& names,
               std::string_view what) {
  Mask mask = 0;
  for (auto& n : names) {
    if (n.empty() || n == "none") continue;
    const Row* r = find_row(rows, n);
    if (!r) throw Error("unknown " + std::string(what) + " '" + n + "' (known: " + row_names(rows) + ")");
    mask |= Mask{1} << static_cast<uint32_t>(r->id);
  }
  active.fetch_or(mask, std::memory_order_relaxed);
}

// The names of the rows switched on, in registry order.
template <class Mask, class Row>
std::vector<std::string> names_on(const std::atomic<Mask>& active, const std::vector<Row>& rows) {
  std::vector<std::string> out;
  for (auto& r : rows)
    if (row_on(active, r)) out.emplace_back(r.name);
  return out;
}

}  // namespace nsa
