#include "harness/run/minimize.h"

#include <fmt/core.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include "harness/supervisor/classify.h"
#include "harness/supervisor/runner.h"

namespace harness::run {
namespace {

// Budget: a minimisation must end in bounded time even when every probe hangs.
constexpr int kMaxProbes = 20;

// "step 5 > layer 1 / slc" → "step # > layer # / slc": where, without which instance.
std::string location_class(const std::string& loc) {
  std::string out;
  for (size_t i = 0; i < loc.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(loc[i]))) out += loc[i];
    else if (i == 0 || !std::isdigit(static_cast<unsigned char>(loc[i - 1]))) out += '#';
  }
  return out;
}

}  // namespace

std::string failure_signature(const CellResult& r) {
  std::string sig = std::string(to_string(r.outcome)) + "/" + r.reason.value_or("-");
  for (auto& f : r.findings)
    if (r.reason && f.code == *r.reason) return sig + "@" + location_class(f.location);
  return sig;
}

MinimizeResult minimize_cell(const CellSpec& start, const CellResult& original, const std::string& self_exe,
                             const std::string& work_dir) {
  MinimizeResult m{start, failure_signature(original), 0, 0};
  std::map<std::string, std::string> cache;  // canonical spec → signature
  auto probe = [&](const CellSpec& cand) -> bool {
    nlohmann::json key = cand;
    key.erase("id");
    std::string k = key.dump();
    if (auto it = cache.find(k); it != cache.end()) {
      ++m.cached;
      return it->second == m.signature;
    }
    if (m.probes >= kMaxProbes) return false;
    ++m.probes;
    supervisor::RunOptions ro;
    ro.run_dir = work_dir + "/probe-" + std::to_string(m.probes);
    std::filesystem::create_directories(ro.run_dir);
    auto argv = [&](const CellSpec&, const std::string& dir) {
      return std::vector<std::string>{self_exe, "cell", "--spec", dir + "/cell.json", "--out", dir};
    };
    auto results = supervisor::run_cells({cand}, argv, ro);
    // A probe the harness could not even start says nothing about the failure
    // being minimised: stop (exit 4) rather than read it as a new signature.
    if (!results.empty() && results.front().reason == supervisor::kReasonLaunchFailed)
      throw std::runtime_error(results.front().findings.empty() ? "a minimisation probe could not be started"
                                                                : results.front().findings.front().detail);
    std::string sig = results.empty() ? "none" : failure_signature(results.front());
    cache[k] = sig;
    fmt::print(stderr, "  probe {:>2}: {} → {}\n", m.probes, k.size() > 0 ? cand.id : "", sig);
    return sig == m.signature;
  };
  // Each step proposes a smaller variant; keep it when the failure is unchanged.
  using Shrink = std::function<bool(CellSpec&)>;
  std::vector<std::pair<std::string, Shrink>> shrinks = {
      {"steps", [&](CellSpec& c) {
         int target = original.steps_completed + 1;  // the step that failed
         if (target >= c.train.steps || target < 1) return false;
         c.train.steps = target;
         return true;
       }},
      {"layers", [](CellSpec& c) { if (c.model.n_layers <= 1) return false; c.model.n_layers = std::max(1, c.model.n_layers / 2); return true; }},
      {"layers", [](CellSpec& c) { if (c.model.n_layers <= 1) return false; c.model.n_layers = 1; return true; }},
      {"d_model", [](CellSpec& c) { if (c.model.d_model <= 32) return false; c.model.d_model /= 2; return true; }},
      {"seq_len", [](CellSpec& c) { if (c.train.seq_len <= 16) return false; c.train.seq_len /= 2; return true; }},
      {"seq_len", [](CellSpec& c) { if (c.train.seq_len <= 16) return false; c.train.seq_len /= 2; return true; }},
      {"batch", [](CellSpec& c) { if (c.train.batch <= 1) return false; c.train.batch = 1; return true; }},
      {"precision", [](CellSpec& c) { if (c.train.precision == "fp32") return false; c.train.precision = "fp32"; c.train.master_weights = true; return true; }},
  };
  for (auto& [name, _] : start.flags) {
    std::string flag = name;
    // The planted fault or mutation is the failure: never minimised away (a probe
    // run would only confirm that removing it removes the failure).
    if (flag == "NSA_FAULT" || flag == "NSA_MUTATION") continue;
    shrinks.push_back({"flag " + flag, [flag](CellSpec& c) { return c.flags.erase(flag) > 0; }});
  }
  for (auto& [name, shrink] : shrinks) {
    CellSpec cand = m.cell;
    if (!shrink(cand)) continue;
    if (probe(cand)) m.cell = cand;
    if (m.probes >= kMaxProbes) break;
  }
  return m;
}

}  // namespace harness::run
