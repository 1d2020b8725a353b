#pragma once
// Faults (faults.h) and mutations (mutations.h) are both process-wide named
// switches: a registry of rows {id, name, …}, a bit mask of the rows switched
// on (one relaxed atomic load to ask), and names read from a comma-separated
// list. This is that shape, written once: each catalogue is one NamedSwitches
// object over its own typed rows, with its own mask width and error type.
// find_row also serves the flag registry (flags.h).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "nsa/name_list.h"

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

// An unknown name given to one catalogue. A type per catalogue (FaultError,
// MutationError), so that a caller catches only the catalogue it switched.
template <class Id>
struct UnknownSwitchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One catalogue of switches: `rows` holds one row per Id in enum order (row i
// has id i), and the mask has one bit per row. The constructor is constexpr so
// that a catalogue at namespace scope is constant-initialized: a plant site may
// ask it before any dynamic initializer has run.
template <class Row, class Mask>
class NamedSwitches {
 public:
  using Id = decltype(Row::id);
  using Error = UnknownSwitchError<Id>;
  static_assert(static_cast<size_t>(Id::count_) <= sizeof(Mask) * 8, "the active set is one bit per row");

  // `what` names one row in error messages ("fault").
  constexpr NamedSwitches(const std::vector<Row>* rows, std::string_view what) : rows_(rows), what_(what) {}

  const std::vector<Row>& rows() const { return *rows_; }
  const Row* find(std::string_view name) const { return find_row(*rows_, name); }

  // A plant site's question: one relaxed atomic load.
  bool on(Id id) const { return (mask() >> static_cast<uint32_t>(id)) & 1u; }

  // Switches on the named rows; "none" and empty names are ignored. An unknown
  // name throws Error("unknown <what> 'x' (known: …)") before anything changes.
  void enable(const std::vector<std::string>& names) {
    Mask add = 0;
    for (auto& n : names) {
      if (n.empty() || n == "none") continue;
      const Row* r = find(n);
      if (!r) throw Error("unknown " + std::string(what_) + " '" + n + "' (known: " + row_names(*rows_) + ")");
      add |= Mask{1} << static_cast<uint32_t>(r->id);
    }
    active_.fetch_or(add, std::memory_order_relaxed);
  }
  // "a, b,c" as in NSA_FAULT / NSA_MUTATION.
  void enable_csv(std::string_view csv) { enable(split_name_list(csv)); }
  void disable_all() { set_mask(0); }

  // Every row's name, in registry order (for "did you mean" hints).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (auto& r : *rows_) out.emplace_back(r.name);
    return out;
  }

  // The names of the rows switched on, in registry order.
  std::vector<std::string> active_names() const {
    std::vector<std::string> out;
    for (auto& r : *rows_)
      if (on(r.id)) out.emplace_back(r.name);
    return out;
  }

  // The active set as a mask, to save and restore around a test.
  Mask mask() const { return active_.load(std::memory_order_relaxed); }
  void set_mask(Mask m) { active_.store(m, std::memory_order_relaxed); }

 private:
  const std::vector<Row>* rows_;
  std::string_view what_;
  std::atomic<Mask> active_{0};
};

}  // namespace nsa
