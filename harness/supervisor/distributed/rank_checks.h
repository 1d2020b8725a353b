#pragma once
// Two comparisons across ranks that need no hang to show:
//   desync     — parameter checksums that differ at a step (the first step, and
//                the rank(s) outside the reference group);
//   stragglers — a rank whose own work per step (step_ms − comm_ms: time not
//                spent waiting for others) is slower than the other ranks'
//                by a clear factor beyond their step-to-step noise.
#include <optional>
#include <vector>

#include "harness/supervisor/distributed/rank_stream.h"

namespace harness::supervisor::dist {

// Checksums equal within this relative difference are the same parameters
// (identical ranks agree bit for bit; the margin only absorbs printing).
inline constexpr double kChecksumRelTol = 1e-12;

std::optional<RankDesync> find_desync(const std::vector<RankStream>& ranks);

// A straggler's median own-work time is at least kStragglerFactor × the other
// ranks' median and beyond it by kStragglerNoise × their noise (scaled MAD)
// and kStragglerMinMs, over the warm steps (all but the first). The factor is
// wide because ranks sharing busy CPUs differ steadily on their own: two clean
// ranks on two shared cores measured 44 vs 106 ms (2.4×) at load 7.
inline constexpr double kStragglerFactor = 3.0;
inline constexpr double kStragglerNoise = 6.0;
inline constexpr double kStragglerMinMs = 50.0;
inline constexpr int kStragglerMinSteps = 3;

std::vector<Straggler> find_stragglers(const std::vector<RankStream>& ranks);

// step_ms − comm_ms of the warm steps.
std::vector<double> own_work_ms(const RankStream& r);

}  // namespace harness::supervisor::dist
