#include "harness/trace/routing_check.h"

#include <fnmatch.h>

namespace harness::trace {

bool kernel_matches(const std::string& pattern, const KernelRow& row) {
  const std::string display = row.display_name.empty() ? demangle(row.name) : row.display_name;
  return fnmatch(pattern.c_str(), row.name.c_str(), 0) == 0 ||
         fnmatch(pattern.c_str(), display.c_str(), 0) == 0;
}

std::vector<RoutingMismatch> check_routing(const std::vector<RoutingExpectation>& expected,
                                           const std::vector<KernelRow>& kernels) {
  std::vector<RoutingMismatch> out;
  for (const RoutingExpectation& exp : expected) {
    for (const std::string& pattern : exp.must_launch) {
      bool seen = false;
      for (const KernelRow& k : kernels) seen = seen || (k.count > 0 && kernel_matches(pattern, k));
      if (seen) continue;
      RoutingMismatch m;
      m.kind = RoutingMismatchKind::missing;
      m.flag = exp.flag;
      m.pattern = pattern;
      m.message = exp.flag + " should launch a kernel matching '" + pattern + "', none ran";
      out.push_back(std::move(m));
    }
    for (const std::string& pattern : exp.must_not_launch) {
      RoutingMismatch m;
      m.kind = RoutingMismatchKind::unexpected;
      m.flag = exp.flag;
      m.pattern = pattern;
      for (const KernelRow& k : kernels) {
        if (k.count == 0 || !kernel_matches(pattern, k)) continue;
        m.count += k.count;
        m.kernels.push_back(k.display_name.empty() ? demangle(k.name) : k.display_name);
      }
      if (m.count == 0) continue;
      m.message = exp.flag + " should not launch '" + pattern + "', but " +
                  std::to_string(m.count) + " launch" + (m.count == 1 ? "" : "es") + " of " +
                  std::to_string(m.kernels.size()) + " kernel" +
                  (m.kernels.size() == 1 ? "" : "s") + " ran (" + m.kernels.front() +
                  (m.kernels.size() > 1 ? ", …" : "") + ")";
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::string_view to_string(RoutingMismatchKind k) {
  return k == RoutingMismatchKind::missing ? "missing" : "unexpected";
}

void to_json(nlohmann::json& j, const RoutingMismatch& m) {
  j = {{"kind", std::string(to_string(m.kind))}, {"flag", m.flag}, {"pattern", m.pattern},
       {"count", m.count}, {"kernels", m.kernels}, {"message", m.message}};
}

void from_json(const nlohmann::json& j, RoutingExpectation& e) {
  e.flag = j.at("flag").get<std::string>();
  e.must_launch = j.value("must_launch", std::vector<std::string>{});
  e.must_not_launch = j.value("must_not_launch", std::vector<std::string>{});
}

}  // namespace harness::trace
