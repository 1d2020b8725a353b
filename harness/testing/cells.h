#pragma once
// Test fixtures for code that looks at cells by id (selection, sharding,
// merging) and for picking one member out of a list of records.
#include <string>
#include <vector>

#include "harness/core/cell_spec.h"

namespace harness::testing {

// Bare cells with these ids, in this order: all that selection and sharding read.
inline std::vector<CellSpec> cells_with_ids(const std::vector<std::string>& ids) {
  std::vector<CellSpec> out;
  for (auto& id : ids) {
    CellSpec c;
    c.id = id;
    out.push_back(c);
  }
  return out;
}

// One member of each element, in order (the ids of cells, the tokens of GPUs).
template <class T, class M>
std::vector<M> each(const std::vector<T>& v, M T::*member) {
  std::vector<M> out;
  for (auto& x : v) out.push_back(x.*member);
  return out;
}

}  // namespace harness::testing
