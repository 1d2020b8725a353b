#include "harness/supervisor/symbolize.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#ifdef NSA_HAVE_LIBDW
#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#endif

namespace harness::supervisor {

#ifdef NSA_HAVE_LIBDW
namespace {

std::string demangle(const char* name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = status == 0 && out ? out : name;
  std::free(out);
  return s;
}

// The address in a frame line's trailing "[0x...]", or 0.
uintptr_t frame_address(const std::string& line) {
  const size_t open = line.rfind("[0x");
  if (open == std::string::npos || line.back() != ']') return 0;
  return static_cast<uintptr_t>(std::strtoull(line.c_str() + open + 1, nullptr, 16));
}

// One frame: "function at file:line (module)", or empty when no module maps it.
std::string describe(Dwfl* dwfl, uintptr_t addr) {
  Dwfl_Module* mod = dwfl_addrmodule(dwfl, addr);
  if (!mod) return {};
  const char* module_name = dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  const char* sym = dwfl_module_addrname(mod, addr);
  std::string out = sym ? demangle(sym) : std::string("??");
  if (Dwfl_Line* line = dwfl_module_getsrc(mod, addr)) {
    int lineno = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr))
      out += " at " + std::string(file) + ":" + std::to_string(lineno);
  }
  if (module_name) out += " (" + std::string(module_name) + ")";
  return out;
}

}  // namespace

bool can_symbolize() { return true; }

std::string symbolize_stacks(const std::string& stacks, const std::string& maps_text) {
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks callbacks = {dwfl_linux_proc_find_elf, dwfl_standard_find_debuginfo, nullptr,
                                           &debuginfo_path};
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (!dwfl) return {};
  // The map is read from a copy: the process it describes may be gone by now.
  FILE* maps = fmemopen(const_cast<char*>(maps_text.data()), maps_text.size(), "r");
  if (!maps) {
    dwfl_end(dwfl);
    return {};
  }
  dwfl_report_begin(dwfl);
  const int rc = dwfl_linux_proc_maps_report(dwfl, maps);
  std::fclose(maps);
  dwfl_report_end(dwfl, nullptr, nullptr);
  std::string out;
  int resolved = 0;
  if (rc == 0) {
    std::istringstream in(stacks);
    std::string line;
    int frame = 0;  // frames since the last header line: the first is where the signal landed
    while (std::getline(in, line)) {
      out += line + "\n";
      const uintptr_t addr = frame_address(line);
      if (addr == 0) {
        frame = 0;
        continue;
      }
      const std::string where = describe(dwfl, frame++ == 0 ? addr : addr - 1);
      if (!where.empty()) {
        out += "    → " + where + "\n";
        ++resolved;
      }
    }
  }
  dwfl_end(dwfl);
  return resolved > 0 ? out : std::string();
}

#else

bool can_symbolize() { return false; }
std::string symbolize_stacks(const std::string&, const std::string&) { return {}; }

#endif

}  // namespace harness::supervisor
