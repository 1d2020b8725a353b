#include "harness/trace/flight_recorder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace harness::trace {
namespace {

// Field offsets of the documented layout (flight_recorder.h).
constexpr std::size_t kOffVersion = 8, kOffHeaderBytes = 12, kOffEntryBytes = 16,
                      kOffCapacity = 20, kOffLaunches = kFlightLaunchesOffset, kOffPid = 32, kOffStep = 36;
constexpr std::size_t kEntSeq = 0, kEntLaunch = 8, kEntStep = 16, kEntCorr = 20, kEntThread = 24,
                      kEntFlags = 28, kEntKernel = 32, kEntPath = 160;
static_assert(kEntPath + kFlightPathChars == kFlightEntryBytes);
static_assert(kEntKernel + kFlightKernelChars == kEntPath);

template <typename T>
void put(unsigned char* p, T v) { std::memcpy(p, &v, sizeof v); }
template <typename T>
T get(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint64_t* u64_at(unsigned char* p) { return reinterpret_cast<std::uint64_t*>(p); }
std::int32_t* i32_at(unsigned char* p) { return reinterpret_cast<std::int32_t*>(p); }

// Copies at most n-1 bytes and a NUL; true when `s` did not fit.
bool put_text(unsigned char* dst, std::size_t n, std::string_view s) {
  const std::size_t take = std::min(s.size(), n - 1);
  std::memcpy(dst, s.data(), take);
  std::memset(dst + take, 0, n - take);
  return take < s.size();
}

std::string get_text(const unsigned char* src, std::size_t n) {
  const auto* end = static_cast<const unsigned char*>(std::memchr(src, 0, n));
  return std::string(reinterpret_cast<const char*>(src), end ? end - src : n);
}

std::runtime_error sys_error(const std::string& what, const std::string& path) {
  return std::runtime_error("flight recorder " + path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

FlightRecorder::FlightRecorder(const std::string& path, std::uint32_t capacity)
    : path_(path), capacity_(std::max<std::uint32_t>(1, capacity)) {
  bytes_ = kFlightHeaderBytes + std::size_t{capacity_} * kFlightEntryBytes;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw sys_error("open", path);
  if (::ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
    ::close(fd);
    throw sys_error("ftruncate", path);
  }
  void* m = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (m == MAP_FAILED) throw sys_error("mmap", path);
  base_ = static_cast<unsigned char*>(m);
  // ftruncate zero-filled the file: every entry starts empty (seq 0).
  put<std::uint32_t>(base_ + kOffVersion, kFlightVersion);
  put<std::uint32_t>(base_ + kOffHeaderBytes, kFlightHeaderBytes);
  put<std::uint32_t>(base_ + kOffEntryBytes, kFlightEntryBytes);
  put<std::uint32_t>(base_ + kOffCapacity, capacity_);
  put<std::uint32_t>(base_ + kOffPid, static_cast<std::uint32_t>(::getpid()));
  __atomic_store_n(i32_at(base_ + kOffStep), -1, __ATOMIC_RELAXED);
  // The magic last: a reader never sees a half-initialised header as ours.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  std::memcpy(base_, kFlightMagic, sizeof kFlightMagic);
}

FlightRecorder::~FlightRecorder() {
  if (base_ != nullptr) ::munmap(base_, bytes_);
}

void FlightRecorder::record(std::string_view kernel, std::uint64_t launch_ns,
                            std::uint32_t correlation_id, std::uint32_t thread,
                            std::string_view nvtx_path) noexcept {
  const std::uint64_t seq = __atomic_add_fetch(u64_at(base_ + kOffLaunches), 1, __ATOMIC_ACQ_REL);
  unsigned char* e = base_ + kFlightHeaderBytes + ((seq - 1) % capacity_) * kFlightEntryBytes;
  __atomic_store_n(u64_at(e + kEntSeq), 0, __ATOMIC_RELEASE);
  put<std::uint64_t>(e + kEntLaunch, launch_ns);
  put<std::int32_t>(e + kEntStep, step());
  put<std::uint32_t>(e + kEntCorr, correlation_id);
  put<std::uint32_t>(e + kEntThread, thread);
  std::uint32_t flags = 0;
  if (put_text(e + kEntKernel, kFlightKernelChars, kernel)) flags |= 1u;
  if (put_text(e + kEntPath, kFlightPathChars, nvtx_path)) flags |= 2u;
  put<std::uint32_t>(e + kEntFlags, flags);
  __atomic_store_n(u64_at(e + kEntSeq), seq, __ATOMIC_RELEASE);
}

void FlightRecorder::set_step(int step) noexcept {
  __atomic_store_n(i32_at(base_ + kOffStep), step, __ATOMIC_RELEASE);
}

int FlightRecorder::step() const noexcept {
  return __atomic_load_n(i32_at(base_ + kOffStep), __ATOMIC_ACQUIRE);
}

std::uint64_t FlightRecorder::launches() const noexcept {
  return __atomic_load_n(u64_at(base_ + kOffLaunches), __ATOMIC_ACQUIRE);
}

FlightLog read_flight_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sys_error("open", path);
  const std::vector<unsigned char> b((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) {
    return std::runtime_error("flight recorder " + path + ": " + why);
  };
  if (b.size() < kFlightHeaderBytes) throw bad("file is " + std::to_string(b.size()) + " bytes, shorter than its header");
  if (std::memcmp(b.data(), kFlightMagic, sizeof kFlightMagic) != 0) throw bad("bad magic (not a flight recorder file)");
  if (get<std::uint32_t>(&b[kOffVersion]) != kFlightVersion) throw bad("unsupported version " + std::to_string(get<std::uint32_t>(&b[kOffVersion])));
  if (get<std::uint32_t>(&b[kOffHeaderBytes]) != kFlightHeaderBytes ||
      get<std::uint32_t>(&b[kOffEntryBytes]) != kFlightEntryBytes) {
    throw bad("unexpected header/entry sizes");
  }
  FlightLog log;
  log.capacity = get<std::uint32_t>(&b[kOffCapacity]);
  if (log.capacity == 0 || log.capacity > kFlightMaxEntries) throw bad("capacity " + std::to_string(log.capacity) + " out of range");
  if (b.size() < kFlightHeaderBytes + std::size_t{log.capacity} * kFlightEntryBytes) throw bad("file shorter than its " + std::to_string(log.capacity) + " entries");
  log.launches = get<std::uint64_t>(&b[kOffLaunches]);
  log.pid = get<std::uint32_t>(&b[kOffPid]);
  log.current_step = get<std::int32_t>(&b[kOffStep]);
  for (std::uint32_t k = 0; k < log.capacity; ++k) {
    const unsigned char* e = &b[kFlightHeaderBytes + std::size_t{k} * kFlightEntryBytes];
    FlightEntry f;
    f.seq = get<std::uint64_t>(e + kEntSeq);
    if (f.seq == 0) continue;  // empty, or its writer died mid-entry
    f.launch_ns = get<std::uint64_t>(e + kEntLaunch);
    f.step = get<std::int32_t>(e + kEntStep);
    f.correlation_id = get<std::uint32_t>(e + kEntCorr);
    f.thread = get<std::uint32_t>(e + kEntThread);
    const auto flags = get<std::uint32_t>(e + kEntFlags);
    f.kernel_truncated = flags & 1u;
    f.path_truncated = flags & 2u;
    f.kernel = get_text(e + kEntKernel, kFlightKernelChars);
    f.nvtx_path = get_text(e + kEntPath, kFlightPathChars);
    log.entries.push_back(std::move(f));
  }
  std::sort(log.entries.begin(), log.entries.end(),
            [](const FlightEntry& a, const FlightEntry& b) { return a.seq < b.seq; });
  return log;
}

std::vector<FlightEntry> read_flight_recorder(const std::string& path) {
  return read_flight_log(path).entries;
}

}  // namespace harness::trace
