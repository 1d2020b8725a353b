#pragma once
// Host ranges projected onto the GPU timeline, the way Nsight Systems shows
// "NVTX (projected)": for each recorded range and each (device, stream), one
// slice from the start of the first GPU activity launched inside the range to
// the end of the last one. Written on the stream's track, these slices make a
// trace viewer (Perfetto, chrome://tracing) show every kernel nested under its
// step / phase / layer / branch range, which the host-side ranges alone cannot:
// the kernels run later, on another track.
//
// "Launched inside" is by time, on any host thread: the training thread blocks
// in backward while the autograd thread launches, and those kernels belong to
// the "backward" range. Nesting on each stream follows from in-order execution
// (a range inside another launches a subset of its kernels; sibling ranges
// launch one after the other), and is enforced anyway: a projected slice that
// would overlap another only partly is dropped, so the track always loads as a
// proper tree.
#include <vector>

#include "harness/trace/trace_event.h"

namespace harness::trace {

// `events`: one batch (API calls, GPU activities, ranges). Returns range events
// with range_source = gpu_projection, device and stream set; nothing for ranges
// that launched no GPU work. Parents precede children when starts are equal.
std::vector<TraceEvent> project_ranges_onto_gpu(const std::vector<TraceEvent>& events);

}  // namespace harness::trace
