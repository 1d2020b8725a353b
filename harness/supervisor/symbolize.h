#pragma once
// Native stacks without a debugger: the child's signal handler writes raw
// frames (backtrace_symbols_fd: "module(+0x1c2f) [0x55d0c1a2bc2f]") into
// stacks.txt; while the child is still alive the supervisor keeps its memory
// map (/proc/PID/maps), and afterwards turns each frame's address into
// function and file:line with elfutils' libdwfl, reading the modules' symbol
// tables and DWARF offline. gdb attaches to a live process and can take
// seconds or hang; this reads files only.
#include <string>

namespace harness::supervisor {

// Whether this build can symbolize (elfutils' libdw was found at configure time).
bool can_symbolize();

// `stacks` with every frame line that ends in "[0xADDR]" followed by one line
// "    → function at file:line (module)" (file:line where the module carries
// line tables), resolved against the memory map in `maps_text` (the format of
// /proc/PID/maps). Frames after the first are return addresses: they are
// looked up at ADDR - 1, inside the call. Empty when nothing could be resolved
// or this build cannot symbolize.
std::string symbolize_stacks(const std::string& stacks, const std::string& maps_text);

}  // namespace harness::supervisor
