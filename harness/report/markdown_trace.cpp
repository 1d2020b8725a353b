#include "harness/report/markdown_trace.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/core/kernel_name.h"
#include "harness/report/text_format.h"

namespace harness {
namespace {
constexpr size_t kKernelRows = 10;  // sorted by GPU time: the tail rarely matters
constexpr size_t kPhaseRows = 8;
constexpr size_t kStepRows = 12;

std::string percent(double share) { return fmt::format("{:.1f} %", 100.0 * share); }

// ATen's elementwise kernels carry their whole functor type in the template
// arguments (hundreds of characters); the table keeps the first kLabelChars,
// enough to tell them apart, and results.json keeps the whole name.
constexpr size_t kLabelChars = 80;

std::string kernel_label(const KernelRow& k) {
  std::string label = readable_kernel_name(k.display_name.empty() ? (k.name.empty() ? "?" : k.name) : k.display_name);
  if (label.size() > kLabelChars) label = label.substr(0, kLabelChars - 1) + "…";
  return label;
}

std::string kernels_table(const TraceSummary& trace) {
  const auto& rows = trace.kernels;
  std::string s = "| Kernel | Launches | GPU ms | Mean µs | Share |\n|---|---|---|---|---|\n";
  double shown_share = 0;
  for (size_t i = 0; i < std::min(rows.size(), kKernelRows); ++i) {
    const KernelRow& k = rows[i];
    shown_share += k.share;
    s += fmt::format("| {} | {} | {:.2f} | {:.1f} | {} |\n", table_cell(code(kernel_label(k))), k.count,
                     k.total_ns / 1e6, k.mean_ns / 1e3, percent(k.share));
  }
  if (rows.size() > kKernelRows)
    s += fmt::format("\n({} more kernels, {} of GPU time)\n", rows.size() - kKernelRows, percent(1.0 - shown_share));
  return s;
}

std::string phases_table(const TraceSummary& trace) {
  const auto& rows = trace.phases;
  std::string s = "| Phase (where the kernel was launched) | Kernels | GPU ms | Share |\n|---|---|---|---|\n";
  for (size_t i = 0; i < std::min(rows.size(), kPhaseRows); ++i) {
    const PhaseRow& p = rows[i];
    s += fmt::format("| {} | {} | {:.2f} | {} |\n", table_cell(p.path.empty() ? "?" : p.path), p.kernels,
                     p.gpu_ns / 1e6, percent(p.share));
  }
  if (rows.size() > kPhaseRows) s += fmt::format("\n({} more phases)\n", rows.size() - kPhaseRows);
  return s;
}

std::string sync_counts(const StepSyncs& st) {
  return fmt::format("{} stream, {} device, {} event syncs; {} device→host copies ({} blocking)", st.stream_syncs,
                     st.device_syncs, st.event_syncs, st.dtoh_copies, st.dtoh_blocking);
}

bool same_counts(const StepSyncs& a, const StepSyncs& b) {
  return a.stream_syncs == b.stream_syncs && a.device_syncs == b.device_syncs && a.event_syncs == b.event_syncs &&
         a.dtoh_copies == b.dtoh_copies && a.dtoh_blocking == b.dtoh_blocking;
}

// Identical steps read as one sentence; otherwise one row per step (the first
// steps, then the most expensive), so a storm in one step stands out.
std::string syncs_block(const TraceSummary& trace) {
  const auto& steps = trace.steps;
  std::string s;
  if (steps.empty()) {
    s = "No step range was recorded, so host syncs cannot be counted per step.\n";
  } else if (std::all_of(steps.begin(), steps.end(),
                         [&](const StepSyncs& st) { return same_counts(st, steps.front()); })) {
    s = fmt::format("Each of the {} steps: {} — {} host syncs per step.\n", steps.size(), sync_counts(steps.front()),
                    steps.front().host_syncs());
  } else {
    std::vector<const StepSyncs*> rows;
    for (auto& st : steps) rows.push_back(&st);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const StepSyncs* a, const StepSyncs* b) { return a->host_syncs() > b->host_syncs(); });
    rows.resize(std::min(rows.size(), kStepRows));
    std::sort(rows.begin(), rows.end(), [](const StepSyncs* a, const StepSyncs* b) { return a->step < b->step; });
    s = "| Step | Host syncs | Stream | Device | Event | D→H copies (blocking) |\n|---|---|---|---|---|---|\n";
    for (auto* st : rows)
      s += fmt::format("| {} | {} | {} | {} | {} | {} ({}) |\n", st->step, st->host_syncs(), st->stream_syncs,
                       st->device_syncs, st->event_syncs, st->dtoh_copies, st->dtoh_blocking);
    if (steps.size() > rows.size())
      s += fmt::format("\n({} steps with the most host syncs of {})\n", rows.size(), steps.size());
  }
  if (trace.outside_steps.host_syncs() > 0)
    s += fmt::format("\nOutside the steps (set-up, probes between steps): {}.\n", sync_counts(trace.outside_steps));
  return s;
}

}  // namespace

std::string render_trace_section(const CellResult& cell) {
  if (!cell.trace) return "";
  const TraceSummary& trace = *cell.trace;
  std::string s = fmt::format("### GPU trace: {}\n\n", code(cell.id));
  s += fmt::format("{} kernels, {:.1f} ms of GPU time (CUPTI activity records", trace.kernel_count,
                   trace.kernel_ns / 1e6);
  auto trace_file = std::find_if(cell.artifacts.begin(), cell.artifacts.end(), [](const std::string& a) {
    const std::string_view name = std::string_view(a).substr(a.rfind('/') == std::string::npos ? 0 : a.rfind('/') + 1);
    return name == "trace.json" || name == "trace.json.gz";
  });
  if (trace_file != cell.artifacts.end()) s += "; timeline in " + code(*trace_file);
  s += ").";
  // Kernels on several streams run at the same time, so their sum is not the
  // time the GPU was busy. Said where it differs by 1 % or more: on one stream
  // Hopper's libraries start a kernel a few microseconds before the one before
  // it ends (programmatic dependent launch), which is not worth a sentence.
  if (trace.kernel_busy_ns > 0 && trace.kernel_busy_ns < 0.99 * static_cast<double>(trace.kernel_ns))
    s += fmt::format(" Kernels overlapped (on several streams, or a launch starting before the one before it ended): "
                     "the GPU ran at least one for {:.1f} ms of the {:.1f}.",
                     trace.kernel_busy_ns / 1e6, trace.kernel_ns / 1e6);
  if (trace.trace_every > 1 && !trace.traced_steps.empty()) {
    std::string steps;
    for (int st : trace.traced_steps) steps += (steps.empty() ? "" : ", ") + std::to_string(st);
    s += fmt::format(" Kernel and API records cover steps {} only (`cupti: {{every: {}}}`); the flight recorder saw "
                     "every launch.",
                     steps, trace.trace_every);
  }
  if (trace.file && trace.file->events_over_budget > 0)
    s += fmt::format(" The timeline file stopped at its {:.0f} MB budget ({} events left out; `cupti: {{trace_budget_mb: "
                     "N}}` raises it); the counts here cover every record.",
                     trace.file->budget_mb, trace.file->events_over_budget);
  if (trace.truncated)
    s += " **The trace is truncated**: records were dropped (counters in results.json), so counts are lower bounds.";
  s += "\n\n" + kernels_table(trace);
  s += "\nGPU time per phase:\n\n" + phases_table(trace);
  s += "\nHost syncs per step (from the CUDA API records):\n\n" + syncs_block(trace);
  return s;
}

}  // namespace harness
