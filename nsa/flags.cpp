#include <charconv>
#include <climits>
#include "nsa/flags.h"

#include "nsa/edit_distance.h"
#include "nsa/named_switches.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace nsa {
namespace {
using T = FlagType;
using R = FlagReach;
// The seeds' names are kept where the meaning is the same. A flag's reach
// (FlagReach) follows its readers: nsa_layer_only where every reader sits behind
// the NSA layer (nsa_layer.cpp, nsa_batched.cpp, nsa_decode.cpp,
// cuda/layer_routing.cpp, or a probe branch a dense model skips).
const std::vector<FlagInfo> kFlags = {
    // Every model: sequential prefill also keeps the trainer from weight copies
    // and from the CUDA graph (trainer.cpp), whatever the attention.
    {"NSA_PREFILL_BATCHED", T::boolean, "1", R::every_model,
     "Prefill (training forward) vectorised over all positions; 0 runs it token by token through the decode path "
     "with incremental caches (sequential prefill)."},
    {"NSA_USE_SEL_PACK", T::boolean, "1", R::nsa_layer_only,
     "Batched selected attention by gathering each query's selected keys into a packed tensor (memory O(S·n·l'))."},
    {"NSA_USE_SEL_MASK", T::boolean, "0", R::nsa_layer_only,
     "Batched selected attention through a dense S×S token mask (simple, O(S²) memory). Wins over NSA_USE_SEL_PACK "
     "when both are set."},
    // Every model: the trainer casts each weight instead of reading copies under
    // it, a dense model too (trainer.cpp, kCopiesBlockers).
    {"NSA_FORCE_PARITY", T::boolean, "0", R::every_model,
     "Run every NSA layer through the per-query reference path (slow, the oracle)."},
    {"NSA_STOPGRAD_GATES", T::boolean, "0", R::nsa_layer_only, "Detach the gate values: gate MLPs get no gradient."},
    {"NSA_DISABLE_AUX_STATS", T::boolean, "0", R::nsa_layer_only,
     "Skip the auxiliary statistics the layer reports to observers (gate values, selected indices)."},
    {"NSA_SDPA_NO_FLASH", T::boolean, "1", R::nsa_layer_only,
     "Keep libtorch's FlashAttention-2 out of the window branch on CUDA (the default: cuDNN's forward or ours, "
     "NSA_WINDOW_CUDNN, then our bitwise reproducible backward); 0 runs the window through FA2's sliding-window "
     "kernels where they apply "
     "(fp16/bf16, q/k/v of one head dim <= 256 and a multiple of 8, compute capability >= 8.0), whose backward "
     "is reproducible only under deterministic algorithms."},
    {"NSA_WINDOW_CUDNN", T::boolean, "1", R::nsa_layer_only,
     "The window branch on CUDA through cuDNN's fused attention with a sliding window (Hopper's wgmma/TMA "
     "kernels; deterministic backward) where cuDNN has an engine for the shape (fp16/bf16, head dims it supports; "
     "nsa/cuda/window_cudnn.h); 0, or a shape cuDNN declines, runs our window kernel. NSA_SDPA_NO_FLASH=0 asks "
     "for FlashAttention-2 explicitly and wins over this."},
    {"NSA_WINDOW_BWD", T::string, "auto", R::nsa_layer_only,
     "The window branch's backward where its forward runs through cuDNN (NSA_WINDOW_CUDNN=1 and cuDNN takes the "
     "shape; our kernel's forward always has our backward): ours (our kernels from cuDNN's logsumexp, bitwise "
     "reproducible), cudnn (cuDNN's backward, deterministic dq), cudnn_atomic (cuDNN's backward with float "
     "atomics in dq: not reproducible bit for bit, like libtorch's SDPA backward in the dense cell) or auto (the "
     "default: ours when the run uses deterministic algorithms, train.deterministic, else cudnn_atomic; "
     "nsa/determinism.h). Each call keeps the choice made at its forward; a shape whose backward cuDNN declines "
     "runs our window kernel, forward and backward (nsa/cuda/window_cudnn.h).",
     false,
     {"auto", "ours", "cudnn", "cudnn_atomic"}},
    {"NSA_COMPRESSED_CUDNN", T::string, "auto", R::nsa_layer_only,
     "The compressed branch's attention on CUDA through cuDNN's fused attention over the sequence folded by the "
     "compression stride (query t = d·u + r sees key i iff i <= u + c_r: causal per run of residues; "
     "nsa/cuda/compressed_cudnn.h), where cuDNN has an engine for the shape (fp16/bf16, S a multiple of d, head "
     "dims it takes): 1 wherever it takes it, 0 never (our kernels), auto (the default) where the call's "
     "B·H·S·S_cmp·(dk+dv) is at least 2^34 (below it cuDNN's fixed cost loses to ours: the m7c training shape "
     "stays on our kernels). select_blocks reads cuDNN's logsumexp then.",
     false,
     {"auto", "1", "0"}},
    {"NSA_COMPRESSED_BWD", T::string, "auto", R::nsa_layer_only,
     "The compressed branch's backward where its forward runs through cuDNN (NSA_COMPRESSED_CUDNN): ours (our "
     "kernels from cuDNN's logsumexp, bitwise reproducible), cudnn (cuDNN's backward, deterministic dq; bitwise "
     "reproducible too, and faster than ours wherever the route pays), cudnn_atomic (cuDNN's backward with float "
     "atomics in dq: not reproducible bit for bit) or auto (the default: cudnn when the run uses deterministic "
     "algorithms, train.deterministic, else cudnn_atomic; nsa/determinism.h). Each call keeps the choice made at "
     "its forward; a shape whose backward cuDNN declines runs our kernels, forward and backward.",
     false,
     {"auto", "ours", "cudnn", "cudnn_atomic"}},
    {"NSA_SELECTED_DQ", T::string, "auto", R::nsa_layer_only,
     "How the selected branch's backward makes dq: kernel (its own query-centric dq kernel, which recomputes S "
     "and dP; bitwise reproducible), atomic (accumulated in fp32 atomics by the dk/dv kernel from the dS it "
     "already computes, and dk, dv too where a block's rows split over CTAs: one kernel and one recompute "
     "fewer, not reproducible bit for bit, like libtorch's SDPA "
     "backward in the dense cell), slots (the dk/dv kernel writes each (query, block) pair's part of dq, in the "
     "input dtype, to the block's slot and one kernel sums a query's slots in order: no recompute and bitwise "
     "reproducible, for B·S·G·n·h·dk elements of scratch) or auto (the default: slots when the run uses "
     "deterministic algorithms, train.deterministic, else atomic; nsa/determinism.h). atomic and slots apply to "
     "fp16/bf16 on the v2 kernels with room for dS in the key tile (not at dk = dv = 128), atomic with sel_block a "
     "multiple of 64, slots with sel_block = 64, n <= 32 and its scratch within 4 GiB; "
     "elsewhere, and in the sequential prefill's backward, the kernel path runs. The window branch keeps its dq "
     "kernel (the same path measured slower there; the compressed branch: NSA_COMPRESSED_DQ). Each call keeps the "
     "choice made at its forward.",
     false,
     {"auto", "kernel", "atomic", "slots"}},
    {"NSA_COMPRESSED_DQ", T::string, "auto", R::nsa_layer_only,
     "How the compressed branch's backward makes dq where our kernels run it (not cuDNN: NSA_COMPRESSED_CUDNN): "
     "kernel (its own dq kernel, which recomputes S and dP; bitwise reproducible), atomic (accumulated in fp32 "
     "atomics by the dk/dv kernel from the dS it already computes, and dk, dv too where a key tile's rows split "
     "over CTAs; on Hopper at dk + dv <= 128 on warpgroup MMAs; not reproducible bit for bit, like libtorch's SDPA "
     "backward in the dense cell) or auto (the default: kernel when the run uses deterministic algorithms, "
     "train.deterministic, else atomic; nsa/determinism.h). atomic applies to fp16/bf16 on the v2 kernels with "
     "room for dS in the key tile (not at dk = dv = 128); elsewhere the kernel path runs. Each call keeps the "
     "choice made at its forward.",
     false,
     {"auto", "kernel", "atomic"}},
    {"NSA_HEARTBEAT_EVERY", T::integer, "0", R::nsa_layer_only,
     "Sequential prefill: report progress every N tokens (0: once per layer)."},
    {"NSA_DETECT_ANOMALY", T::boolean, "0", R::every_model, "Run backward with autograd anomaly detection."},
    {"NSA_USE_CUDA_SEL", T::boolean, "1", R::nsa_layer_only,
     "Use the fused CUDA kernel for selected attention on CUDA tensors.", true},
    {"NSA_USE_CUDA_WIN", T::boolean, "1", R::nsa_layer_only,
     "Use the fused CUDA kernel for sliding-window attention on CUDA tensors.", true},
    {"NSA_USE_CUDA_CMP", T::boolean, "1", R::nsa_layer_only,
     "Use the fused CUDA kernels for compressed attention, block scores and top-n on CUDA tensors.", true},
    {"NSA_USE_CUDA_DECODE", T::boolean, "1", R::nsa_layer_only,
     "Sequential prefill on CUDA tensors through the decode kernels: four launches per token forward, the "
     "branch kernels' backward over the tokens' saved choices; 0 runs the ATen decode step under autograd, "
     "token by token in both directions (as do the sequential mutations).",
     true},
    {"NSA_FUSED_MLP", T::boolean, "1", R::every_model,
     "The MLP on CUDA tensors as one GEMM for the gate and up projections and one SwiGLU kernel each way "
     "(silu(gate)·up, products in fp32); 0 runs the ATen ops (two GEMMs, silu, mul). Dense cells too.",
     true},
    {"NSA_FUSED_NORM", T::boolean, "1", R::every_model,
     "Each residual add and the RMSNorm after it on CUDA tensors as one kernel each way (the backward also sums "
     "the two gradients the residual stream receives; the fp32 norm weight is used without casts); 0 runs the "
     "ATen add and ATen's RMSNorm. Dense cells too.",
     true},
    {"NSA_CUDA_GRAPH", T::boolean, "1", R::every_model,
     "Capture the training step as one CUDA graph after two eager steps and replay it on the steps no probe "
     "watches from inside (fp32/bf16, one process); 0 runs every step eagerly. Each step_end records which ran.",
     true},
    {"NSA_WEIGHT_COPIES", T::boolean, "1", R::every_model,
     "With fp32 master weights and 16-bit compute (batched prefill), the forward reads 16-bit copies of the "
     "weights (one tensor per group the forward concatenates: projection, MLP gate|up), refreshed by one copy "
     "kernel per step, and their gradients reach the fp32 parameters by another, instead of a cast of each weight "
     "and of each gradient back (~465 small kernels a step at m7c_125m); the same values either way. 0 casts per "
     "weight (comparison, bisection)."},
    {"NSA_OVERLAP_STREAMS", T::boolean, "1", R::nsa_layer_only,
     "Independent attention kernels on CUDA on several streams, forked and joined by events (captured CUDA graphs "
     "too): each branch's backward runs its dk/dv kernel (and the selected branch's reverse index) beside its dq "
     "kernel, and the window and compressed branches run on streams of their own beside the selected one (the "
     "window forward and both backwards overlap). The same values either way; 0 runs everything on one stream "
     "(comparison, bisection).",
     true},
    {"NSA_CUDA_KERNEL_V1", T::boolean, "0", R::nsa_layer_only,
     "Run the v1 (SIMT) attention kernels even where the tensor-core v2 kernels apply (comparison, bisection)."},
    {"NSA_CUDA_WGMMA", T::boolean, "0", R::nsa_layer_only,
     "On Hopper (compute capability 9.0, a build with sm_90a code) run the attention forward at dk = dv = 64 on "
     "warpgroup MMAs (wgmma; Selected under its SharedRows tiling) instead of the v2 mma.sync kernels; off by "
     "default, where v2 measured faster (comparison, and the base of the Hopper path).",
     true},
    {"NSA_SELECTED_TILING", T::string, "auto", R::nsa_layer_only,
     "How the v2 selected kernels tile their work (nsa/cuda/nsa_cuda.h, SelectedTiling), for bisection and "
     "comparison; the result is the same function up to rounding: auto (the default: chosen from the shape), "
     "shared_rows (64 rows of consecutive queries a CTA, the union of their blocks), split_keys (16 rows a CTA, "
     "its warps splitting every tile's keys), query_columns (each query's heads as the MMA columns; h <= 8), "
     "key_outer (each chosen block's K/V once for every query that chose it, partials merged per query; "
     "sel_block 64). The forward and dq follow it where it applies; elsewhere auto's choice runs.",
     true,
     {"auto", "shared_rows", "split_keys", "query_columns", "key_outer"}},
    // Every model: faults are planted outside the layer too (the loss, model.cpp)
    // and any active one keeps the CUDA graph off (trainer.cpp); mutations too
    // (the RoPE ones reach the dense layer, which shares nsa_ops.cpp's RoPE).
    {"NSA_FAULT", T::string, "", R::every_model,
     "Comma-separated fault names to switch on (see `nsa-harness list faults`)."},
    {"NSA_MUTATION", T::string, "", R::every_model,
     "Comma-separated mutation names to switch on: bugs planted to test the tests (`nsa-harness selftest "
     "--mutations`). Also read from the environment at process start, so any binary linking the model runs "
     "mutated."},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}
}  // namespace

