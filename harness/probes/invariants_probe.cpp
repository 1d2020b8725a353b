// NSA invariants on the blocks every query selected (DESIGN.md §2): indices in
// range, causal (j·l' ≤ t), no duplicates, the expected count, forced blocks present.
#include "harness/probes/probes.h"

namespace harness {
namespace {

class InvariantsProbe : public Probe {
 public:
  explicit InvariantsProbe(const ProbeSpec& ps) : spec_(ps) {}
  std::string name() const override { return "invariants"; }
  bool wants_tensors(int step) const override { return !reported_ && (step == 1 || probe_due(spec_, step)); }

  void on_step_end(ProbeContext& ctx) override {
    if (reported_) return;
    const auto& P = ctx.model.config().nsa;
    for (auto& e : ctx.tap.entries) {
      if (e.name != "block_idx") continue;
      auto idx = e.value.to(at::kLong).cpu().contiguous();  // [B,S,G,n]
      auto a = idx.accessor<int64_t, 4>();
      const int64_t B = idx.size(0), S = idx.size(1), G = idx.size(2), n = idx.size(3);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < S; ++t)
          for (int64_t g = 0; g < G; ++g) {
            std::vector<int64_t> row;
            for (int64_t s = 0; s < n; ++s) row.push_back(a[b][t][g][s]);
            if (auto why = violation(row, t, P)) {
              reported_ = true;
              Finding f;
              f.code = std::string(reason::invariant);
              f.severity = Severity::blocking;
              f.title = "selected blocks break an NSA invariant at layer " + std::to_string(e.layer) + ", position " + std::to_string(t);
              f.detail = *why;
              f.location = "layer " + std::to_string(e.layer) + " / slc / selection";
              f.evidence = {{"b", b}, {"t", t}, {"group", g}, {"selected", row}};
              ctx.report(f);
              return;
            }
          }
    }
  }

 private:
  static std::optional<std::string> violation(const std::vector<int64_t>& row, int64_t t, const nsa::NsaParams& P) {
    const int64_t cur = t / P.sel_block, expected = std::min<int64_t>(P.sel_count, cur + 1);
    std::vector<int64_t> seen;
    for (int64_t j : row) {
      if (j < 0) continue;
      if (j > cur) return "block " + std::to_string(j) + " starts after the query (t=" + std::to_string(t) + "): it sees the future";
      if (std::find(seen.begin(), seen.end(), j) != seen.end()) return "block " + std::to_string(j) + " selected twice";
      seen.push_back(j);
    }
    if (static_cast<int64_t>(seen.size()) != expected)
      return std::to_string(seen.size()) + " blocks selected where " + std::to_string(expected) + " are due";
    for (int64_t j : {int64_t(0), cur, cur - 1})
      if (j >= 0 && std::find(seen.begin(), seen.end(), j) == seen.end())
        return "forced block " + std::to_string(j) + " (initial or local) is missing";
    return std::nullopt;
  }

  ProbeSpec spec_;
  bool reported_ = false;
};

}  // namespace

std::unique_ptr<Probe> make_invariants_probe(const ProbeSpec& ps) { return std::make_unique<InvariantsProbe>(ps); }

}  // namespace harness
