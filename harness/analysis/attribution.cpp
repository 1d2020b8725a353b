#include "harness/analysis/attribution.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/analysis/axis_settings.h"
#include "harness/analysis/judgement.h"
#include "harness/analysis/verdict.h"

namespace harness {

namespace {

struct Judged {
  const CellResult* cell;
  Judgement j;
};

// Evidence for one (axis, failing value, passing value, reason).
struct Bucket {
  std::string axis, fv, pv, reason, outcome;
  int pairs = 0, passed = 0, same = 0;
  std::vector<std::string> other_reasons;  // what the flipped cell failed with instead
  std::set<int> steps;                     // steps of the deciding findings of the failing cells
  bool step_unknown = false;
  std::vector<std::string> cells;
  bool consistent() const { return pairs > 0 && passed == pairs; }
};

const std::string* value_of(const CellResult& c, const std::string& axis) {
  for (auto& [k, v] : c.axes)
    if (k == axis) return &v;
  return nullptr;
}

// The cell's coordinates on every axis but `axis`, as a comparable key.
std::string others_key(const CellResult& c, const std::string& axis) {
  std::map<std::string, std::string> others;
  for (auto& [k, v] : c.axes)
    if (k != axis) others[k] = v;
  std::string key;
  for (auto& [k, v] : others) key += k + "=" + v + "\x1f";
  return key;
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

std::string join(const std::vector<std::string>& v, const std::string& sep, const std::string& last_sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += (i + 1 == v.size()) ? last_sep : sep;
    s += v[i];
  }
  return s;
}

bool all_numeric(const std::vector<std::string>& vs) {
  for (auto& v : vs) {
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') return false;
  }
  return true;
}

std::string failure_text(const Bucket& b) {
  std::string s = fmt::format("{} ({})", failure_noun(b.outcome, b.reason), b.reason);
  if (!b.step_unknown && b.steps.size() == 1) s += fmt::format(" at step {}", *b.steps.begin());
  return s;
}

// Two cells' step times differ beyond the noise both carry (3 × the combined
// scaled MAD). A timing failure beside a pass whose steps took the same time
// within noise says nothing about the axis that differs between them.
bool differs_beyond_noise(const CellResult& a, const CellResult& b) {
  if (!a.step_noise || !b.step_noise) return true;  // unknown noise: the judgement stands as made
  const double noise = std::hypot(a.step_noise->mad_ms, b.step_noise->mad_ms);
  return std::abs(a.step_noise->median_ms - b.step_noise->median_ms) > 3.0 * noise;
}

std::vector<Bucket> collect(const std::vector<Judged>& cells, const std::string& axis) {
  std::map<std::string, std::vector<const Judged*>> groups;
  for (auto& c : cells)
    if (value_of(*c.cell, axis)) groups[others_key(*c.cell, axis)].push_back(&c);
  std::vector<Bucket> buckets;
  // Walk cells in matrix order so buckets (and statements) follow the scenario's order.
  for (auto& f : cells) {
    if (f.j.kind != Judgement::Kind::fail || !value_of(*f.cell, axis)) continue;
    const std::string& fv = *value_of(*f.cell, axis);
    for (const Judged* p : groups[others_key(*f.cell, axis)]) {
      const std::string& pv = *value_of(*p->cell, axis);
      if (pv == fv) continue;
      if (is_timing_reason(f.j.reason) && !differs_beyond_noise(*f.cell, *p->cell)) continue;
      auto it = std::find_if(buckets.begin(), buckets.end(), [&](const Bucket& b) {
        return b.fv == fv && b.pv == pv && b.reason == f.j.reason;
      });
      if (it == buckets.end()) {
        Bucket b;
        b.axis = axis;
        b.fv = fv;
        b.pv = pv;
        b.reason = f.j.reason;
        b.outcome = f.j.outcome;
        buckets.push_back(std::move(b));
        it = buckets.end() - 1;
      }
      it->pairs++;
      if (f.j.deciding && f.j.deciding->step) it->steps.insert(*f.j.deciding->step);
      else it->step_unknown = true;
      if (p->j.kind == Judgement::Kind::pass) {
        it->passed++;
        add_unique(it->cells, f.cell->id);
        add_unique(it->cells, p->cell->id);
      } else if (p->j.reason == f.j.reason) {
        it->same++;
      } else {
        add_unique(it->other_reasons, p->j.reason);
      }
    }
  }
  return buckets;
}

Attribution single(const Bucket& b) {
  Attribution a{b.axis, b.fv, b.pv, "", b.cells};
  const std::string pass_with = describe_setting(b.axis, b.pv);
  const std::string fail_with = describe_setting(b.axis, b.fv);
  if (is_wrong_answer(b.reason)) {
    // A wrong answer is not bypassed by another path: it is located in this one.
    a.statement = fmt::format("the {} is in {}: {} computes the same workload correctly in {} of {} pairs", 
                              failure_text(b), fail_with, pass_with, b.passed, b.pairs);
    return a;
  }
  if (b.consistent()) {
    a.statement = fmt::format("{} bypasses the {} seen with {} in {} of {} pairs", pass_with,
                              failure_text(b), fail_with, b.passed, b.pairs);
    return a;
  }
  std::vector<std::string> rest;
  if (b.same) rest.push_back(fmt::format("{} fail{} the same way", b.same, b.same == 1 ? "s" : ""));
  int other = b.pairs - b.passed - b.same;
  if (other)
    rest.push_back(fmt::format("{} fail{} with {}", other, other == 1 ? "s" : "", join(b.other_reasons, ", ", ", ")));
  a.statement = fmt::format("{} turns the {} seen with {} into a pass in only {} of {} pairs; of the rest, {}",
                            pass_with, failure_text(b), fail_with, b.passed, b.pairs, join(rest, ", ", " and "));
  return a;
}

// A clean partition of the axis's values for one reason, or nothing.
std::optional<Attribution> partition(const std::vector<Bucket>& bs, const std::vector<Judged>& cells) {
  std::vector<const Bucket*> good;
  for (auto& b : bs)
    if (b.passed > 0) {
      if (!b.consistent()) return std::nullopt;
      good.push_back(&b);
    }
  if (good.size() < 2) return std::nullopt;
  std::vector<std::string> F, P, ids;
  Bucket merged = *good.front();
  merged.steps.clear();
  for (auto* b : good) {
    add_unique(F, b->fv);
    add_unique(P, b->pv);
    for (auto& id : b->cells) add_unique(ids, id);
    merged.steps.insert(b->steps.begin(), b->steps.end());
    merged.step_unknown |= b->step_unknown;
  }
  for (auto& f : F)
    if (std::find(P.begin(), P.end(), f) != P.end()) return std::nullopt;
  // "only with F" must hold across the whole matrix, not just the pairs.
  for (auto& c : cells) {
    const std::string* v = value_of(*c.cell, merged.axis);
    if (v && std::find(P.begin(), P.end(), *v) != P.end() && c.j.kind == Judgement::Kind::fail &&
        c.j.reason == merged.reason)
      return std::nullopt;
  }
  std::vector<std::string> all = F;
  all.insert(all.end(), P.begin(), P.end());
  std::string text = failure_text(merged);
  text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  Attribution a{merged.axis, join(F, ", ", ", "), join(P, ", ", ", "), "", ids};
  a.statement = fmt::format("{} only {} {}={}; {} pass{}", text, all_numeric(all) ? "at" : "with", merged.axis,
                            a.failing_value, join(P, ", ", " and "), P.size() == 1 ? "es" : "");
  return a;
}

}  // namespace

std::vector<Attribution> attribute(const std::vector<CellResult>& cells) {
  std::vector<Judged> judged;
  std::vector<std::string> axes;
  for (auto& c : cells) {
    Judgement j = judge(c);
    if (j.kind == Judgement::Kind::skip) continue;
    judged.push_back({&c, j});
    for (auto& kv : c.axes) add_unique(axes, kv.first);
  }
  std::vector<Attribution> out;
  for (auto& axis : axes) {
    // Which faults are planted is no evidence the analysis may use (DESIGN §4):
    // the same analysis must explain a bug nobody planted. Cells still pair
    // across the other axes within one fault value.
    if (axis == "fault") continue;
    std::vector<Bucket> buckets = collect(judged, axis);
    std::vector<std::string> reasons;
    for (auto& b : buckets) add_unique(reasons, b.reason);
    for (auto& reason : reasons) {
      std::vector<Bucket> mine;
      for (auto& b : buckets)
        if (b.reason == reason) mine.push_back(b);
      if (auto merged = partition(mine, judged)) {
        out.push_back(*merged);
        continue;
      }
      for (auto& b : mine)
        if (b.passed > 0) out.push_back(single(b));
    }
  }
  return out;
}

}  // namespace harness
