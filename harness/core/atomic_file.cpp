#include "harness/core/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace harness {

namespace {
[[noreturn]] void throw_io_error(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(err));
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw_io_error("cannot create", tmp, errno);
  bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  ok = ok && std::fflush(f) == 0;
  // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
  ok = ok && ::fsync(::fileno(f)) == 0;
  int err = errno;
  if (std::fclose(f) != 0 && ok) { ok = false; err = errno; }
  if (!ok) {
    std::remove(tmp.c_str());
    throw_io_error("cannot write", tmp, err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    throw_io_error("cannot rename " + tmp + " to", path, err);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_io_error("cannot open", path, errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace harness
