#include "nsa/mutations.h"

#include <cstdio>
#include <cstdlib>

namespace nsa {

namespace {
using M = Mutation;
using S = MutationSite;
// One row per mutation, in enum order: a data table, one line a row (as in
// faults.cpp).
// clang-format off
const std::vector<MutationInfo> kMutations = {
    {M::rope_position_offset, "rope_position_offset", "RoPE positions (q, k of every branch)", "RoPE counts positions from 1 instead of 0. q·k of rotated pairs is unchanged, but the compression φ sees raw keys rotated by the wrong angles.", S::shared, "nsa_ops.cpp rope_position"},
    {M::rope_skips_slc_keys, "rope_skips_slc_keys", "RoPE on k^slc", "The selected branch's keys are projected but never rotated.", S::shared, "nsa_ops.cpp project"},
    {M::phi_pe_reversed, "phi_pe_reversed", "Compression φ: intra-block position embedding", "φ adds the intra-block position embedding in reverse order (the last token gets the first position's row).", S::shared, "nsa_ops.cpp compress_blocks"},
    {M::overlap_touching_blocks, "overlap_touching_blocks", "Eq. 9: selection scores by overlap", "A compressed block that only touches a selection block (shares an end point, no token) counts as overlapping it: closed intervals where the spans are half-open.", S::shared, "nsa_ops.h cmp_overlaps_sel, nsa_ops.cpp overlap_matrix"},
    {M::overlap_stride_as_block, "overlap_stride_as_block", "Eq. 9: compressed block i starts at i·d", "The overlap places compressed block i at i·l (block length) instead of i·d (stride).", S::shared, "nsa_ops.h cmp_overlaps_sel, nsa_ops.cpp overlap_matrix"},
    {M::gate_softmax_over_branches, "gate_softmax_over_branches", "Gate: g = sigmoid(MLP(x))", "The gate normalises each head's three logits with a softmax instead of an independent sigmoid per branch.", S::shared, "nsa_ops.cpp gate_values"},
    {M::gate_slc_win_swapped, "gate_slc_win_swapped", "Output: o = Σ_c g^c ⊙ o^c", "The selected and window outputs are weighted by each other's gate column.", S::shared, "nsa_ops.cpp combine_branches"},
    {M::batched_cmp_visible_late, "batched_cmp_visible_late", "Causality of compressed blocks: i·d + l − 1 ≤ t", "Batched prefill shows a compressed block one token after its last token arrived (< instead of ≤).", S::batched, "nsa_batched.cpp nsa_batched"},
    {M::batched_group_score_first_head, "batched_group_score_first_head", "Eq. 10: block scores summed over the group", "Batched prefill ranks a group's blocks by the group's first head alone.", S::batched, "nsa_batched.cpp nsa_batched"},
    {M::batched_forced_prev_block_missing, "batched_forced_prev_block_missing", "Top-n forced blocks: 0, ⌊t/l'⌋, ⌊t/l'⌋−1", "Batched top-n forces the initial and the current block but not the one before the current block.", S::batched, "nsa_batched.cpp select_all"},
    {M::batched_slc_sees_future, "batched_slc_sees_future", "Selected tokens: the chosen blocks' tokens ≤ t", "Batched selected attention (pack) keeps every token of a chosen block, including those after the query.", S::batched, "nsa_batched.cpp selected_pack"},
    {M::batched_gqa_interleaved, "batched_gqa_interleaved", "GQA: head h reads group ⌊h/(H/G)⌋", "Batched prefill splits the query heads as [H/G, G] instead of [G, H/G]: head h is paired with group h mod G (the repeat vs repeat_interleave mix-up).", S::batched, "nsa_batched.cpp nsa_batched"},
    {M::batched_win_reads_slc_keys, "batched_win_reads_slc_keys", "Window branch keys k^win", "Batched prefill's window branch attends with the selected branch's keys (k^slc) and its own values.", S::batched, "nsa_batched.cpp nsa_batched"},
    {M::batched_slc_scale_over_dk, "batched_slc_scale_over_dk", "Selected attention scale 1/√dk", "Batched selected attention scales scores by 1/dk instead of 1/√dk.", S::batched, "nsa_batched.cpp nsa_batched"},
    {M::decode_cmp_emitted_late, "decode_cmp_emitted_late", "Decode cache: emit block i when token i·d + l − 1 arrives", "Decode tests block completion against the token index instead of the token count: each compressed block is emitted (and visible) one token late.", S::sequential, "nsa_decode.cpp decode_step"},
    {M::decode_window_one_short, "decode_window_one_short", "Window: keys [max(0, t−w+1), t]", "Decode's sliding window holds w−1 keys instead of w.", S::sequential, "nsa_decode.cpp decode_step"},
    {M::decode_ties_to_higher_index, "decode_ties_to_higher_index", "Top-n ties → lower block index", "Decode's top-n sorts ascending and reverses, so equal scores go to the higher block index.", S::sequential, "nsa_decode.cpp top_n_one_query"},
    {M::decode_cmp_unscaled, "decode_cmp_unscaled", "Compressed attention scale 1/√dk", "Decode's compressed attention (and so its block scores) forgets the 1/√dk scale.", S::sequential, "nsa_decode.cpp decode_step"},
};
// clang-format on
}  // namespace

NamedSwitches<MutationInfo, uint64_t> mutations{&kMutations, "mutation"};

namespace {
// NSA_MUTATION from the environment, once at process start, so that any binary
// linking the model (the unit tests first of all) runs mutated. A name that is
// not a mutation stops the process here: a typo must never pass for a mutation
// the tests "caught".
const bool kEnvironmentRead = [] {
  const char* env = std::getenv("NSA_MUTATION");
  if (!env || !*env) return true;
  try {
    mutations.enable_csv(env);
  } catch (const MutationError& e) {
    std::fprintf(stderr, "NSA_MUTATION: %s\n", e.what());
    std::exit(2);
  }
  return true;
}();
}  // namespace

std::string_view to_string(MutationSite s) {
  constexpr std::string_view kNames[] = {"shared (every path)", "batched prefill", "sequential prefill / decode"};
  const auto i = static_cast<size_t>(s);  // in MutationSite's order
  return i < std::size(kNames) ? kNames[i] : "?";
}

}  // namespace nsa
