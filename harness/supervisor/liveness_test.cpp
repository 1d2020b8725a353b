#include "harness/supervisor/liveness.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>

#include "harness/supervisor/stack_phase.h"

namespace harness::supervisor {
namespace {
using Clock = Liveness::Clock;
using std::chrono::milliseconds;

TEST(Liveness, CpuTimeThatMovesIsProgressForACpuChild) {
  const auto t0 = Clock::now();
  Liveness live(t0, /*cpu_counts=*/true);
  live.sample(t0 + milliseconds(1000), 10.0, std::nullopt);
  live.sample(t0 + milliseconds(2000), 10.25, std::nullopt);  // a quarter of a core: a loaded machine
  EXPECT_EQ(live.last_signal(), ProgressSignal::cpu);
  EXPECT_EQ(live.last_progress(), t0 + milliseconds(2000));
}

TEST(Liveness, FlatCpuTimeIsNoProgress) {
  const auto t0 = Clock::now();
  Liveness live(t0, true);
  live.on_event(t0 + milliseconds(500));
  live.sample(t0 + milliseconds(1000), 10.0, std::nullopt);
  live.sample(t0 + milliseconds(2000), 10.001, std::nullopt);  // a blocked process: wake-ups only
  EXPECT_EQ(live.last_signal(), ProgressSignal::event);
  EXPECT_EQ(live.last_progress(), t0 + milliseconds(500));
}

TEST(Liveness, CpuTimeOfACudaChildIsNotProgressBecauseSynchronisationSpins) {
  const auto t0 = Clock::now();
  Liveness live(t0, /*cpu_counts=*/false);
  live.sample(t0 + milliseconds(1000), 10.0, std::nullopt);
  live.sample(t0 + milliseconds(2000), 11.0, std::nullopt);
  EXPECT_EQ(live.last_signal(), ProgressSignal::start);
}

TEST(Liveness, KernelLaunchesAreProgress) {
  const auto t0 = Clock::now();
  Liveness live(t0, false);
  live.sample(t0 + milliseconds(1000), std::nullopt, 100u);
  live.sample(t0 + milliseconds(2000), std::nullopt, 100u);
  EXPECT_EQ(live.last_signal(), ProgressSignal::start);
  live.sample(t0 + milliseconds(3000), std::nullopt, 140u);
  EXPECT_EQ(live.last_signal(), ProgressSignal::launches);
  EXPECT_EQ(live.launches_since_last_event(), 40u);
}

TEST(Liveness, ReadsThisProcessCpuTime) {
  auto cpu = process_cpu_s(getpid());
  ASSERT_TRUE(cpu.has_value());
  EXPECT_GE(*cpu, 0.0);
  EXPECT_FALSE(process_cpu_s(-5).has_value());
  EXPECT_FALSE(flight_launches("/nonexistent/flight.bin").has_value());
}

TEST(StackPhase, ThePhaseStackAtTheKillPlacesTheStall) {
  auto sp = phase_from_stacks("phase stack: step 2 > forward\nphase stack: step 3 > backward > layer 1\n", "");
  ASSERT_TRUE(sp);
  EXPECT_EQ(sp->step, 3);
  EXPECT_EQ(sp->top, "backward");
  EXPECT_EQ(sp->phases, "backward > layer 1");
}

TEST(StackPhase, AutogradEngineFramesMeanBackwardWhateverTheLastPhaseSaid) {
  const std::string native = "Thread 1:\n#3 torch::autograd::Engine::evaluate_function(...)\n";
  auto sp = phase_from_stacks("phase stack: step 4 > forward\n", native);
  ASSERT_TRUE(sp);
  EXPECT_EQ(sp->top, "backward");
  EXPECT_TRUE(sp->from_native);
  EXPECT_EQ(sp->step, 4);
}

TEST(StackPhase, NoPhaseStackNoAnswer) { EXPECT_FALSE(phase_from_stacks("garbage", "")); }

}  // namespace
}  // namespace harness::supervisor
