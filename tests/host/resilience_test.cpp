// Checkpoints and failures: sync and async stalls amortised over the interval, goodput after
// failures (Young/Daly), story (e)'s verdict, and bad input as InputError.
#include <gtest/gtest.h>

#include "config/error.hpp"
#include "services/compare.hpp"

using namespace stacksim::analysis;

namespace {

const std::string kStory = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/story-checkpoint-stalls.yaml";

TrainingResult run(std::vector<std::string> sets) {
  return simulate_training(load_scenario(kStory, sets).training, {});
}

double category(const TrainingResult& r, const std::string& name) {
  for (const auto& [k, v] : r.breakdown)
    if (k == name) return v;
  return -1;
}

// The story's node: DGX H100, 8 GPUs, two per PCIe Gen5 switch (63 GB/s per direction).
constexpr double kPcie_Bps = 63e9;
constexpr double kGpusPerNode = 8;

}  // namespace

TEST(Checkpoint, SyncStallIsSnapshotPlusWriteAmortisedOverTheInterval) {
  const TrainingResult r = run({"checkpoint.bytes=160 GB"});  // 10 GB per GPU, 80 GB per node
  const double snapshot_s = 10e9 / (kPcie_Bps / 2);           // two GPUs share a switch uplink
  const double write_s = kGpusPerNode * 10e9 / 0.5e9;
  EXPECT_NEAR(r.checkpoint_s, (snapshot_s + write_s) / 25, 1e-9);
  EXPECT_NEAR(category(r, "checkpoint"), r.checkpoint_s, 1e-12);
  EXPECT_EQ(r.bottleneck, "checkpoint stalls");
}

TEST(Checkpoint, AsyncBlocksForTheSnapshotAndForAWriteLongerThanTheInterval) {
  const TrainingResult r = run({"checkpoint.bytes=160 GB", "checkpoint.async=true"});
  const double gpu_step_s = r.step_time_s - r.checkpoint_s;
  const double snapshot_s = 10e9 / (kPcie_Bps / 2), write_s = kGpusPerNode * 10e9 / 0.5e9;
  EXPECT_NEAR(r.checkpoint_s, (snapshot_s + std::max(0.0, write_s - 25 * gpu_step_s)) / 25, 1e-9);
  // A write that fits in the interval is hidden: only the snapshot remains.
  const TrainingResult hidden =
      run({"checkpoint.bytes=160 GB", "checkpoint.async=true", "checkpoint.every_steps=1000"});
  EXPECT_NEAR(hidden.checkpoint_s, snapshot_s / 1000, 1e-12);
}

TEST(Checkpoint, DefaultBytesAreWeightsAndOptimizerStateOnce) {
  const TrainingResult r = run({"checkpoint.every_steps=1"});
  const double params = r.memory.weights_bytes / 2;  // tp = pp = 1, zero 1: every GPU holds all weights
  const double per_gpu_bytes = 14 * params / 16;
  EXPECT_NEAR(r.checkpoint_s, per_gpu_bytes / (kPcie_Bps / 2) + kGpusPerNode * per_gpu_bytes / 0.5e9, 1e-6);
  // BF16 Adam moments: 8 B of optimizer state per parameter, 10 B written with the weights.
  const TrainingResult bf16 = run({"checkpoint.every_steps=1", "parallelism.optimizer_moments=bf16"});
  const double bf16_bytes = 10 * params / 16;
  EXPECT_NEAR(bf16.checkpoint_s, bf16_bytes / (kPcie_Bps / 2) + kGpusPerNode * bf16_bytes / 0.5e9, 1e-6);
}

TEST(Checkpoint, AggregateBandwidthIsSharedByTheNodes) {
  // 2 nodes x 80 GB over a 10 GB/s target: 16 s, slower than 80 GB / 20 GB/s per node.
  const TrainingResult r = run({"checkpoint.bytes=160 GB", "checkpoint.write_bandwidth=20 GB/s",
                                "checkpoint.aggregate_write_bandwidth=10 GB/s"});
  EXPECT_NEAR(r.checkpoint_s, (10e9 / (kPcie_Bps / 2) + 160e9 / 10e9) / 25, 1e-9);
}

