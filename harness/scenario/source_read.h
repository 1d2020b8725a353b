#pragma once
// Reading a scenario file from disk, bounded. A scenario (or a file it
// `extends`) must be a regular file of at most kMaxScenarioBytes: a FIFO would
// block the loader until someone writes to it, /dev/zero would never end, and a
// directory reads as nothing.
#include <optional>
#include <string>

namespace harness {

// The file's bytes, or nothing with `why` set ("not a regular file (a FIFO)",
// "2097152 bytes, more than the limit of 1 MiB", "No such file or directory").
std::optional<std::string> read_scenario_bytes(const std::string& path, std::string& why);

}  // namespace harness
