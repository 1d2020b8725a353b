#include "harness/trace/buffer_pool.h"

#include <algorithm>

namespace harness::trace {

ActivityBufferPool::ActivityBufferPool(std::size_t max_buffers, std::size_t buffer_bytes)
    : max_buffers_(max_buffers), buffer_bytes_(buffer_bytes) {}

std::uint8_t* ActivityBufferPool::acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_.empty()) {
    std::uint8_t* b = free_.back();
    free_.pop_back();
    ++in_use_;
    return b;
  }
  if (owned_.size() >= max_buffers_) {
    ++refused_;
    return nullptr;
  }
  // new[] of uint8_t is aligned to __STDCPP_DEFAULT_NEW_ALIGNMENT__ (16), above CUPTI's 8.
  static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= kActivityBufferAlign);
  owned_.emplace_back(new std::uint8_t[buffer_bytes_]);
  ++in_use_;
  return owned_.back().get();
}

void ActivityBufferPool::release(std::uint8_t* buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool ours = std::any_of(owned_.begin(), owned_.end(),
                                [&](const auto& p) { return p.get() == buffer; });
  const bool already_free = std::find(free_.begin(), free_.end(), buffer) != free_.end();
  if (!ours || already_free) {
    ++foreign_;
    return;
  }
  free_.push_back(buffer);
  --in_use_;
}

std::size_t ActivityBufferPool::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

std::size_t ActivityBufferPool::allocated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return owned_.size();
}

std::uint64_t ActivityBufferPool::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

std::uint64_t ActivityBufferPool::foreign_releases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return foreign_;
}

}  // namespace harness::trace
