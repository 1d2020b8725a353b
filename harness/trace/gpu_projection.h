#pragma once
// The GPU tracks of the trace file, laid out so a viewer nests them correctly.
//
// 1. Projection: host ranges redrawn on the GPU timeline, the way Nsight
//    Systems shows "NVTX (projected)": for each recorded range and each
//    (device, stream), one slice from the start of the first GPU activity
//    launched inside the range to the end of the last one. On the stream's
//    track these slices show every kernel nested under its step / phase /
//    layer / branch range, which the host ranges alone cannot (kernels run
//    later, on another track). "Launched inside" is by time, on any host
//    thread: the training thread blocks in backward while the autograd thread
//    launches, and those kernels belong to the "backward" range.
// 2. Lanes: a track is a stack of nested slices. Kernels on one stream
//    normally run one after the other, but with programmatic dependent launch
//    (cuBLASLt on Hopper) a kernel may start before its predecessor ends; such
//    a kernel moves to an overlap track of the stream (lane 1, 2, …), and a
//    projected slice that would overlap another only partly is dropped, so
//    every track loads as a proper tree.
#include <vector>

#include "harness/trace/trace_event.h"

namespace harness::trace {

// `events`: one batch (API calls, GPU activities, ranges). Returns range events
// with range_source = gpu_projection, device and stream set; nothing for ranges
// that launched no GPU work. Unchecked for nesting (lay_out_gpu_tracks does that).
std::vector<TraceEvent> project_ranges_onto_gpu(const std::vector<TraceEvent>& events);

// The batch as it should be written: the projections first (outermost first,
// so a viewer meeting a slice and its parent at the same timestamp nests them
// in file order), then the events, with the lanes of GPU activities set.
std::vector<TraceEvent> lay_out_gpu_tracks(std::vector<TraceEvent> events);

}  // namespace harness::trace
