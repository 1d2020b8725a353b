#pragma once
// The bounded pool of CUPTI activity buffers (kineto's ActivityBuffers idea).
// CUPTI asks for a buffer whenever its current one fills; we hand out at most
// `max_buffers` at a time. When every buffer is out (the consumer has not
// flushed), the request is refused: CUPTI then drops records and reports how
// many through cuptiActivityGetNumDroppedRecords, which the tracer adds to
// TraceCounters::records_dropped_by_cupti. Refusals are counted here.
//
// CUPTI-free so the accounting is tested on CPU with a tiny cap.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace harness::trace {

// Why 4 MiB: CUPTI's documentation suggests 1–10 MB buffers; 4 MiB holds ~15k
// kernel records, a few steps of m7c_125m, so a step-end flush rarely finds a
// half-empty buffer yet the completion callback runs often enough.
inline constexpr std::size_t kActivityBufferBytes = std::size_t{4} << 20;
// Why 32: 128 MiB of buffers in flight at most. A step-end flush returns them;
// 32 covers a long step (~500k records) before CUPTI starts dropping.
inline constexpr std::size_t kMaxActivityBuffers = 32;
// CUPTI requires 8-byte aligned buffers (ACTIVITY_RECORD_ALIGNMENT).
inline constexpr std::size_t kActivityBufferAlign = 8;

class ActivityBufferPool {
 public:
  explicit ActivityBufferPool(std::size_t max_buffers = kMaxActivityBuffers,
                              std::size_t buffer_bytes = kActivityBufferBytes);
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  // A free buffer (reused or newly allocated), or nullptr when `max_buffers` are
  // out. Thread-safe: CUPTI calls the request callback from any thread.
  std::uint8_t* acquire();
  // Returns a buffer from acquire(); unknown pointers are ignored (and counted).
  void release(std::uint8_t* buffer);

  std::size_t buffer_bytes() const { return buffer_bytes_; }
  std::size_t max_buffers() const { return max_buffers_; }
  std::size_t in_use() const;
  std::size_t allocated() const;
  std::uint64_t refused() const;
  std::uint64_t foreign_releases() const;

 private:
  mutable std::mutex mu_;
  std::size_t max_buffers_;
  std::size_t buffer_bytes_;
  std::vector<std::unique_ptr<std::uint8_t[]>> owned_;
  std::vector<std::uint8_t*> free_;
  std::size_t in_use_ = 0;
  std::uint64_t refused_ = 0;
  std::uint64_t foreign_ = 0;
};

}  // namespace harness::trace
