#include "harness/run/gpu_inventory.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "harness/core/text.h"
#include "harness/run/tool_command.h"

namespace harness::run {
namespace {

std::optional<int> parse_index(const std::string& s) {
  if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoi(s);
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

}  // namespace

std::vector<GpuDevice> parse_fake_gpus(std::string_view text) {
  std::vector<GpuDevice> out;
  if (trim(text).empty()) return out;
  for (const std::string& raw : split(text, ',')) {
    const std::string entry = trim(raw);
    const size_t a = entry.find(':');
    const size_t b = a == std::string::npos ? a : entry.find(':', a + 1);
    auto index = a == std::string::npos ? std::nullopt : parse_index(trim(entry.substr(0, a)));
    if (b == std::string::npos || !index || trim(entry.substr(a + 1, b - a - 1)).empty())
      throw GpuListError(fmt::format("{}: entry '{}' is not INDEX:UUID:NAME (e.g. \"0:GPU-aaa:Fake A,1:GPU-bbb:Fake B\")",
                                     kFakeGpusEnv, entry));
    out.push_back(GpuDevice{*index, trim(entry.substr(a + 1, b - a - 1)), trim(entry.substr(b + 1))});
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (out[i].index == out[k].index || out[i].uuid == out[k].uuid)
        throw GpuListError(fmt::format("{}: GPU {} ({}) is listed twice", kFakeGpusEnv, out[i].index, out[i].uuid));
  return out;
}

std::vector<GpuDevice> parse_nvidia_smi(std::string_view text) {
  std::vector<GpuDevice> out;
  for (const std::string& line : split(text, '\n')) {
    const size_t a = line.find(',');
    const size_t b = a == std::string::npos ? a : line.find(',', a + 1);
    if (b == std::string::npos) continue;
    auto index = parse_index(trim(line.substr(0, a)));
    std::string uuid = trim(line.substr(a + 1, b - a - 1));
    if (!index || !starts_with(uuid, "GPU-")) continue;
    out.push_back(GpuDevice{*index, uuid, trim(line.substr(b + 1))});
  }
  return out;
}

std::vector<VisibleGpu> narrow_to_visible(const std::vector<GpuDevice>& all,
                                          const std::optional<std::string>& cuda_visible_devices,
                                          std::vector<std::string>& notes) {
  std::vector<VisibleGpu> out;
  if (!cuda_visible_devices) {
    for (const auto& g : all) out.push_back(VisibleGpu{g, g.uuid.empty() ? std::to_string(g.index) : g.uuid});
    return out;
  }
  if (trim(*cuda_visible_devices).empty()) return out;  // CUDA_VISIBLE_DEVICES="": no GPU at all
  for (const std::string& raw : split(*cuda_visible_devices, ',')) {
    const std::string token = trim(raw);
    std::optional<GpuDevice> found;
    if (auto index = parse_index(token)) {
      for (const auto& g : all)
        if (g.index == *index) found = g;
    } else if (starts_with(token, "MIG-")) {
      found = GpuDevice{-1, token, "MIG instance"};  // the driver's GPU list does not name instances
    } else if (starts_with(token, "GPU-")) {
      int matches = 0;
      for (const auto& g : all)
        if (starts_with(g.uuid, token)) found = g, ++matches;
      if (matches > 1) found.reset();  // an ambiguous prefix names no device, as in CUDA
    }
    if (!found) {
      notes.push_back(fmt::format("CUDA_VISIBLE_DEVICES entry '{}' names no listed GPU; like CUDA, the list ends there",
                                  token));
      break;
    }
    const bool twice = std::any_of(out.begin(), out.end(), [&](const VisibleGpu& v) { return v.device.uuid == found->uuid; });
    if (twice) {
      notes.push_back(fmt::format("CUDA_VISIBLE_DEVICES names GPU '{}' twice; it is handed out once", token));
      continue;
    }
    out.push_back(VisibleGpu{*found, token});
  }
  return out;
}

GpuDiscovery discover_gpus(double deadline_s) {
  GpuDiscovery d;
  std::vector<GpuDevice> all;
  if (auto fake = env(kFakeGpusEnv)) {
    all = parse_fake_gpus(*fake);
    d.source = kFakeGpusEnv;
  } else {
    ToolOutput smi = run_tool({"nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"}, deadline_s);
    if (smi.ok()) {
      all = parse_nvidia_smi(smi.output);
      d.source = "nvidia-smi";
    } else {
      d.source = "none";
      // Not finding nvidia-smi is a machine without NVIDIA GPUs: nothing to say.
      if (smi.started) d.notes.push_back("nvidia-smi: " + smi.failure_text(deadline_s) + "; GPUs are not assigned to cells");
    }
  }
  d.gpus = narrow_to_visible(all, env("CUDA_VISIBLE_DEVICES"), d.notes);
  return d;
}

std::string describe_gpus(const std::vector<VisibleGpu>& gpus) {
  std::string s;
  for (const auto& g : gpus)
    s += fmt::format("{}{} {} ({})", s.empty() ? "" : ", ", g.device.index, g.device.uuid, g.device.name);
  return s.empty() ? "none" : s;
}

}  // namespace harness::run
