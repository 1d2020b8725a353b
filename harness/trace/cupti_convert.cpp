// CUPTI activity records → TraceEvents. The record struct versions are the ones
// CUDA 13's CUPTI delivers for each kind (cupti_activity.h names them).
#include "harness/trace/cupti_convert.h"

namespace harness::trace::cupti_detail {
namespace {

CopyKind copy_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::htod;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::dtoh;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return CopyKind::dtod;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::htoh;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::peer;
    default: return CopyKind::unknown;
  }
}

MemoryKind memory_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemoryKind::pageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemoryKind::pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return MemoryKind::device;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return MemoryKind::array;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemoryKind::managed;
    default: return MemoryKind::unknown;
  }
}

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name != nullptr) return name;
  return (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime#" : "driver#") + std::to_string(cbid);
}

bool incomplete(std::uint64_t start, std::uint64_t end) { return end == 0 || end < start; }

}  // namespace

Converted convert_record(const CUpti_Activity* record, TraceEvent& out) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (incomplete(k->start, k->end)) return Converted::incomplete;
      out = TraceEvent::make_kernel(k->name ? k->name : "<unnamed kernel>", k->deviceId,
                                    k->streamId, k->correlationId, k->start, k->end,
                                    {k->gridX, k->gridY, k->gridZ},
                                    {k->blockX, k->blockY, k->blockZ});
      return Converted::event;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      if (incomplete(m->start, m->end)) return Converted::incomplete;
      out = TraceEvent::make_memcpy(copy_kind(m->copyKind), m->bytes, m->deviceId, m->streamId,
                                    m->correlationId, m->start, m->end,
                                    (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0);
      out.src_kind = memory_kind(m->srcKind);
      out.dst_kind = memory_kind(m->dstKind);
      return Converted::event;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      if (incomplete(m->start, m->end)) return Converted::incomplete;
      out = TraceEvent::make_memset(m->bytes, m->deviceId, m->streamId, m->correlationId,
                                    m->start, m->end);
      out.async = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0;
      return Converted::event;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      if (incomplete(a->start, a->end)) return Converted::incomplete;
      const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      out = TraceEvent::make_api(
          api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid),
          a->correlationId, a->threadId, a->start, a->end,
          runtime ? ApiDomain::runtime : ApiDomain::driver);
      out.api_cbid = a->cbid;
      out.process = a->processId;
      return Converted::event;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
      MarkerPhase phase = MarkerPhase::instant;
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) phase = MarkerPhase::start;
      else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) phase = MarkerPhase::end;
      else if (!(m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)) return Converted::ignored;
      const std::uint32_t thread =
          m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
      out = TraceEvent::make_marker(phase, m->id, m->name ? m->name : "",
                                    m->domain ? m->domain : "", thread, m->timestamp);
      if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) out.process = m->objectId.pt.processId;
      return Converted::event;
    }
    default:
      return Converted::ignored;
  }
}

}  // namespace harness::trace::cupti_detail
