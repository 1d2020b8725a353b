#include "harness/supervisor/crash_escalation.h"

#include <filesystem>
#include <fstream>
#include <ostream>

#include <fmt/format.h>

#include "harness/protocol/events.h"
#include "harness/supervisor/error_text.h"
#include "harness/supervisor/runner.h"

namespace harness::supervisor {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kSanitizerLogBytes = 256u << 10;  // the first errors decide; the file keeps the rest
// Blocking launches serialise host and GPU: a step takes longer, never 10× longer.
constexpr double kBlockingSlowdown = 3.0;
// CUPTI and the sanitizer both instrument kernels; memcheck runs without the tracer.
constexpr const char* kTracerProbe = "cupti";

bool is_cuda_reason(const std::optional<std::string>& reason) {
  return reason && (*reason == reason::cuda_illegal_address || *reason == reason::cuda_error);
}

void stretch(WatchdogSpec& w, double factor) {
  w.first_step_timeout_s *= factor;
  w.stall_timeout_s *= factor;
  w.step_timeout_s *= factor;
}

Finding* deciding(CellResult& r) {
  for (auto& f : r.findings)
    if (r.reason && f.code == *r.reason) return &f;
  return nullptr;
}

// The kernel the attempt's own crash finding names through the flight recorder.
std::string attempt_kernel(const CellResult& r) {
  for (const auto& f : r.findings)
    if (r.reason && f.code == *r.reason && f.evidence.contains("last_kernel") &&
        f.evidence.at("last_kernel").is_string())
      return f.evidence.at("last_kernel").get<std::string>();
  return "";
}

// The title of a CUDA crash finding without what an earlier pass appended.
std::string base_title(const std::string& title) {
  for (const char* cut : {" (last kernel launched:", " after kernel "}) {
    size_t at = title.find(cut);
    if (at != std::string::npos) return title.substr(0, at);
  }
  return title;
}
}  // namespace

// A parity failure of a CUDA kernel path: the kernel computed a wrong answer
// without crashing. An out-of-bounds read that happens to land in mapped
// memory looks exactly like that, so it gets the memcheck re-run too.
bool cuda_parity_failure(const CellResult& r) {
  if (!r.reason || *r.reason != reason::parity) return false;
  for (const auto& f : r.findings)
    if (f.code == reason::parity && f.severity == Severity::blocking) {
      const std::string path = f.evidence.contains("path") && f.evidence.at("path").is_string()
                                   ? f.evidence.at("path").get<std::string>() : "";
      if (path.rfind("cuda", 0) == 0 || f.title.rfind("cuda", 0) == 0) return true;
    }
  return false;
}

bool wants_escalation(const CellResult& r) {
  return (r.outcome == Outcome::crash && is_cuda_reason(r.reason)) || cuda_parity_failure(r);
}

std::vector<EscalationAttempt> plan_escalation(const CellSpec& cell, const EscalationOptions& options,
                                               bool memcheck_only) {
  std::vector<EscalationAttempt> out;
  EscalationAttempt blocking;
  blocking.mode = "launch_blocking";
  blocking.label = "CUDA_LAUNCH_BLOCKING=1";
  blocking.subdir = "escalation/launch_blocking";
  blocking.cell = cell;
  blocking.cell.expect.reset();
  stretch(blocking.cell.watchdog, kBlockingSlowdown);
  blocking.env["CUDA_LAUNCH_BLOCKING"] = "1";
  // A wrong answer does not surface at a launch: blocking launches add nothing.
  if (!memcheck_only) out.push_back(blocking);
  if (!options.sanitizer.empty()) {
    EscalationAttempt mem = blocking;
    mem.mode = "memcheck";
    mem.label = "compute-sanitizer memcheck";
    mem.subdir = "escalation/memcheck";
    mem.cell = cell;
    mem.cell.expect.reset();
    stretch(mem.cell.watchdog, options.sanitizer_slowdown);
    mem.cell.probes[kTracerProbe].enabled = false;
    mem.env = {{"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"}};
    // Without the tracer nothing should load CUPTI through NVTX's injection hook either.
    mem.drop_env = {"NVTX_INJECTION64_PATH"};
    mem.sanitizer_log = "sanitizer.log";
    // --log-file is filled in by the runner once the attempt dir is known.
    mem.argv_prefix = {options.sanitizer, "--tool", "memcheck", "--print-limit", "20"};
    out.push_back(mem);
  }
  return out;
}

