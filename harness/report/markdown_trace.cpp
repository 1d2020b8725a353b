#include "harness/report/markdown_trace.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/core/kernel_name.h"
#include "harness/report/text_format.h"

namespace harness {
using nlohmann::json;

namespace {
constexpr size_t kKernelRows = 10;  // sorted by GPU time: the tail rarely matters
constexpr size_t kPhaseRows = 8;
constexpr size_t kStepRows = 12;

double num(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string percent(double share) { return fmt::format("{:.1f} %", 100.0 * share); }

// ATen's elementwise kernels carry their whole functor type in the template
// arguments (hundreds of characters); the table keeps the first kLabelChars,
// enough to tell them apart, and results.json keeps the whole name.
constexpr size_t kLabelChars = 80;

std::string kernel_label(const json& k) {
  const std::string shown = k.value("display_name", "");
  std::string label = readable_kernel_name(shown.empty() ? k.value("name", "?") : shown);
  if (label.size() > kLabelChars) label = label.substr(0, kLabelChars - 1) + "…";
  return label;
}

std::string kernels_table(const json& trace) {
  const json& rows = trace.at("kernels");
  std::string s = "| Kernel | Launches | GPU ms | Mean µs | Share |\n|---|---|---|---|---|\n";
  double shown_share = 0;
  for (size_t i = 0; i < std::min(rows.size(), kKernelRows); ++i) {
    const json& k = rows[i];
    shown_share += num(k, "share");
    s += fmt::format("| {} | {:.0f} | {:.2f} | {:.1f} | {} |\n", table_cell(code(kernel_label(k))), num(k, "count"),
                     num(k, "total_ns") / 1e6, num(k, "mean_ns") / 1e3, percent(num(k, "share")));
  }
  if (rows.size() > kKernelRows)
    s += fmt::format("\n({} more kernels, {} of GPU time)\n", rows.size() - kKernelRows, percent(1.0 - shown_share));
  return s;
}

std::string phases_table(const json& trace) {
  const json& rows = trace.at("phases");
  std::string s = "| Phase (where the kernel was launched) | Kernels | GPU ms | Share |\n|---|---|---|---|\n";
  for (size_t i = 0; i < std::min(rows.size(), kPhaseRows); ++i) {
    const json& p = rows[i];
    s += fmt::format("| {} | {:.0f} | {:.2f} | {} |\n", table_cell(p.value("path", "?")), num(p, "kernels"),
                     num(p, "gpu_ns") / 1e6, percent(num(p, "share")));
  }
  if (rows.size() > kPhaseRows) s += fmt::format("\n({} more phases)\n", rows.size() - kPhaseRows);
  return s;
}

std::string sync_counts(const json& st) {
  return fmt::format("{:.0f} stream, {:.0f} device, {:.0f} event syncs; {:.0f} device→host copies ({:.0f} blocking)",
                     num(st, "stream_syncs"), num(st, "device_syncs"), num(st, "event_syncs"), num(st, "dtoh_copies"),
                     num(st, "dtoh_blocking"));
}

bool same_counts(const json& a, const json& b) {
  for (const char* k : {"stream_syncs", "device_syncs", "event_syncs", "dtoh_copies", "dtoh_blocking"})
    if (num(a, k) != num(b, k)) return false;
  return true;
}

// Identical steps read as one sentence; otherwise one row per step (the first
// steps, then the most expensive), so a storm in one step stands out.
std::string syncs_block(const json& trace) {
  const json& steps = trace.at("steps");
  std::string s;
  if (steps.empty()) {
    s = "No step range was recorded, so host syncs cannot be counted per step.\n";
  } else if (std::all_of(steps.begin(), steps.end(), [&](const json& st) { return same_counts(st, steps.front()); })) {
    s = fmt::format("Each of the {} steps: {} — {:.0f} host syncs per step.\n", steps.size(), sync_counts(steps.front()),
                    num(steps.front(), "host_syncs"));
  } else {
    std::vector<const json*> rows;
    for (auto& st : steps) rows.push_back(&st);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const json* a, const json* b) { return num(*a, "host_syncs") > num(*b, "host_syncs"); });
    rows.resize(std::min(rows.size(), kStepRows));
    std::sort(rows.begin(), rows.end(), [](const json* a, const json* b) { return num(*a, "step") < num(*b, "step"); });
    s = "| Step | Host syncs | Stream | Device | Event | D→H copies (blocking) |\n|---|---|---|---|---|---|\n";
    for (auto* st : rows)
      s += fmt::format("| {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} ({:.0f}) |\n", num(*st, "step"),
                       num(*st, "host_syncs"), num(*st, "stream_syncs"), num(*st, "device_syncs"),
                       num(*st, "event_syncs"), num(*st, "dtoh_copies"), num(*st, "dtoh_blocking"));
    if (steps.size() > rows.size())
      s += fmt::format("\n({} steps with the most host syncs of {})\n", rows.size(), steps.size());
  }
  auto outside = trace.find("outside_steps");
  if (outside != trace.end() && num(*outside, "host_syncs") > 0)
    s += fmt::format("\nOutside the steps (set-up, probes between steps): {}.\n", sync_counts(*outside));
  return s;
}

}  // namespace

std::string render_trace_section(const CellResult& cell) {
  auto it = cell.extra.find("trace");
  if (it == cell.extra.end() || !it->is_object() || !it->contains("kernels") || !it->contains("phases") ||
      !it->contains("steps"))
    return "";
  const json& trace = *it;
  std::string s = fmt::format("### GPU trace: {}\n\n", code(cell.id));
  s += fmt::format("{:.0f} kernels, {:.1f} ms of GPU time (CUPTI activity records", num(trace, "kernel_count"),
                   num(trace, "kernel_ns") / 1e6);
  auto trace_file = std::find_if(cell.artifacts.begin(), cell.artifacts.end(), [](const std::string& a) {
    const std::string_view name = std::string_view(a).substr(a.rfind('/') == std::string::npos ? 0 : a.rfind('/') + 1);
    return name == "trace.json" || name == "trace.json.gz";
  });
  if (trace_file != cell.artifacts.end()) s += "; timeline in " + code(*trace_file);
  s += ").";
  if (num(trace, "trace_every") > 1 && trace.contains("traced_steps") && trace.at("traced_steps").is_array()) {
    std::string steps;
    for (auto& st : trace.at("traced_steps")) steps += (steps.empty() ? "" : ", ") + st.dump();
    s += fmt::format(" Kernel and API records cover steps {} only (`cupti: {{every: {:.0f}}}`); the flight recorder saw "
                     "every launch.",
                     steps, num(trace, "trace_every"));
  }
  if (trace.contains("file") && trace.at("file").value("events_over_budget", 0) > 0)
    s += fmt::format(" The timeline file stopped at its {:.0f} MB budget ({:.0f} events left out; `cupti: {{trace_budget_mb: "
                     "N}}` raises it); the counts here cover every record.",
                     trace.at("file").value("budget_mb", 0.0), trace.at("file").value("events_over_budget", 0.0));
  if (trace.value("truncated", false))
    s += " **The trace is truncated**: records were dropped (counters in results.json), so counts are lower bounds.";
  s += "\n\n" + kernels_table(trace);
  s += "\nGPU time per phase:\n\n" + phases_table(trace);
  s += "\nHost syncs per step (from the CUDA API records):\n\n" + syncs_block(trace);
  return s;
}

}  // namespace harness
