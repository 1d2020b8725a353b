#pragma once
// Host memory as the supervisor reads it from /proc and the cgroup: how much a
// child held at most, and how much this machine (or container) lets it have.
// A child killed by SIGKILL that nobody in the harness sent, with its peak near
// the limit, was killed by the kernel's out-of-memory killer.
#include <cstdint>
#include <optional>
#include <string>

namespace harness::supervisor {

// VmHWM (peak resident set) of process `pid`; nullopt once it cannot be read
// (the process is gone or a zombie).
std::optional<std::uint64_t> process_peak_rss_bytes(int pid);

// The smaller of MemTotal and the cgroup's memory.max (v2) or
// memory.limit_in_bytes (v1), where one is set; nullopt when neither reads.
std::optional<std::uint64_t> host_memory_limit_bytes();

// "23.1 GiB"
std::string gib_text(std::uint64_t bytes);

}  // namespace harness::supervisor