void attach_escalation(CellResult& r, const std::vector<AttemptResult>& attempts) {
  std::vector<EscalationRecord> rows;
  std::string confirmed, confirmed_by, sanitizer_detail;
  bool blocking_reproduced = true;
  for (const auto& a : attempts) {
    const CellResult& ar = a.result;
    EscalationRecord row{a.attempt.label, std::string(to_string(ar.outcome)), ar.reason.value_or(""), "", "",
                          a.dir_relative};
    if (a.attempt.mode == "memcheck") {
      SanitizerReport s = parse_sanitizer_log(a.sanitizer_text);
      row.kernel = s.kernel;
      std::string d = s.first_error.empty() ? "no memory error reported" : s.first_error;
      if (!s.access_in.empty() && s.access_in != s.kernel) d += " in " + s.access_in;
      if (!s.source.empty()) d += " at " + s.source;
      if (!s.address.empty()) d += "; " + s.address;
      d += s.errors ? fmt::format("; {} error(s) in all", *s.errors) : "; no error summary (tool stopped early)";
      row.detail = d;
      if (s.errors.value_or(0) > 0 && !s.kernel.empty()) {
        confirmed = s.kernel;
        confirmed_by = a.attempt.label;
        sanitizer_detail = d;
      }
    } else {
      std::string k = wants_escalation(ar) ? attempt_kernel(ar) : "";
      row.kernel = k;
      row.detail = ar.findings.empty() ? "" : ar.findings.front().title;
      blocking_reproduced = wants_escalation(ar);
      if (!k.empty() && confirmed.empty()) {
        confirmed = k;
        confirmed_by = a.attempt.label;
      }
    }
    rows.push_back(row);
    for (const auto& art : ar.artifacts) r.artifacts.push_back(art);
    if (!a.attempt.sanitizer_log.empty())
      r.artifacts.push_back((fs::path(a.dir_relative) / a.attempt.sanitizer_log).string());
  }
  r.escalation = rows;
  Finding* f = deciding(r);
  if (!f) return;
  f->evidence["escalation"] = rows;
  if (!confirmed.empty()) {
    const std::string async_kernel =
        f->evidence.contains("last_kernel") && f->evidence.at("last_kernel").is_string()
            ? f->evidence.at("last_kernel").get<std::string>() : "";
    f->title = base_title(f->title) + " in kernel " + confirmed + " (confirmed with " + confirmed_by + ")";
    f->location = "kernel " + confirmed;
    f->evidence["faulting_kernel"] = confirmed;
    if (!async_kernel.empty() && async_kernel != confirmed) {
      f->evidence["last_kernel_launched"] = async_kernel;
      f->detail += " The asynchronous run's last launch was " + async_kernel +
                   "; the re-run places the fault earlier, in " + confirmed + ".";
    }
    if (!sanitizer_detail.empty()) f->detail += " compute-sanitizer: " + sanitizer_detail + ".";
  } else if (r.reason && *r.reason == reason::parity) {
    f->detail += attempts.empty() ? " compute-sanitizer is not installed here: no memcheck re-run."
                                  : " compute-sanitizer memcheck found no invalid access: the kernel reads valid "
                                    "memory, but the wrong part of it (an index or mask error, not a bounds error).";
  } else {
    f->detail += " The escalation re-runs did not name a kernel (see the table).";
  }
  if (!blocking_reproduced)
    f->detail += " With CUDA_LAUNCH_BLOCKING=1 the crash did not recur: the fault depends on timing "
                 "(a race, or a read of memory that is only sometimes invalid).";
}

std::optional<std::string> escalate_crashes(std::vector<CellResult>& results, const std::vector<CellSpec>& cells,
                                            const EscalationOptions& options, const std::string& run_dir,
                                            const std::function<std::string(const std::string& id)>& cell_dir,
                                            const AttemptRunner& run, std::ostream* progress) {
  std::optional<std::string> write_error;
  if (!options.enabled) return write_error;
  for (auto& r : results) {
    if (!wants_escalation(r)) continue;
    const CellSpec* spec = nullptr;
    for (const auto& c : cells)
      if (c.id == r.id) spec = &c;
    if (!spec) continue;
    const std::string dir = cell_dir(r.id);
    std::vector<AttemptResult> done;
    for (auto& attempt : plan_escalation(*spec, options, cuda_parity_failure(r))) {
      const std::string adir = (fs::path(dir) / attempt.subdir).string();
      if (progress) *progress << fmt::format("nsa-harness: {} failed ({}): re-running with {}\n", r.id,
                                             r.reason.value_or(""), attempt.label);
      AttemptResult a;
      std::error_code ec;
      fs::create_directories(adir, ec);
      if (!attempt.sanitizer_log.empty()) {
        const std::string log = (fs::path(adir) / attempt.sanitizer_log).string();
        fs::remove(log, ec);
        attempt.argv_prefix.insert(attempt.argv_prefix.begin() + 1, {"--log-file", log});
      }
      a.result = run(attempt, adir);
      a.dir_relative = fs::relative(adir, run_dir, ec).string();
      if (!attempt.sanitizer_log.empty())
        a.sanitizer_text = read_tail((fs::path(adir) / attempt.sanitizer_log).string(), kSanitizerLogBytes);
      a.attempt = std::move(attempt);
      done.push_back(std::move(a));
    }
    attach_escalation(r, done);
    try {
      write_file_atomic((fs::path(dir) / protocol::kResultFile).string(), json(r).dump(2) + "\n");
    } catch (const std::exception& e) {
      if (!write_error) write_error = e.what();
    }
  }
  return write_error;
}

}  // namespace harness::supervisor
