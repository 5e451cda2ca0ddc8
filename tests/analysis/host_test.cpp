// The host side: loader stalls appear as data wait, a faster GPU barely helps a loader-bound job
// while more workers do; synchronous loading adds the loader time; bad host input is an error.
#include <gtest/gtest.h>

#include "config/error.hpp"
#include "models/analysis/compare.hpp"

using namespace stacksim::analysis;

namespace {

const std::string kStory = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/story-dataloader-bound.yaml";

double category(const TrainingResult& r, const std::string& name) {
  for (const auto& [k, v] : r.breakdown)
    if (k == name) return v;
  return -1;
}

}  // namespace

TEST(Host, LoaderBoundStepIsTheLoaderTimeAndTheWaitShowsInTheBreakdown) {
  const Scenario s = load_scenario(kStory, {});
  const TrainingResult r = simulate_training(s.training, RunOptions{});
  // 256 / 8 = 32 samples per GPU x 0.25 CPU-s / 4 workers = 2 s per step (the GPUs need ~1 s).
  EXPECT_NEAR(r.step_time_s, 32 * 0.25 / 4, 1e-9);
  EXPECT_NEAR(category(r, "data_wait"), r.step_time_s - (r.step_time_s - category(r, "data_wait")), 1e-12);
  EXPECT_GT(category(r, "data_wait"), 0.4 * r.step_time_s);  // the GPUs need about half of it
  EXPECT_EQ(r.bottleneck, "waiting for the data loader");
}

TEST(Host, FasterGpuBarelyHelpsMoreWorkersDo) {
  const Comparison c = compare(kStory, {}, {{"hardware.gpu=B200"}, {"host.loader_workers=12"}}, false);
  EXPECT_LT(c.variants[0].speedup, 1.10);   // story (a): the GPU upgrade gains < 10 %
  EXPECT_GT(c.variants[1].speedup, 1.8);    // 3x the workers: 2 s -> max(GPU ~1 s, 0.67 s)
  EXPECT_NE(c.variants[0].reason.find("data_wait"), std::string::npos);
}

TEST(Host, SynchronousLoadingAddsTheLoaderTime) {
  const TrainingResult async = simulate_training(load_scenario(kStory, {"host.loader_workers=64"}).training, {});
  const TrainingResult sync =
      simulate_training(load_scenario(kStory, {"host.loader_workers=64", "host.prefetch=0"}).training, {});
  // 64 workers exceed the 14 cores per GPU (112 cores / 8 GPUs): the loader runs on 14.
  EXPECT_NEAR(sync.step_time_s - async.step_time_s, 32 * 0.25 / 14, 1e-6);
}

TEST(Host, BadHostInputIsAnInputError) {
  EXPECT_THROW(load_scenario(kStory, {"host.loader_workers=-1"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.loader_worker=4"}), stacksim::config::InputError);
  EXPECT_THROW(load_scenario(kStory, {"host.storage_read_bandwidth=0 GB/s"}), stacksim::config::InputError);
}