const std::vector<FlagInfo>& flag_registry() { return kFlags; }

const FlagInfo* find_flag(std::string_view name) { return find_row(kFlags, name); }

std::vector<std::string> close_flag_matches(std::string_view name) {
  std::vector<std::pair<size_t, std::string>> scored;
  for (auto& f : kFlags) {
    size_t d = edit_distance(name, f.name);
    // A shared stem (NSA_USE_CUDA_…) is a match even when the tail differs more.
    size_t common = 0;
    while (common < name.size() && common < f.name.size() && name[common] == f.name[common]) ++common;
    if (d <= 3 || common >= 10) scored.emplace_back(d, std::string(f.name));
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (auto& [d, n] : scored) out.push_back(n);
  return out;
}

std::string_view to_string(FlagType t) {
  constexpr std::string_view kNames[] = {"bool", "int", "string"};  // in FlagType's order
  const auto i = static_cast<size_t>(t);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::optional<std::string> check_flag_value(const FlagInfo& f, std::string_view value) {
  switch (f.type) {
    case FlagType::boolean: {
      if (value == "0" || value == "1" || value == "true" || value == "false") return std::nullopt;
      std::string l = lower(value);
      if (l == "on" || l == "off" || l == "yes" || l == "no" || l == "y" || l == "n")
        return "'" + std::string(value) + "' is a YAML 1.1 boolean word; write 0 or 1 (or true/false) so the value is not guessed";
      return "expected 0 or 1 (or true/false), got '" + std::string(value) + "'";
    }
    case FlagType::integer: {
      if (value.empty()) return "expected an integer, got an empty value";
      size_t i = (value[0] == '-') ? 1 : 0;
      if (i == value.size()) return "expected an integer, got '" + std::string(value) + "'";
      for (; i < value.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(value[i])))
          return "expected an integer, got '" + std::string(value) + "'";
      // The code reads flags into ints; a longer number would wrap into another value.
      int parsed = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (ec != std::errc() || end != value.data() + value.size())
        return "expected an integer from " + std::to_string(INT_MIN) + " to " + std::to_string(INT_MAX) + ", got '" +
               std::string(value.substr(0, 40)) + (value.size() > 40 ? "...'" : "'");
      return std::nullopt;
    }
    case FlagType::string: {
      if (f.allowed.empty() || std::find(f.allowed.begin(), f.allowed.end(), value) != f.allowed.end())
        return std::nullopt;
      // No "did you mean": the choices are few and all listed (as the scenario
      // checker's one_of does).
      std::string list;
      for (size_t i = 0; i < f.allowed.size(); ++i)
        list += (i == 0 ? "" : (i + 1 == f.allowed.size() ? " or " : ", ")) + std::string(f.allowed[i]);
      return "expected " + list + ", got '" + std::string(value.substr(0, 40)) + (value.size() > 40 ? "...'" : "'");
    }
  }
  return std::nullopt;
}

Flags Flags::from_environment() {
  Flags flags;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind("NSA_", 0) != 0) continue;
    auto eq = kv.find('=');
    std::string_view name = kv.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
    // Harness-internal variables are not model flags.
    if (name.rfind("NSA_HARNESS_", 0) == 0) continue;
    flags.set(name, value);
  }
  return flags;
}