TEST(Failures, GoodputLosesRestartAndHalfAnIntervalPerFailure) {
  const TrainingResult r = run({"failures.mtbf_hours_per_node=10"});
  const double job_mtbf_s = 10 * 3600.0 / 2;
  const double lost = (600 + 25 * r.step_time_s / 2) / job_mtbf_s;
  EXPECT_NEAR(r.failure_loss_fraction, lost, 1e-12);
  EXPECT_NEAR(r.goodput_tokens_per_s, r.tokens_per_s * (1 - lost), 1e-6);
  const TrainingResult per_gpu = run({"failures.mtbf_hours_per_node=null", "failures.mtbf_hours_per_gpu=80"});
  EXPECT_NEAR(per_gpu.failure_loss_fraction, lost, 1e-12);  // 80 h / 16 GPUs = 10 h / 2 nodes
  const TrainingResult none = run({"failures=null"});
  EXPECT_EQ(none.goodput_tokens_per_s, none.tokens_per_s);
}

TEST(StoryCheckpointStalls, AsyncCheckpointsBuyMoreGoodputThanAFasterGpu) {
  const Comparison c = compare(kStory, {}, {{"checkpoint.async=true"}, {"hardware.gpu=B200"}}, false);
  const double base = c.baseline.goodput_tokens_per_s;
  const double async_speedup = c.variants[0].result.goodput_tokens_per_s / base;
  const double gpu_speedup = c.variants[1].result.goodput_tokens_per_s / base;
  EXPECT_GT(async_speedup, 1.3);
  EXPECT_LT(gpu_speedup, async_speedup);
  EXPECT_EQ(c.baseline.bottleneck, "checkpoint stalls");
  EXPECT_EQ(c.variants[1].result.bottleneck, "checkpoint stalls");  // B200 still waits for the filesystem
}

TEST(ResilienceInput, BadValuesAreInputErrorsNamingTheKey) {
  auto error_of = [](std::vector<std::string> sets) -> std::string {
    try {
      load_scenario(kStory, sets);
    } catch (const stacksim::config::InputError& e) {
      return e.key() + ": " + e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({"checkpoint.every_steps=0"}).find("checkpoint.every_steps"), std::string::npos);
  EXPECT_NE(error_of({"checkpoint.every_steps=-5"}).find("at least 1"), std::string::npos);
  EXPECT_NE(error_of({"checkpoint.write_bandwidth=0 GB/s"}).find("checkpoint.write_bandwidth"), std::string::npos);
  EXPECT_NE(error_of({"checkpoint.aggregate_write_bandwidth=-1 GB/s"}).find("aggregate_write_bandwidth"),
            std::string::npos);
  EXPECT_NE(error_of({"checkpoint.bytes=0 B"}).find("checkpoint.bytes"), std::string::npos);
  EXPECT_NE(error_of({"checkpoint.evry_steps=3"}).find("evry_steps"), std::string::npos);
  EXPECT_NE(error_of({"checkpoint=null"}).find("failures need a 'checkpoint:' section"), std::string::npos);
  EXPECT_NE(error_of({"failures.mtbf_hours_per_gpu=5"}).find("exactly one MTBF"), std::string::npos);
  EXPECT_NE(error_of({"failures.mtbf_hours_per_node=0"}).find("mtbf_hours_per_node"), std::string::npos);
  EXPECT_NE(error_of({"failures.restart_s=-1"}).find("failures.restart_s"), std::string::npos);
  EXPECT_NE(error_of({"host.loader_workers=-2"}).find("host.loader_workers"), std::string::npos);
  EXPECT_NE(error_of({"host.prefetch=-1"}).find("host.prefetch"), std::string::npos);
  EXPECT_NE(error_of({"host.cpu_seconds_per_sample=-0.1"}).find("host.cpu_seconds_per_sample"), std::string::npos);
  EXPECT_NE(error_of({"host.storage_read_bandwidth=-3 GB/s"}).find("host.storage_read_bandwidth"), std::string::npos);
  EXPECT_NE(error_of({"host.sample_bytes=-1 B"}).find("host.sample_bytes"), std::string::npos);
  // An override's error is blamed on the override itself (config::rethrow_for_overrides).
  for (const std::string set : {"checkpoint.every_steps=0", "failures.restart_s=-1"})
    EXPECT_NE(error_of({set}).find(": --set " + set + ":"), std::string::npos) << error_of({set});
}

TEST(Resilience, Deterministic) {
  const TrainingResult a = run({"failures.mtbf_hours_per_node=10"}), b = run({"failures.mtbf_hours_per_node=10"});
  EXPECT_EQ(a.goodput_tokens_per_s, b.goodput_tokens_per_s);
  EXPECT_EQ(a.checkpoint_s, b.checkpoint_s);
}
