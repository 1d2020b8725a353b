// offer_row_delta / take_row_delta (row_delta.h): a ring of the last offers.
#include "nsa/cuda/row_delta.h"

#include <c10/util/intrusive_ptr.h>

#include <array>
#include <mutex>

namespace nsa::cuda {
namespace {

using WeakImpl = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

// A tensor's data as it was when offered: its address and its version (a
// later in-place write makes it other data).
struct DataAt {
  const void* data = nullptr;
  uint32_t version = 0;
  static DataAt of(const at::Tensor& t) { return {t.data_ptr(), t._version()}; }
  bool holds(const at::Tensor& t) const { return t.data_ptr() == data && t._version() == version; }
};

// dout must be the very tensor object (alive: a weak reference, so an offer
// never keeps a gradient alive) with the same data; o may reach the backward
// as another tensor object over the same storage (autograd saves and unpacks
// it), so only its data counts.
struct Offer {
  WeakImpl dout{c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>()};
  DataAt dout_data, o_data;
  at::Tensor delta;
  bool is_for(const at::Tensor& g, const at::Tensor& o) const {
    return delta.defined() && !dout.expired() && dout._unsafe_get_target() == g.unsafeGetTensorImpl() &&
           dout_data.holds(g) && o_data.holds(o);
  }
};

// Six: the three branches of one layer, and of the next should one layer's
// backward be interleaved with another's. Older offers are dropped.
constexpr size_t kRing = 6;
std::mutex g_mu;
// Never destroyed: an offer nobody took may hold a CUDA tensor, and freeing it
// from a static destructor, after the CUDA runtime began shutting down, throws
// (without the caching allocator every free is a cudaFree).
std::array<Offer, kRing>& g_ring = *new std::array<Offer, kRing>();
size_t g_next = 0;
int64_t g_taken = 0;

}  // namespace

void offer_row_delta(const at::Tensor& dout, const at::Tensor& o, const at::Tensor& delta) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_ring[g_next] = Offer{WeakImpl(dout.getIntrusivePtr()), DataAt::of(dout), DataAt::of(o), delta};
  g_next = (g_next + 1) % kRing;
}

at::Tensor take_row_delta(const at::Tensor& dout, const at::Tensor& o) {
  if (!dout.defined() || !o.defined()) return {};
  std::lock_guard<std::mutex> lock(g_mu);
  for (Offer& f : g_ring) {
    if (!f.is_for(dout, o)) continue;
    at::Tensor d = std::move(f.delta);
    f = Offer{};
    ++g_taken;
    return d;
  }
  return {};
}

int64_t row_deltas_taken() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_taken;
}

}  // namespace nsa::cuda
