#pragma once
// The kernel flight recorder: a fixed ring of the last N kernel launches, kept in
// a small file mapped MAP_SHARED in the cell directory. Every store lands in the
// kernel's page cache as it happens, so when the child dies — SIGKILL from the
// watchdog, a CUDA illegal-address abort, a segfault — the supervisor still
// reads which kernels were launched last, in which step and NVTX phase, even for
// a kernel that never completed (CUPTI's activity record for it never comes).
//
// File layout (host byte order, little-endian on every machine we run on):
//
//   header, 64 bytes
//     0   char[8]  magic "NSAFLT01"
//     8   u32      version (1)
//     12  u32      header bytes (64)
//     16  u32      entry bytes (256)
//     20  u32      capacity N
//     24  u64      launches recorded so far (next sequence number - 1)
//     32  u32      pid of the writer
//     36  i32      current step (-1 before the first)
//     40  byte[24] reserved, zero
//   N entries, 256 bytes each; entry k holds launch seq with (seq - 1) % N == k
//     0   u64      seq (1-based); 0 = empty or being rewritten
//     8   u64      launch time, ns (CUPTI clock when CUPTI is on)
//     16  i32      step
//     20  u32      correlation id (matches the kernel's CUPTI record)
//     24  u32      thread id (CUPTI's)
//     28  u32      flags: bit 0 kernel name truncated, bit 1 path truncated
//     32  char[128] kernel name, NUL-terminated
//     160 char[96]  NVTX path, NUL-terminated
//
// A writer zeroes seq before rewriting an entry and stores the new seq last
// (release), so a writer killed mid-entry leaves seq 0 and readers skip it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace harness::trace {

inline constexpr const char* kFlightRecorderFile = "flight.bin";
inline constexpr char kFlightMagic[8] = {'N', 'S', 'A', 'F', 'L', 'T', '0', '1'};
inline constexpr std::uint32_t kFlightVersion = 1;
inline constexpr std::size_t kFlightHeaderBytes = 64;
inline constexpr std::size_t kFlightEntryBytes = 256;
inline constexpr std::size_t kFlightKernelChars = 128;
inline constexpr std::size_t kFlightPathChars = 96;
// Why 256: a forward+backward of one m7c_125m layer is ~100 launches, so the
// ring shows the last two layers' worth before a crash — enough to name the
// failing kernel and its neighbours — in a 64 KiB file.
inline constexpr std::uint32_t kFlightRecorderEntries = 256;
// Where the header keeps the launch count: the supervisor reads just these 8
// bytes while the child runs, as evidence that it still launches work.
inline constexpr std::size_t kFlightLaunchesOffset = 24;
// Upper bound a reader accepts, so a corrupt header cannot make it allocate GBs.
inline constexpr std::uint32_t kFlightMaxEntries = 1u << 20;

struct FlightEntry {
  std::uint64_t seq = 0;
  std::uint64_t launch_ns = 0;
  int step = -1;
  std::uint32_t correlation_id = 0;
  std::uint32_t thread = 0;
  std::string kernel;
  std::string nvtx_path;
  bool kernel_truncated = false;
  bool path_truncated = false;
};

struct FlightLog {
  std::uint32_t pid = 0;
  std::uint32_t capacity = 0;
  std::uint64_t launches = 0;  // total recorded, including those overwritten
  int current_step = -1;
  std::vector<FlightEntry> entries;  // oldest first
};

class FlightRecorder {
 public:
  // Creates (truncates) the file at `path`, sizes it and maps it. Throws
  // std::runtime_error naming the path and the failing call.
  explicit FlightRecorder(const std::string& path, std::uint32_t capacity = kFlightRecorderEntries);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Records one launch. Lock-free and allocation-free: called from CUPTI's
  // launch callback on whichever thread launches. Names are truncated to fit.
  void record(std::string_view kernel, std::uint64_t launch_ns, std::uint32_t correlation_id,
              std::uint32_t thread, std::string_view nvtx_path) noexcept;
  void set_step(int step) noexcept;
  int step() const noexcept;
  std::uint64_t launches() const noexcept;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::uint32_t capacity_;
  std::size_t bytes_ = 0;
  unsigned char* base_ = nullptr;
};

// Reads a flight recorder file (from a live or dead writer). Throws
// std::runtime_error naming the path when it is missing, short or not ours.
FlightLog read_flight_log(const std::string& path);
// Just the entries, oldest first.
std::vector<FlightEntry> read_flight_recorder(const std::string& path);

}  // namespace harness::trace
