#include "harness/trace/chrome_trace_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <zlib.h>

namespace harness::trace {
namespace {

constexpr const char* kFlowName = "launch";

bool starts_flow(const TraceEvent& api) {
  const std::string n = strip_api_suffix(api.name);
  return is_launch_api(n) || n.rfind("cudaMemcpy", 0) == 0 || n.rfind("cudaMemset", 0) == 0 ||
         n.rfind("cuMemcpy", 0) == 0 || n.rfind("cuMemset", 0) == 0;
}

nlohmann::json dim(const Dim3& d) { return nlohmann::json::array({d.x, d.y, d.z}); }

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(const std::string& path, ChromeTraceOptions opt)
    : path_(path), opt_(std::move(opt)) {
  if (opt_.host_pid == 0) opt_.host_pid = static_cast<std::uint32_t>(::getpid());
  if (opt_.host_pid < kMaxDevicePid) opt_.host_pid += kHostPidShift;
  origin_set_ = opt_.origin_ns != 0;
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    throw std::runtime_error("opening trace file " + path + ": " + std::strerror(errno));
  }
  if (gz) {
    // zlib writes through its own descriptor; file_ stays open to read the
    // size on disk. Level 6: JSON traces shrink ~10-20x at a modest CPU cost
    // on the writer's own thread.
    gz_ = gzdopen(::dup(::fileno(file_)), "wb6");
    if (gz_ == nullptr) throw std::runtime_error("opening trace file " + path + ": gzip stream failed");
  }
  pending_ = "[";
  flush_pending();
}

std::uint64_t ChromeTraceWriter::file_bytes() const {
  if (gz_ != nullptr) return static_cast<std::uint64_t>(gzoffset(static_cast<gzFile>(gz_)));
  if (file_ == nullptr) return closed_bytes_;
  return static_cast<std::uint64_t>(std::ftell(file_));
}

void ChromeTraceWriter::flush_pending() {
  if (gz_ != nullptr) {
    gzwrite(static_cast<gzFile>(gz_), pending_.data(), static_cast<unsigned>(pending_.size()));
    gzflush(static_cast<gzFile>(gz_), Z_SYNC_FLUSH);
  } else {
    std::fwrite(pending_.data(), 1, pending_.size(), file_);
    std::fflush(file_);
  }
  pending_.clear();
}

ChromeTraceWriter::~ChromeTraceWriter() { close(); }

double ChromeTraceWriter::ts_us(std::uint64_t ns) const {
  const double d = ns >= opt_.origin_ns ? static_cast<double>(ns - opt_.origin_ns)
                                        : -static_cast<double>(opt_.origin_ns - ns);
  return d / 1000.0;
}

void ChromeTraceWriter::append(const nlohmann::json& obj) {
  pending_ += objects_ == 0 ? "\n" : ",\n";
  // replace: a kernel name with invalid UTF-8 must not abort the whole trace.
  pending_ += obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  ++objects_;
}

void ChromeTraceWriter::name_tracks(std::uint32_t pid, std::uint32_t tid, bool gpu) {
  if (named_pids_.insert(pid).second) {
    const std::string name = gpu ? "GPU " + std::to_string(pid) : opt_.host_process_name;
    append({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0},
            {"args", {{"name", name}}}});
    // GPUs sort below the host process.
    append({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0},
            {"args", {{"sort_index", gpu ? 100 + static_cast<int>(pid) : 0}}}});
  }
  if (named_threads_.insert({pid, tid}).second) {
    const std::uint32_t lane = tid / kOverlapLaneTidStride, stream = tid % kOverlapLaneTidStride;
    const std::string name = !gpu    ? "thread " + std::to_string(tid)
                             : lane ? "stream " + std::to_string(stream) + " (overlap " + std::to_string(lane) + ")"
                                    : "stream " + std::to_string(stream);
    append({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid},
            {"args", {{"name", name}}}});
  }
}