void Flags::set(std::string_view name, std::string_view value) {
  const FlagInfo* f = find_flag(name);
  if (!f) {
    std::string msg = "unknown flag " + std::string(name);
    auto close = close_flag_matches(name);
    if (!close.empty()) {
      msg += " (did you mean ";
      for (size_t i = 0; i < close.size() && i < 3; ++i) msg += (i ? ", " : "") + close[i];
      msg += "?)";
    }
    throw FlagError(msg);
  }
  if (auto err = check_flag_value(*f, value)) throw FlagError(std::string(name) + ": " + *err);
  values_[std::string(name)] = std::string(value);
}

std::string Flags::raw(std::string_view name) const {
  const FlagInfo* f = find_flag(name);
  if (!f) throw FlagError("unknown flag " + std::string(name) + " queried");
  auto it = values_.find(std::string(name));
  return it == values_.end() ? std::string(f->default_value) : it->second;
}

bool Flags::get_bool(std::string_view name) const {
  auto v = raw(name);
  return v == "1" || v == "true";
}

long long Flags::get_int(std::string_view name) const {
  auto v = raw(name);
  // Values were range-checked when set (check_flag_value); defaults are ours.
  long long out = 0;
  std::from_chars(v.data(), v.data() + v.size(), out);
  return out;
}

std::string Flags::get_string(std::string_view name) const { return raw(name); }

}  // namespace nsa
