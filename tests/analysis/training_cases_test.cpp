// The validation policy for a case's attention text: the FlashAttention version is read literally.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "config/error.hpp"
#include "models/analysis/scenario.hpp"
#include "models/analysis/training.hpp"
#include "models/analysis/training_cases.hpp"

using namespace stacksim::analysis;

namespace {

YAML::Node training_case(const std::string& gpu, const std::string& attention) {
  YAML::Node c = YAML::Load(R"(
id: t
kind: training
source: {key: test}
hardware: {gpu: X, num_gpus: 8, gpus_per_node: 8, intra_node: null,
           inter_node: {fabric: null, nics_per_node: null, nic_gbps: null}}
model: {name: m, layers: 4, hidden: 1024, heads: 16, kv_heads: 16, ffn_hidden: 4096, vocab: 50304,
        seq_len: 2048, mlp: gelu, moe: null, attention: null}
parallelism: {tp: 1, pp: 1, dp: 8, cp: null, ep: null, vp: null, sequence_parallel: null, micro_batch: 1,
              global_batch: 8, recompute: none, zero: 3, precision: bf16}
measured: {step_time_s: 1.0}
)");
  c["hardware"]["gpu"] = gpu;
  if (!attention.empty()) c["model"]["attention"] = attention;
  return c;
}

std::string kernel_for(const std::string& gpu, const std::string& attention) {
  std::vector<std::string> defaults;
  return training_case_scenario(training_case(gpu, attention), defaults)["model"]["attention"].as<std::string>();
}

}  // namespace

TEST(TrainingCasePolicy, FlashAttentionVersionIsReadLiterally) {
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "FlashAttention (attn_impl: flash)"), "flash1");
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "FlashAttention-2"), "flash2");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "uses FA2 kernels"), "flash2");
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "FlashAttention-3"), "flash");
  // Unstated: the software generation's kernels (docs/validation.md).
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", ""), "flash");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", ""), "unfused");
}

TEST(TrainingCasePolicy, Flash1IsSlowerThanFlash2AtLongSequences) {
  // Attention dominates a small model at 16k tokens: the older kernel must cost real time.
  const auto step = [](const std::string& kernel) {
    Scenario s = load_scenario(STACKSIM_SOURCE_DIR "/scenarios/fsdp-7b-8xh100.yaml",
                               {"model.attention=" + kernel, "model.seq_len=16384", "parallelism.micro_batch=1"});
    return simulate_training(s.training, {}).step_time_s;
  };
  EXPECT_GT(step("flash1"), 1.2 * step("flash2"));
}

TEST(TrainingCasePolicy, Flash1OnAGpuWithoutItsProfileIsAnInputError) {
  Scenario s = load_scenario(STACKSIM_SOURCE_DIR "/scenarios/fsdp-7b-8xh100.yaml",
                             {"model.attention=flash1", "hardware.gpu=B200"});
  try {
    simulate_training(s.training, {});
    FAIL() << "expected an InputError";
  } catch (const stacksim::config::InputError& e) {
    EXPECT_EQ(e.key(), "calibration.flash1_efficiency");
    EXPECT_NE(std::string(e.what()).find("flash2"), std::string::npos) << e.what();
  }
}