void ChromeTraceWriter::write(const std::vector<TraceEvent>& events) {
  if (file_ == nullptr) return;
  if (!origin_set_ && !events.empty()) {
    opt_.origin_ns = std::min_element(events.begin(), events.end(), [](const auto& a, const auto& b) {
                       return a.start_ns < b.start_ns;
                     })->start_ns;
    origin_set_ = true;
  }
  if (over_budget()) {
    over_budget_ += events.size();
    return;
  }
  const std::uint32_t host = opt_.host_pid;
  for (const TraceEvent& e : events) {
    const bool gpu = e.kind == EventKind::kernel || e.kind == EventKind::memcpy ||
                     e.kind == EventKind::memset ||
                     (e.kind == EventKind::range && e.range_source == RangeSource::gpu_projection);
    const std::uint32_t pid = gpu ? gpu_pid(e.device) : host;
    const std::uint32_t tid = gpu ? e.stream + e.lane * kOverlapLaneTidStride : e.thread;
    name_tracks(pid, tid, gpu);
    nlohmann::json o = {{"pid", pid}, {"tid", tid}, {"ts", ts_us(e.start_ns)}};
    switch (e.kind) {
      case EventKind::kernel:
        o.update({{"ph", "X"}, {"cat", "kernel"}, {"name", demangle(e.name)},
                  {"dur", e.duration_ns() / 1000.0},
                  {"args", {{"correlation", e.correlation_id}, {"grid", dim(e.grid)},
                            {"block", dim(e.block)}, {"device", e.device}, {"stream", e.stream},
                            {"mangled", e.name}}}});
        break;
      case EventKind::memcpy:
      case EventKind::memset:
        o.update({{"ph", "X"}, {"cat", std::string(to_string(e.kind))}, {"name", e.name},
                  {"dur", e.duration_ns() / 1000.0},
                  {"args", {{"correlation", e.correlation_id}, {"bytes", e.bytes},
                            {"kind", std::string(to_string(e.copy_kind))}, {"async", e.async}}}});
        break;
      case EventKind::api:
        o.update({{"ph", "X"},
                  {"cat", e.api_domain == ApiDomain::runtime ? "cuda_runtime" : "cuda_driver"},
                  {"name", strip_api_suffix(e.name)}, {"dur", e.duration_ns() / 1000.0},
                  {"args", {{"correlation", e.correlation_id}, {"cbid", e.api_cbid}}}});
        break;
      case EventKind::marker: {
        const char* ph = e.marker_phase == MarkerPhase::start ? "B"
                         : e.marker_phase == MarkerPhase::end ? "E" : "i";
        o.update({{"ph", ph}, {"cat", "nvtx"}, {"name", e.name},
                  {"args", {{"domain", e.domain}, {"id", e.marker_id}}}});
        if (e.marker_phase == MarkerPhase::instant) o["s"] = "t";
        break;
      }
      case EventKind::range:
        o.update({{"ph", "X"},
                  {"cat", e.range_source == RangeSource::cupti_marker     ? "nvtx"
                          : e.range_source == RangeSource::gpu_projection ? "nvtx_projected"
                                                                          : "range"},
                  {"name", e.name}, {"dur", e.duration_ns() / 1000.0},
                  {"args", {{"domain", e.domain}, {"source", std::string(to_string(e.range_source))}}}});
        break;
    }
    append(o);
    // Flow arrows: start at the host call, end ("bp":"e": bind to the enclosing
    // slice) at the GPU activity that shares its correlation id.
    if (e.correlation_id != 0 && e.kind == EventKind::api && starts_flow(e)) {
      append({{"ph", "s"}, {"cat", kFlowName}, {"name", kFlowName}, {"id", e.correlation_id},
              {"pid", pid}, {"tid", tid}, {"ts", ts_us(e.start_ns)}});
    } else if (e.correlation_id != 0 && gpu) {
      append({{"ph", "f"}, {"bp", "e"}, {"cat", kFlowName}, {"name", kFlowName},
              {"id", e.correlation_id}, {"pid", pid}, {"tid", tid}, {"ts", ts_us(e.start_ns)}});
    }
  }
  flush_pending();
}

void ChromeTraceWriter::write_truncation_mark(const TraceCounters& c, std::uint64_t at_ns) {
  if (file_ == nullptr || (!c.truncated() && over_budget_ == 0)) return;
  nlohmann::json args = nlohmann::json::object();
  for (const auto& f : TraceCounters::kFields) args[f.name] = c.*f.member;
  args["events_over_file_budget"] = over_budget_;
  args["file_budget_bytes"] = opt_.max_file_bytes;
  name_tracks(opt_.host_pid, 0, false);
  append({{"ph", "i"}, {"s", "g"}, {"cat", "harness"}, {"name", "trace truncated"},
          {"pid", opt_.host_pid}, {"tid", 0}, {"ts", ts_us(at_ns)}, {"args", args}});
  flush_pending();
}

void ChromeTraceWriter::write_info(const nlohmann::json& args) {
  if (file_ == nullptr) return;
  append({{"ph", "M"}, {"name", "nsa_trace_info"}, {"pid", opt_.host_pid}, {"tid", 0},
          {"args", args}});
  flush_pending();
}

void ChromeTraceWriter::close() {
  if (file_ == nullptr) return;
  pending_ = "\n]\n";
  flush_pending();
  if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
  gz_ = nullptr;
  std::fclose(file_);
  file_ = nullptr;
  std::error_code ec;
  closed_bytes_ = std::filesystem::file_size(path_, ec);
}

}  // namespace harness::trace
