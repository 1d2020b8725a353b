#pragma once
// Mutations: semantic bugs planted in the NSA layer to test the tests. Unlike
// faults (faults.h), which are the catalogue the harness knows and expects,
// mutations are bugs the unit tests and the harness must find *without*
// knowing them: nothing outside `nsa-harness selftest --mutations` and the
// mutation tests may read this registry. Each one is a plausible slip (an
// off-by-one at a block boundary, a wrong scale, a swapped column), never an
// obvious NaN, and each changes the layer's output.
//
// A plant site is one line, `if (nsa::mutation_on(nsa::Mutation::x)) ...`,
// costing one relaxed atomic load when every mutation is off. They are switched
// on from NSA_MUTATION=a,b: read once at process start (so any test binary runs
// mutated) and again by the harness child from its resolved flags.
#include <cstdint>
#include <string_view>

#include "nsa/named_switches.h"

namespace nsa {

enum class Mutation : uint32_t {
  // Shared by every path (nsa_ops): invisible to parity against the reference.
  rope_position_offset,
  rope_skips_slc_keys,
  phi_pe_reversed,
  overlap_touching_blocks,
  overlap_stride_as_block,
  gate_softmax_over_branches,
  gate_slc_win_swapped,
  // Batched prefill only.
  batched_cmp_visible_late,
  batched_group_score_first_head,
  batched_forced_prev_block_missing,
  batched_slc_sees_future,
  batched_gqa_interleaved,
  batched_win_reads_slc_keys,
  batched_slc_scale_over_dk,
  // Sequential prefill / decode only.
  decode_cmp_emitted_late,
  decode_window_one_short,
  decode_ties_to_higher_index,
  decode_cmp_unscaled,
  count_
};

// Which code a mutation lives in: what a self-test must run to see it.
enum class MutationSite { shared, batched, sequential };
std::string_view to_string(MutationSite s);

struct MutationInfo {
  Mutation id;
  std::string_view name;
  std::string_view equation;  // the part of DESIGN.md §2 it breaks
  std::string_view doc;       // the bug, as a reviewer would describe it
  MutationSite site;
  std::string_view plant;     // file and function of the plant site
};

using MutationError = UnknownSwitchError<Mutation>;

// The catalogue (named_switches.h), as for faults: mutations.rows(), find,
// enable / enable_csv (MutationError on an unknown name), disable_all,
// active_names, and mask / set_mask to save and restore around a test.
extern NamedSwitches<MutationInfo, uint64_t> mutations;

inline bool mutation_on(Mutation m) { return mutations.on(m); }

}  // namespace nsa
