#pragma once
// Writes a whole file or nothing (STYLE: "each writes file.tmp then renames, so
// a killed run never leaves a half-file that looks whole"). rename(2) within one
// directory is atomic on POSIX file systems.
#include <string>

namespace harness {

// Writes `content` to `path + ".tmp"`, flushes it to disk, renames it onto
// `path`. Throws std::runtime_error naming the path and errno text on failure;
// the .tmp file is removed when the write fails.
void write_file_atomic(const std::string& path, const std::string& content);

// The whole file; throws std::runtime_error naming the path when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace harness
