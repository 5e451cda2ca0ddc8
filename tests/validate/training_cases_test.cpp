// The validation policy for a case's attention text: the FlashAttention version is read literally.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>
#include <functional>

#include "config/error.hpp"
#include "services/scenario.hpp"
#include "services/training.hpp"
#include "validate/host_cases.hpp"
#include "validate/training_cases.hpp"

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

// The test case with a 13B-parameter shape (40 layers of 5120, 40 heads, MHA).
YAML::Node thirteen_b_case(const std::string& gpu) {
  YAML::Node c = training_case(gpu, "");
  c["model"]["layers"] = 40;
  c["model"]["hidden"] = 5120;
  c["model"]["heads"] = 40;
  c["model"]["kv_heads"] = 40;
  c["model"]["ffn_hidden"] = 20480;
  return c;
}

// The scenario the case policy builds for case `c` carrying `notes`.
YAML::Node built_with_notes(YAML::Node c, const std::string& notes) {
  c["notes"] = notes;
  std::vector<std::string> defaults;
  return training_case_scenario(c, defaults);
}

// Whether the scenario the policy builds for case `c` carrying `notes` sets the boolean plan key `key`.
bool plan_flag(const YAML::Node& c, const std::string& notes, const char* key) {
  const YAML::Node pl = built_with_notes(YAML::Clone(c), notes)["parallelism"];
  return pl[key] && pl[key].as<bool>();
}

// Why the case policy refuses case `c` ("" when it builds it).
std::string refusal_of(const YAML::Node& c) {
  std::vector<std::string> defaults;
  try {
    training_case_scenario(c, defaults);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
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
  // The original kernels do not run on Blackwell: there the text means the fused kernels.
  EXPECT_EQ(kernel_for("B200", "FlashAttention"), "flash");
  // Unstated: the software generation's kernels (docs/validation.md).
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", ""), "flash");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", ""), "unfused");
  // A text saying no FlashAttention ran names none, whatever the GPU.
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "Megatron-DeepSpeed attention (no flash attention flag)"), "unfused");
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "trained without FlashAttention"), "unfused");
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "use_flash_attn: false"), "unfused");
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "FlashAttention-2, not the fused kernels"), "flash2");
  // A package version names its major version.
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "Flash Attention 2.6.3 in the image"), "flash2");
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "pip install flash-attn==2.5.8"), "flash2");
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "flash_attn v3.0 beta"), "flash");
  // FlashAttention-4 (Blackwell) is its generation's best; package names without a space.
  EXPECT_EQ(kernel_for("B200", "flash-attn-4 through torch's FA4 registry"), "flash");
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "kernels-community/flash-attn2"), "flash2");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "optimisation strategy: flash attention 2"), "flash2");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "flash attention at 2048 tokens"), "flash1");  // not a version
  // cuDNN's fused attention is the generation's best, whatever else the text calls it.
  EXPECT_EQ(kernel_for("H100-SXM5-80GB", "flash attention (cuDNN fused attention through XLA)"), "flash");
  // Unstated on a PyTorch-native stack: SDPA's FlashAttention-2 backend, whatever the era.
  std::vector<std::string> defaults;
  YAML::Node tune = training_case("A100-SXM4-80GB", "");
  tune["notes"] = "torchtune full finetune recipe";
  EXPECT_EQ(training_case_scenario(tune, defaults)["model"]["attention"].as<std::string>(), "flash2");
}

TEST(TrainingCasePolicy, SdpaBackendFollowsThePyTorchReleaseAndTorchtitansOwnOrder) {
  const auto kernel = [](const std::string& gpu, const std::string& notes) {
    return built_with_notes(training_case(gpu, ""), notes)["model"]["attention"].as<std::string>();
  };
  // SDPA prefers cuDNN's fused attention on sm90/sm100 from PyTorch 2.9, on sm103 from 2.10.
  EXPECT_EQ(kernel("H100-SXM5-80GB", "Hugging Face Transformers, PyTorch 2.8.0"), "flash2");
  EXPECT_EQ(kernel("H100-SXM5-80GB", "Hugging Face Transformers, PyTorch 2.9.0+cu128"), "flash");
  EXPECT_EQ(kernel("B200", "torchtune recipe on torch 2.10.1"), "flash");
  EXPECT_EQ(kernel("GB300", "torchtune recipe, PyTorch 2.9.1"), "flash2");
  EXPECT_EQ(kernel("GB300", "torchtune recipe, PyTorch 2.10.0"), "flash");
  EXPECT_EQ(kernel("A100-SXM4-80GB", "torchtune recipe, PyTorch 2.11"), "flash2");  // Ampere: FA2 stays first
  // Without a stated release the FlashAttention-2 backend, which on Blackwell runs its sm80 code.
  EXPECT_EQ(kernel("B200", "torchtune recipe"), "flash2");
  // torchtitan orders the backends itself: cuDNN first on Blackwell, FlashAttention-2 first before it.
  EXPECT_EQ(kernel("B200", "torchtitan, PyTorch 2.7"), "flash");
  EXPECT_EQ(kernel("H100-SXM5-80GB", "torchtitan, PyTorch 2.9.0"), "flash2");
  // nanotron calls the flash-attn package itself: FlashAttention-2 whatever PyTorch's SDPA prefers.
  EXPECT_EQ(kernel("H100-SXM5-80GB", "trained with nanotron on PyTorch 2.9"), "flash2");
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

TEST(TrainingCasePolicy, GatedMlpUpTo3Point5Hidden) {
  // Llama-3 and Mixtral use 3.5 h SwiGLU widths; GPT-style MLPs 4 h.
  const auto mlp_for = [](long long ffn) {
    YAML::Node c = training_case("H100-SXM5-80GB", "");
    c["model"]["mlp"] = YAML::Node();
    c["model"]["ffn_hidden"] = ffn;
    std::vector<std::string> defaults;
    return training_case_scenario(c, defaults)["model"]["mlp"].as<std::string>();
  };
  EXPECT_EQ(mlp_for(2752), "swiglu");  // 8/3 h
  EXPECT_EQ(mlp_for(3584), "swiglu");  // 3.5 h
  EXPECT_EQ(mlp_for(4096), "gelu");    // 4 h
}

TEST(TrainingCasePolicy, NullVocabularyFollowsTheNamedModelFamily) {
  const auto vocab_for = [](const std::string& name) {
    YAML::Node c = training_case("H100-SXM5-80GB", "");
    c["model"]["vocab"] = YAML::Node();
    c["model"]["name"] = name;
    std::vector<std::string> defaults;
    return training_case_scenario(c, defaults)["model"]["vocab"].as<long long>();
  };
  EXPECT_EQ(vocab_for("Nemotron-22B"), 256000);
  EXPECT_EQ(vocab_for("LLAMA2-7B"), 32000);
  EXPECT_EQ(vocab_for("Llama-3 70B"), 128256);
  EXPECT_EQ(vocab_for("GPT3-5B"), 51200);
}

TEST(TrainingCasePolicy, AutoRecomputesTheFewestLayersThatFit) {
  // Llama-3 70B on 64 H100s as tp 2 pp 8: no recomputation does not fit, every layer recomputed
  // does; auto recomputes part of each chunk, landing between the two in time and memory.
  const auto run = [](const std::string& recompute) {
    Scenario s = load_scenario(STACKSIM_SOURCE_DIR "/scenarios/llama3-70b-64xh100.yaml",
                               {"parallelism.tp=2", "parallelism.cp=1", "parallelism.pp=8", "parallelism.dp=4",
                                "parallelism.vp=1", "parallelism.recompute=" + recompute});
    return simulate_training(s.training, {});
  };
  const TrainingResult none = run("none"), full = run("full"), autor = run("auto");
  ASSERT_TRUE(none.oom) << none.memory_per_gpu_bytes;
  ASSERT_FALSE(full.oom);
  EXPECT_FALSE(autor.oom);
  EXPECT_NE(autor.recompute.find("per model chunk"), std::string::npos) << autor.recompute;
  EXPECT_LT(autor.step_time_s, full.step_time_s);
  EXPECT_GT(autor.step_time_s, none.step_time_s);
  EXPECT_GT(autor.memory_per_gpu_bytes, full.memory_per_gpu_bytes);
}

namespace {
// A 61-layer (DeepSeek-V3-deep) case on pp GPUs, all pipeline; vp 0 leaves it unstated.
YAML::Node pipelined_61_layers(int pp, int vp) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["hardware"]["num_gpus"] = pp;
  c["model"]["layers"] = 61;
  c["parallelism"]["pp"] = pp;
  if (vp > 0) c["parallelism"]["vp"] = vp;
  c["parallelism"]["dp"] = 1;
  c["parallelism"]["zero"] = 1;
  return c;
}
}  // namespace

TEST(TrainingCasePolicy, UnevenLayersGoToTheMiddleStagesFirst) {
  // 61 layers over pp 16: 14 middle stages of 4, the first stage 3 and the last 2.
  std::vector<std::string> defaults;
  const YAML::Node s = training_case_scenario(pipelined_61_layers(16, 0), defaults);
  EXPECT_EQ(s["parallelism"]["first_stage_layers"].as<int>(), 3);
  EXPECT_EQ(s["parallelism"]["last_stage_layers"].as<int>(), 2);
  const Scenario built = scenario_from_yaml(s, "case t");  // and the plan checks accept it
  EXPECT_EQ(built.training.plan.first_stage_layers, 3);
}

TEST(TrainingCasePolicy, WhenNoFirstLastSplitFitsEveryVirtualStageGetsItsCount) {
  // 61 layers over pp 8 x vp 4 = 32 virtual stages (Megatron-Bridge's DeepSeek-V3 on GB200): 2 on
  // the 29 middle stages that come first, 1 on the first, the last and one more middle stage.
  std::vector<std::string> defaults;
  const YAML::Node s = training_case_scenario(pipelined_61_layers(8, 4), defaults);
  const auto counts = s["parallelism"]["stage_layers"].as<std::vector<int>>();
  ASSERT_EQ(counts.size(), 32u);
  EXPECT_EQ(counts.front(), 1);
  EXPECT_EQ(counts[1], 2);
  EXPECT_EQ(counts[29], 2);
  EXPECT_EQ(counts[30], 1);
  EXPECT_EQ(counts.back(), 1);
  const Scenario built = scenario_from_yaml(s, "case t");  // and the plan checks accept it
  EXPECT_EQ(built.training.plan.stage_layers, counts);
}

TEST(TrainingCasePolicy, UnstatedInterleavingOnHopperIsTheFinestTheLayersAllow) {
  // Llama 3 405B's shape: 126 layers over pp 16. vp 4 is the finest split (62 middle virtual stages
  // of 2, the first and last 1); vp 5..7 leave no valid split and vp 8 would need 128 layers.
  const auto plan_for = [](const std::string& gpu, int global_batch, const YAML::Node& vp) {
    YAML::Node c = training_case(gpu, "");
    c["hardware"]["num_gpus"] = 16;
    c["model"]["layers"] = 126;
    c["parallelism"]["pp"] = 16;
    c["parallelism"]["dp"] = 1;
    c["parallelism"]["zero"] = 1;
    c["parallelism"]["global_batch"] = global_batch;
    c["parallelism"]["vp"] = vp;
    std::vector<std::string> defaults;
    const YAML::Node s = training_case_scenario(c, defaults);
    return scenario_from_yaml(s, "case t").training.plan;  // the plan checks accept it
  };
  const auto hopper = plan_for("H100-SXM5-80GB", 32, YAML::Node());
  EXPECT_EQ(hopper.vp, 4);
  EXPECT_EQ(hopper.first_stage_layers, 1);
  EXPECT_EQ(hopper.last_stage_layers, 1);
  EXPECT_EQ(plan_for("A100-SXM4-80GB", 32, YAML::Node()).vp, 1);  // Ampere-era Megatron: plain 1F1B
  // The era is the part's: MI250X launched with the A100, the A800 (2022-23) and MI300X later.
  EXPECT_EQ(plan_for("MI250X", 32, YAML::Node()).vp, 1);
  EXPECT_EQ(plan_for("A800-SXM4-80GB", 32, YAML::Node()).vp, 4);
  EXPECT_EQ(plan_for("MI300X", 32, YAML::Node()).vp, 4);
  EXPECT_EQ(plan_for("H100-SXM5-80GB", 24, YAML::Node()).vp, 1);  // Megatron interleaves multiples of pp
  const auto stated = plan_for("H100-SXM5-80GB", 32, YAML::Node(2));
  EXPECT_EQ(stated.vp, 2);
  EXPECT_EQ(stated.first_stage_layers, 3);
}

TEST(TrainingCasePolicy, LatentAttentionAndDenseLeadLayersAreReadFromTheirText) {
  YAML::Node c =
      training_case("H100-SXM5-80GB", "MLA: kv compression 512, query compression 1536, decoupled RoPE head dim 64");
  c["model"]["mlp"] = YAML::Node();
  c["model"]["moe"] = YAML::Load(
      "{experts: 16, top_k: 2, shared_experts: 1, expert_ffn_hidden: 512, "
      "moe_layer_freq: 'first 1 layers dense, MoE in all later layers'}");
  std::vector<std::string> defaults;
  const YAML::Node s = training_case_scenario(c, defaults);
  EXPECT_EQ(s["model"]["mla"]["kv_lora_rank"].as<int>(), 512);
  EXPECT_EQ(s["model"]["mla"]["q_lora_rank"].as<int>(), 1536);
  EXPECT_EQ(s["model"]["mla"]["qk_rope_head_dim"].as<int>(), 64);
  EXPECT_EQ(s["model"]["moe"]["first_dense_layers"].as<int>(), 1);
  EXPECT_EQ(s["model"]["mlp"].as<std::string>(), "swiglu");
  // Unparseable frequency text is a reason, not a guess.
  c["model"]["moe"]["moe_layer_freq"] = "sparse in some layers";
  EXPECT_THROW(training_case_scenario(c, defaults), std::runtime_error);
}

TEST(TrainingCasePolicy, NodeLimitedRoutingCrossesToANodeOnceWithTheFamilysGroups) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["model"]["mlp"] = YAML::Node();
  c["model"]["moe"] = YAML::Load("{experts: 16, top_k: 2, expert_ffn_hidden: 512}");
  c["parallelism"]["ep"] = 8;
  c["parallelism"]["zero"] = 1;
  EXPECT_FALSE(built_with_notes(c, "")["parallelism"]["ep_dispatch"]);
  const YAML::Node limited = built_with_notes(c, "MoE: each token routed to at most 4 nodes.");
  EXPECT_EQ(limited["parallelism"]["ep_dispatch"].as<std::string>(), "deepep");
  EXPECT_FALSE(limited["model"]["moe"]["groups"]);  // no family config: unrestricted groups
  // DualPipe named: DeepSeek's own stack, whose dispatch DeepEP is.
  YAML::Node piped = c;
  piped["parallelism"]["pp"] = 2;
  piped["parallelism"]["dp"] = 4;
  piped["parallelism"]["ep"] = 4;
  piped["parallelism"]["global_batch"] = 16;
  EXPECT_EQ(built_with_notes(piped, "pipeline schedule: DualPipe.")["parallelism"]["ep_dispatch"].as<std::string>(),
            "deepep");
  // The family's routing comes with its name and shape (the catalogue's DeepSeek-V3); a model
  // named so with another shape is a variant and keeps unrestricted routing.
  c["model"]["name"] = "DeepSeek-V3";
  c["model"]["moe"] = YAML::Load("{experts: 256, top_k: 8, expert_ffn_hidden: 512}");
  EXPECT_FALSE(built_with_notes(c, "")["model"]["moe"]["groups"]);
  for (const char* k : {"layers", "hidden", "heads", "kv_heads", "ffn_hidden"}) c["model"][k] = YAML::Node();
  const YAML::Node ds = built_with_notes(c, "");
  EXPECT_EQ(ds["model"]["moe"]["groups"].as<int>(), 8);  // its config.json: n_group 8, topk_group 4
  EXPECT_EQ(ds["model"]["moe"]["groups_per_token"].as<int>(), 4);
}

TEST(TrainingCasePolicy, AShardGroupStatedAsAGpuCountIsTheShardSize) {
  YAML::Node c = training_case("A100-SXM4-40GB", "");
  c["hardware"]["num_gpus"] = 16;
  c["parallelism"]["dp"] = 16;
  c["parallelism"]["global_batch"] = 16;
  const YAML::Node mics = built_with_notes(c, "ZeRO stage 3, model sharded across 8 GPUs with 2 copies (MiCS).");
  EXPECT_EQ(mics["parallelism"]["shard_size"].as<int>(), 8);
  EXPECT_FALSE(built_with_notes(c, "model sharded across 16 GPUs.")["parallelism"]["shard_size"]);  // all of dp: plain
  EXPECT_FALSE(built_with_notes(c, "model sharded across 5 GPUs.")["parallelism"]["shard_size"]);   // not a divisor
}

TEST(TrainingCasePolicy, ANamedAwsInstanceIsItsOwnNodeType) {
  // p4d.24xlarge: eight A100 40GB with four 100 Gb/s EFA NICs, not a DGX A100's eight 200 Gb/s.
  YAML::Node c = training_case("A100-SXM4-40GB", "");
  c["hardware"]["system"] = "AWS SageMaker, 64 x p4d.24xlarge (EFA, 400 Gb/s inter-node)";
  std::vector<std::string> defaults;
  EXPECT_EQ(training_case_scenario(c, defaults)["cluster"]["node"].as<std::string>(), "aws-p4d");
  const Scenario s = scenario_from_yaml(training_case_scenario(c, defaults), "case t");
  EXPECT_EQ(s.training.cluster.node.nics, 4);
  EXPECT_DOUBLE_EQ(s.training.cluster.nic.bandwidth_Bps, 100e9 / 8);
  c["hardware"]["gpu"] = "A100-SXM4-80GB";  // p4de's GPU: the p4de node
  c["hardware"]["system"] = "2 x p4de.24xlarge";
  EXPECT_EQ(training_case_scenario(c, defaults)["cluster"]["node"].as<std::string>(), "aws-p4de");
  c["hardware"]["system"] = "64 x p4d.24xlarge";  // a GPU the instance does not have: the GPU's node
  EXPECT_EQ(training_case_scenario(c, defaults)["cluster"]["node"].as<std::string>(), "dgx-a100");
}

TEST(TrainingCasePolicy, EveryCatalogueTrainingGpuHasANodeType) {
  for (const char* gpu : {"V100-SXM3-32GB", "A100-SXM4-40GB", "A100-SXM4-80GB", "A800-SXM4-80GB", "H100-SXM5-80GB",
                          "H800-SXM5-80GB", "H200-SXM-141GB", "B200", "B300", "GB200", "GB300", "GH200", "L40S"}) {
    std::vector<std::string> defaults;
    YAML::Node s = training_case_scenario(training_case(gpu, "FlashAttention-2"), defaults);
    EXPECT_NO_THROW(scenario_from_yaml(s, "case t")) << gpu;
  }
}

TEST(TrainingCasePolicy, AnH100StatedAsHbm2eIsThePowerLimitedHbm2ePart) {
  const YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  const YAML::Node part = built_with_notes(YAML::Clone(c), "each H100 GPU is equipped with 96GB HBM2e, 500W limit");
  EXPECT_EQ(part["cluster"]["gpu"].as<std::string>(), "H100-SXM5-96GB-HBM2e");
  EXPECT_EQ(part["cluster"]["node"].as<std::string>(), "dgx-h100");  // the same HGX H100 board
  const YAML::Node sxm = built_with_notes(YAML::Clone(c), "H100 SXM5 80GB HBM3");
  EXPECT_EQ(sxm["cluster"]["gpu"].as<std::string>(), "H100-SXM5-80GB");
  YAML::Node a100 = training_case("A100-SXM4-80GB", "FlashAttention-2");  // an HBM2e part already
  EXPECT_EQ(built_with_notes(a100, "HBM2e")["cluster"]["gpu"].as<std::string>(), "A100-SXM4-80GB");
  // Slower than the SXM5 by at least its lower tensor peak (0.894x) and at most its lower HBM
  // bandwidth (2.4 vs 3.35 TB/s): every kernel is bound by one or the other (the host's fixed
  // work per step, the same on both, left out).
  const auto step = [](YAML::Node scenario) {
    scenario["host"]["step_overhead"] = "0 s";
    return simulate_training(scenario_from_yaml(scenario, "case t").training, {}).step_time_s;
  };
  const double ratio = step(part) / step(sxm);
  EXPECT_GT(ratio, 989.0 / 884.0 - 1e-3);
  EXPECT_LT(ratio, 3350.0 / 2400.0);
}

TEST(TrainingCasePolicy, HostCopiesRunAtThePinnedPcieRate) {
  YAML::Node c = YAML::Load(R"(
id: copy
kind: memory
source: {key: test}
hardware: {gpu: H100-SXM5-80GB, num_gpus: 1}
op: {name: h2d, gpus: 1}
measured: {bandwidth_GBps: 50.0}
)");
  CaseOutcome o;
  predict_host_copy_case(c, o);
  EXPECT_NEAR(o.predicted, 63.0 * 0.85, 1e-9);  // DGX H100: PCIe Gen5 x16, 63 GB/s per direction
  c["hardware"]["gpu"] = "A100-SXM4-80GB";
  predict_host_copy_case(c, o);
  EXPECT_LT(o.predicted, 0.55 * 63.0 * 0.85);  // Gen4: half the rate
  c["op"]["name"] = "d2d_copy";                // direction count unknown: refused, with the reason
  EXPECT_THROW(predict_host_copy_case(c, o), std::runtime_error);
}

TEST(TrainingCasePolicy, PeerCopiesRunAtTheNvlinkRateForEachDirectionCounted) {
  YAML::Node c = YAML::Load(R"(
id: peer
kind: memory
source: {key: test, title: a benchmark page}
hardware: {gpu: H100-SXM5-80GB, num_gpus: 2}
op: {name: d2d_copy}
measured: {bandwidth_GBps: 600.0}
notes: nvbandwidth one way copy
)");
  CaseOutcome o;
  predict_host_copy_case(c, o);
  const double one_way = o.predicted;
  EXPECT_NEAR(one_way, 450.0 * 0.82, 1e-9);  // NVLink 4 per direction x NCCL Simple's 0.82 (intra_node.yaml)
  c["notes"] = "the bidirectional test";
  predict_host_copy_case(c, o);
  EXPECT_NEAR(o.predicted, 2 * one_way, 1e-9);
  // Unstated: a figure one direction cannot carry (above NVLink 4's 450 GB/s line rate) counts
  // both; one within it is refused (either reading is possible), whatever the source.
  c["notes"] = "Device-to-Device read";
  c["measured"]["bandwidth_GBps"] = 440.0;
  EXPECT_THROW(predict_host_copy_case(c, o), std::runtime_error);
  c["measured"]["bandwidth_GBps"] = 460.0;
  predict_host_copy_case(c, o);
  EXPECT_NEAR(o.predicted, 2 * one_way, 1e-9);
  c["measured"]["bandwidth_GBps"] = 600.0;
  // PCIe-only GPUs: the copy engines' peer copy over their shared PCIe switch (Gen4 x16, 31.5 GB/s
  // per direction) at the pinned ratio.
  c["hardware"]["gpu"] = "L40S";
  predict_host_copy_case(c, o);
  EXPECT_NEAR(o.predicted, 2 * 31.5 * 0.85, 1e-9);
  // A full mesh of eight (MI300X, 448 GB/s per GPU over 7 Infinity Fabric links): a pair has one.
  c["hardware"]["gpu"] = "MI300X";
  predict_host_copy_case(c, o);
  EXPECT_NEAR(o.predicted, 2 * 448.0 / 7 * 0.82, 1e-9);  // at the xgmi3 Simple efficiency
}

TEST(TrainingCasePolicy, AStatedDualPipeScheduleIsReplayedWithoutInterleaving) {
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  c["parallelism"]["pp"] = 2;
  c["parallelism"]["dp"] = 4;
  c["parallelism"]["zero"] = 1;
  c["parallelism"]["global_batch"] = 16;  // 4 micro-batches per replica: 2 per direction
  const YAML::Node dual = built_with_notes(c, "pipeline schedule: DualPipe.");
  EXPECT_EQ(dual["parallelism"]["schedule"].as<std::string>(), "dualpipe");
  EXPECT_EQ(dual["parallelism"]["vp"].as<int>(), 1);  // the Hopper-era vp policy does not apply
  CaseOutcome o;
  c["notes"] = "pipeline schedule: DualPipe.";
  EXPECT_NO_THROW(predict_training_case(c, o));
  EXPECT_GT(o.predicted, 0.0);
  const YAML::Node plain = built_with_notes(c, "pipeline schedule: 1F1B.");
  EXPECT_FALSE(plain["parallelism"]["schedule"]);
}

TEST(TrainingCasePolicy, AnHfuOrAWholeJobRateAloneIsComparedAsPublished) {
  YAML::Node c = training_case("A100-SXM4-80GB", "");
  c["measured"]["step_time_s"] = YAML::Node();
  const auto outcome = [&]() {
    CaseOutcome o;
    predict_training_case(c, o);
    return o;
  };
  const Scenario s = scenario_from_yaml(YAML::Load(outcome().scenario_yaml), "case t");
  const TrainingResult r = simulate_training(s.training, {});
  c["measured"]["other"]["samples_per_s"] = 100.0;
  CaseOutcome o = outcome();
  EXPECT_EQ(o.metric, "samples_per_s (the whole job's)");
  EXPECT_DOUBLE_EQ(o.predicted, r.tokens_per_s / s.training.model.seq_len);
  c["measured"]["other"]["tokens_per_s"] = 1e5;  // both: the tokens
  o = outcome();
  EXPECT_EQ(o.metric, "tokens_per_s (the whole job's)");
  EXPECT_DOUBLE_EQ(o.predicted, r.tokens_per_s);
  EXPECT_DOUBLE_EQ(o.measured, 1e5);
  c["measured"]["hfu"] = 0.5;  // a published utilisation wins over the rates kept in other
  o = outcome();
  EXPECT_EQ(o.metric, "hfu");
  EXPECT_DOUBLE_EQ(o.predicted, r.hfu);
}

TEST(TrainingCasePolicy, APerLayerTimeIsComparedWithOneLayerForwardPlusBackward) {
  YAML::Node c = training_case("A100-SXM4-80GB", "");
  c["parallelism"]["tp"] = 8;
  c["parallelism"]["dp"] = 1;
  c["parallelism"]["global_batch"] = YAML::Node();  // null: not published with per-layer times
  c["measured"]["step_time_s"] = YAML::Node();
  CaseOutcome refused;
  predict_training_case(c, refused);  // the batch policy fills the batch; nothing to compare
  EXPECT_NE(refused.error.find("publishes no step time"), std::string::npos) << refused.error;
  c["measured"]["other"]["layer_forward_ms"] = 2.0;
  c["measured"]["other"]["layer_backward_ms"] = 4.0;
  CaseOutcome o;
  predict_training_case(c, o);
  EXPECT_EQ(o.metric, "layer_fwd+bwd_ms");
  EXPECT_DOUBLE_EQ(o.measured, 6.0);
  // The prediction is the scenario's own layer timing, one micro-batch alone on its TP group.
  const Scenario s = scenario_from_yaml(YAML::Load(o.scenario_yaml), "case t");
  const TrainingResult r = simulate_training(s.training, {});
  EXPECT_DOUBLE_EQ(o.predicted, 1e3 * (r.layer.forward_s + r.layer.backward_s));
  EXPECT_GT(r.layer.backward_s, r.layer.forward_s);
  EXPECT_LT(1e3 * r.layer.forward_s * c["model"]["layers"].as<int>(), 1e3 * r.step_time_s);
}

TEST(TrainingCasePolicy, PreSequenceParallelMegatronRunsTensorParallelBackwardInSequence) {
  const auto async = [](const std::string& gpu, bool sp) {
    YAML::Node c = training_case(gpu, "");
    c["parallelism"]["tp"] = 8;
    c["parallelism"]["dp"] = 1;
    c["parallelism"]["sequence_parallel"] = sp;
    std::vector<std::string> defaults;
    const YAML::Node s = training_case_scenario(c, defaults);
    return !s["parallelism"]["async_tp_backward"] || s["parallelism"]["async_tp_backward"].as<bool>();
  };
  EXPECT_FALSE(async("A100-SXM4-80GB", false));
  EXPECT_TRUE(async("A100-SXM4-80GB", true));
  EXPECT_TRUE(async("H100-SXM5-80GB", false));
}

TEST(TrainingCasePolicy, AmpereEraPipelinesScatterTheirSendsOverTensorParallelRanks) {
  const auto scattered = [](const std::string& gpu, int tp, int pp, bool sp) {
    YAML::Node c = training_case(gpu, "");
    c["hardware"]["num_gpus"] = tp * pp;
    c["parallelism"]["tp"] = tp;
    c["parallelism"]["pp"] = pp;
    c["parallelism"]["dp"] = 1;
    c["parallelism"]["zero"] = 0;
    c["parallelism"]["sequence_parallel"] = sp;
    std::vector<std::string> defaults;
    const YAML::Node s = training_case_scenario(c, defaults);
    return s["parallelism"]["p2p_scatter_gather"] && s["parallelism"]["p2p_scatter_gather"].as<bool>();
  };
  EXPECT_TRUE(scattered("A100-SXM4-80GB", 8, 2, false));   // Megatron-LM / DeepSpeed of 2020-22
  EXPECT_FALSE(scattered("A100-SXM4-80GB", 8, 2, true));   // already split by sequence parallelism
  EXPECT_FALSE(scattered("A100-SXM4-80GB", 1, 2, false));  // nothing to scatter
  EXPECT_FALSE(scattered("A100-SXM4-80GB", 8, 1, false));  // no pipeline
  EXPECT_FALSE(scattered("H100-SXM5-80GB", 8, 2, false));  // Megatron-Core sends whole tensors
}

TEST(TrainingCasePolicy, MegatronDeepSpeedNamedRunsDeepSpeedsPipelineWithoutSequenceParallelism) {
  // DeepSpeed's pipeline engine has no interleaved schedule; Megatron-DeepSpeed leaves SP off.
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["hardware"]["num_gpus"] = 32;
  c["model"]["layers"] = 32;
  c["parallelism"]["tp"] = 2;
  c["parallelism"]["pp"] = 4;
  c["parallelism"]["dp"] = 4;
  c["parallelism"]["global_batch"] = 64;
  const YAML::Node hopper = built_with_notes(c, "Megatron-LM.");
  EXPECT_GT(hopper["parallelism"]["vp"].as<int>(), 1);
  EXPECT_TRUE(hopper["parallelism"]["sequence_parallel"].as<bool>());
  const YAML::Node ds = built_with_notes(c, "A fork of Megatron-DeepSpeed (commit 6732bc9).");
  EXPECT_EQ(ds["parallelism"]["vp"].as<int>(), 1);
  EXPECT_FALSE(ds["parallelism"]["sequence_parallel"].as<bool>());
}

TEST(TrainingCasePolicy, TorchtitanPipelinesTakeItsMicroBatchAndStageDefaults) {
  // torchtitan splits the local batch into pp x stages-per-rank micro-batches and runs 2 stages
  // per rank under a looped (interleaved) schedule, 1 under 1F1B.
  const auto plan = [](const std::string& notes, bool stated_vp) {
    YAML::Node c = training_case("H100-SXM5-80GB", "");
    c["hardware"]["num_gpus"] = 64;
    c["model"]["layers"] = 16;
    c["parallelism"]["tp"] = 8;
    c["parallelism"]["pp"] = 4;
    c["parallelism"]["dp"] = 2;
    c["parallelism"]["zero"] = 1;
    c["parallelism"]["global_batch"] = 64;  // 32 per data-parallel rank
    c["parallelism"]["micro_batch"] = YAML::Node();
    if (stated_vp) c["parallelism"]["vp"] = 1;
    const YAML::Node pl = built_with_notes(c, notes)["parallelism"];
    return std::make_pair(pl["micro_batch"].as<int>(), pl["vp"].as<int>());
  };
  EXPECT_EQ(plan("torchtitan, pipeline schedule 1F1B", true), std::make_pair(8, 1));               // 4 micro-batches
  EXPECT_EQ(plan("torchtitan, pipeline schedule Interleaved 1F1B", false), std::make_pair(4, 2));  // 8
  EXPECT_EQ(plan("torchtitan, pipeline schedule 1F1B", false), std::make_pair(8, 1));
  EXPECT_EQ(plan("Megatron-LM", false).first, 1);  // the global default elsewhere
}

TEST(TrainingCasePolicy, SelectiveRecomputationOfTheModulesTheNotesName) {
  const auto modules = [](const std::string& recompute, const std::string& notes) {
    YAML::Node c = training_case("H100-SXM5-80GB", "");
    c["parallelism"]["recompute"] = recompute;
    const YAML::Node pl = built_with_notes(c, notes)["parallelism"];
    std::string out;
    for (const auto& n : pl["recompute_modules"]) out += n.as<std::string>() + " ";
    return out;
  };
  // A dense MHA model has no MLA up-projection and no experts: only the norms are taken.
  EXPECT_EQ(modules("selective", "recompute: RMSNorm and MLA up-projection recomputed. precision: FP8"), "layernorm ");
  EXPECT_EQ(modules("selective", "recompute: core attention and SwiGLU output recomputed."), "core_attn ");
  EXPECT_EQ(modules("selective", "Megatron-LM"), "");  // Megatron-Core's default (the core attention)
  EXPECT_EQ(modules("full", "recompute: RMSNorm recomputed."), "");
  // Megatron-Core's flag quoted as run: its module names, up to the first word that is not one,
  // those of the experts only where the model has experts.
  EXPECT_EQ(modules("selective", "(--recompute-granularity selective --recompute-modules layernorm moe_act: output"),
            "layernorm ");
  EXPECT_EQ(modules("selective", "--recompute-modules layernorm moe mlp, then"), "layernorm mlp ");
  // Either spelling of the flag, or the config key with a list.
  EXPECT_EQ(modules("selective", "launched with --recompute_modules layernorm"), "layernorm ");
  EXPECT_EQ(modules("selective", "recompute_modules: [layernorm, mlp] in the recipe"), "layernorm mlp ");
  EXPECT_EQ(modules("selective", "recompute modules 'layernorm' (NeMo recipe)"), "layernorm ");
  YAML::Node moe = training_case("H100-SXM5-80GB", "");
  moe["model"]["moe"] = YAML::Load("{experts: 8, top_k: 2}");
  moe["parallelism"]["recompute"] = "selective";
  std::string listed;
  for (const auto& n :
       built_with_notes(moe, "--recompute-modules layernorm moe_act")["parallelism"]["recompute_modules"])
    listed += n.as<std::string>() + " ";
  EXPECT_EQ(listed, "layernorm moe_act ");
}

TEST(TrainingCasePolicy, StatedCapacityFactorTiedEmbeddingsAndAttentionBackendAreRead) {
  YAML::Node moe = training_case("H100-SXM5-80GB", "");
  moe["model"]["moe"] = YAML::Load("{experts: 8, top_k: 2}");
  const auto capacity = [&](const std::string& notes) {
    const YAML::Node m = built_with_notes(moe, notes)["model"]["moe"];
    return m["capacity_factor"] ? m["capacity_factor"].as<double>() : 0.0;
  };
  EXPECT_EQ(capacity("we use token drop training with a capacity factor equal to 1 for benchmarking"), 1.0);
  EXPECT_EQ(capacity("moe_token_dispatcher_type alltoall, moe_expert_capacity_factor 1.25, padded"), 1.25);
  EXPECT_EQ(capacity("dropless; capacity factor / token dropping not used"), 0.0);
  EXPECT_EQ(capacity("Megatron-LM"), 0.0);

  const auto tied = [](const std::string& notes) {
    const YAML::Node m = built_with_notes(training_case("H100-SXM5-80GB", ""), notes)["model"];
    return m["tied_embeddings"] ? std::string(m["tied_embeddings"].as<bool>() ? "tied" : "untied")
                                : std::string("unstated");
  };
  EXPECT_EQ(tied("SwiGLU, RMSNorm, untied embeddings, 128 experts"), "untied");
  EXPECT_EQ(tied("128 experts of FFN 768, top-8, untied, vocab 151936"), "untied");
  EXPECT_EQ(tied("flags: --untie-embeddings-and-output-weights --use-flash-attn"), "untied");
  EXPECT_EQ(tied("vocab 131072, tied embeddings)"), "tied");
  EXPECT_EQ(tied("tie_word_embeddings: false"), "untied");
  EXPECT_EQ(tied("tied embeddings here, untied there"), "unstated");
  EXPECT_EQ(tied("Megatron-LM"), "unstated");
  // A stated reading wins over the catalogue family's (Gemma ties its embeddings).
  YAML::Node gemma = training_case("H100-SXM5-80GB", "");
  gemma["model"] = YAML::Load("{name: Gemma 7B, seq_len: 2048, moe: null}");  // the shape from the catalogue
  EXPECT_TRUE(built_with_notes(gemma, "")["model"]["tied_embeddings"].as<bool>());
  EXPECT_FALSE(built_with_notes(gemma, "untied embeddings")["model"]["tied_embeddings"].as<bool>());

  YAML::Node h100 = training_case("H100-SXM5-80GB", "");
  EXPECT_EQ(built_with_notes(h100, "env NVTE_FUSED_ATTN=0, NCCL_NVLS_ENABLE=0")["model"]["attention"].as<std::string>(),
            "flash2");
  EXPECT_EQ(built_with_notes(h100, "NVTE_FUSED_ATTN=1")["model"]["attention"].as<std::string>(), "flash");
}

TEST(TrainingCasePolicy, TorchtitansSelectiveCheckpointingIsItsOpOrLayerPolicy) {
  const auto built = [](const std::string& notes) {
    YAML::Node c = training_case("H100-SXM5-80GB", "");
    c["parallelism"]["recompute"] = "selective";
    return built_with_notes(c, notes)["parallelism"];
  };
  EXPECT_EQ(built("torchtitan, selective activation checkpointing")["recompute"].as<std::string>(), "op");
  const YAML::Node layer = built("torchtitan; checkpointing of every 2nd layer");
  EXPECT_EQ(layer["recompute"].as<std::string>(), "full");
  EXPECT_EQ(layer["recompute_layers"].as<int>(), 2);  // 4 layers, every 2nd
  EXPECT_EQ(built("Megatron-LM")["recompute"].as<std::string>(), "selective");
}

TEST(TrainingCasePolicy, MoeLayerPatternsInTheirPublishedForms) {
  const auto moe_of = [](const std::string& freq) {
    YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
    c["model"]["layers"] = 8;
    c["model"]["moe"]["experts"] = 8;
    c["model"]["moe"]["top_k"] = 2;
    c["model"]["moe"]["moe_layer_freq"] = freq;
    std::vector<std::string> defaults;
    const YAML::Node m = training_case_scenario(c, defaults)["model"]["moe"];
    return std::make_pair(m["first_dense_layers"] ? m["first_dense_layers"].as<int>() : 0,
                          m["layer_freq"] ? m["layer_freq"].as<int>() : 1);
  };
  EXPECT_EQ(moe_of("2"), std::make_pair(0, 2));
  EXPECT_EQ(moe_of("first 3 layers dense"), std::make_pair(3, 1));
  EXPECT_EQ(moe_of("every other layer"), std::make_pair(0, 2));
  EXPECT_EQ(moe_of("MoE every 4 layers"), std::make_pair(0, 4));
  EXPECT_EQ(moe_of("([0]*3+[1]*5)"), std::make_pair(3, 1));  // Megatron's --moe-layer-freq list
  EXPECT_EQ(moe_of("[1,0]*4"), std::make_pair(0, 2));
  EXPECT_EQ(moe_of("([0]*3+[1]*1)*2"), std::make_pair(0, 4));  // one per period, moved to its start
  EXPECT_EQ(moe_of("[1]*8"), std::make_pair(0, 1));
  EXPECT_THROW(moe_of("[1]*7"), std::runtime_error);        // not the model's 8 layers
  EXPECT_THROW(moe_of("[1,1,0,0]*2"), std::runtime_error);  // two per period: no layer_freq says that
  EXPECT_THROW(moe_of("some layers"), std::runtime_error);
}

TEST(TrainingCasePolicy, ARemainderMicroBatchIsReplayedWholeAndTheStepScaled) {
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  c["parallelism"]["dp"] = 8;
  c["parallelism"]["micro_batch"] = 2;
  c["parallelism"]["global_batch"] = 40;  // 5 sequences per rank: micro-batches of 2, 2 and 1
  CaseOutcome o;
  predict_training_case(c, o);
  const YAML::Node s = YAML::Load(o.scenario_yaml);
  EXPECT_EQ(s["parallelism"]["global_batch"].as<int>(), 48);  // 3 whole micro-batches of 2 per rank
  const TrainingResult r = simulate_training(scenario_from_yaml(s, "case t").training, {});
  EXPECT_DOUBLE_EQ(o.predicted, r.step_time_s * 40.0 / 48.0);
  c["parallelism"]["global_batch"] = 41;  // not even a whole number of sequences per rank
  EXPECT_THROW(predict_training_case(c, o), std::exception);
}

TEST(TrainingCasePolicy, NodeCountsFollowTheNodeTypeAndSpreadPartialNodesEvenly) {
  const auto cluster_of = [](const std::string& gpu, int gpus, YAML::Node per_node) {
    YAML::Node c = training_case(gpu, "FlashAttention-2");
    c["hardware"]["num_gpus"] = gpus;
    c["hardware"]["gpus_per_node"] = per_node;
    c["parallelism"]["dp"] = gpus;
    c["parallelism"]["global_batch"] = gpus;
    std::vector<std::string> defaults;
    const YAML::Node s = training_case_scenario(c, defaults);
    EXPECT_NO_THROW(scenario_from_yaml(s, "case t")) << gpu << " x " << gpus;
    const YAML::Node cl = s["cluster"];
    return std::make_pair(cl["nodes"].as<int>(), cl["gpus_per_node"] ? cl["gpus_per_node"].as<int>() : 0);
  };
  EXPECT_EQ(cluster_of("H100-SXM5-80GB", 16, YAML::Node()), std::make_pair(2, 0));   // 2 DGX nodes
  EXPECT_EQ(cluster_of("H100-SXM5-80GB", 12, YAML::Node(8)), std::make_pair(2, 6));  // 12 = 2 x 6
  EXPECT_EQ(cluster_of("H100-SXM5-80GB", 4, YAML::Node(8)), std::make_pair(1, 4));   // one partial node
  EXPECT_EQ(cluster_of("GB200", 144, YAML::Node()), std::make_pair(2, 0));           // two NVL72 racks
  EXPECT_EQ(cluster_of("GB200", 144, YAML::Node(4)), std::make_pair(2, 0));          // 4 per tray, 72 per rack
  EXPECT_EQ(cluster_of("GB200", 1024, YAML::Node(4)), std::make_pair(16, 64));       // racks of 16 whole trays
  // Four A100 SXM4 per node: the HGX 4-GPU board (NVLink all-to-all, no NVSwitch), unless stated.
  const auto node_of = [](const char* intra) {
    YAML::Node c = training_case("A100-SXM4-40GB", "FlashAttention-2");
    c["hardware"]["num_gpus"] = 16;
    c["hardware"]["gpus_per_node"] = 4;
    c["hardware"]["intra_node"] = intra;
    c["parallelism"]["dp"] = 16;
    c["parallelism"]["global_batch"] = 16;
    std::vector<std::string> defaults;
    return training_case_scenario(c, defaults)["cluster"]["node"].as<std::string>();
  };
  EXPECT_EQ(node_of("nvlink"), "hgx-a100-4gpu");
  EXPECT_EQ(node_of("nvswitch"), "dgx-a100-40gb");
  // A NIC count stated beside a tray's GPU count is the tray's: the rack keeps the NICs per GPU.
  const auto nics_of = [](int gpus, int tray_gpus, int tray_nics) {
    YAML::Node c = training_case("GB300", "FlashAttention-2");
    c["hardware"]["num_gpus"] = gpus;
    c["hardware"]["gpus_per_node"] = tray_gpus;
    c["hardware"]["inter_node"]["nics_per_node"] = tray_nics;
    c["parallelism"]["dp"] = gpus;
    c["parallelism"]["global_batch"] = gpus;
    std::vector<std::string> defaults;
    return training_case_scenario(c, defaults)["cluster"]["nics_per_node"].as<int>();
  };
  EXPECT_EQ(nics_of(144, 4, 4), 72);    // two whole racks: 72 NICs each
  EXPECT_EQ(nics_of(512, 4, 4), 64);    // 512 GPUs as 8 racks of 64
  EXPECT_EQ(nics_of(144, 72, 18), 18);  // a stated rack of 72 with 18 NICs: as stated
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  c["hardware"]["num_gpus"] = 13;
  std::vector<std::string> defaults;
  EXPECT_THROW(training_case_scenario(c, defaults), std::runtime_error);
}

TEST(RunOptions, LayerTimingIsOptionalAndLeavesTheStepAlone) {
  // Sweeps, plan search and compare skip the one-layer replays; the step must not change.
  const Scenario s = load_scenario(STACKSIM_SOURCE_DIR "/scenarios/fsdp-7b-8xh100.yaml", {});
  const TrainingResult with = simulate_training(s.training, {});
  RunOptions skip;
  skip.layer_timing = false;
  const TrainingResult without = simulate_training(s.training, skip);
  EXPECT_TRUE(with.has_layer_timing);
  EXPECT_GT(with.layer.forward_s, 0.0);
  EXPECT_FALSE(without.has_layer_timing);
  EXPECT_EQ(without.step_time_s, with.step_time_s);
  EXPECT_TRUE(training_json(s, without)["layer_timing"].is_null());
}

TEST(TrainingCasePolicy, ANullFieldReadAsAValueSaysItIsNull) {
  try {
    get<int>(YAML::Load("gpus: null"), "gpus");
    FAIL() << "expected a refusal";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "gpus is null");
  }
}

TEST(TrainingCasePolicy, UnstatedHeadsAndGpuCountAreFilledFromTheirNeighbours) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["model"]["heads"] = YAML::Node();
  c["model"]["kv_heads"] = YAML::Node();
  c["hardware"]["num_gpus"] = YAML::Node();
  c["parallelism"]["tp"] = 2;
  c["parallelism"]["dp"] = 4;
  std::vector<std::string> defaults;
  const YAML::Node s = training_case_scenario(c, defaults);
  EXPECT_EQ(s["model"]["heads"].as<int>(), 8);  // 1024 / 128
  const Scenario built = scenario_from_yaml(s, "case t");
  EXPECT_EQ(built.training.plan.num_gpus(), 8);  // tp 2 x pp 1 x dp 4
  // Neither can be filled: refused with the field named.
  c["model"]["hidden"] = 1000;
  EXPECT_THROW(training_case_scenario(c, defaults), std::runtime_error);
  c = training_case("H100-SXM5-80GB", "");
  c["hardware"]["num_gpus"] = YAML::Node();
  c["parallelism"]["dp"] = YAML::Node();
  EXPECT_NE(refusal_of(c).find("hardware.num_gpus"), std::string::npos) << refusal_of(c);
}

TEST(TrainingCasePolicy, HybridShardInTheNotesShardsInsideANode) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["hardware"]["num_gpus"] = 32;
  c["parallelism"]["dp"] = 32;
  c["parallelism"]["global_batch"] = 32;
  c["notes"] = "optimizer sharding: PyTorch FSDP HYBRID_SHARD.";
  std::vector<std::string> defaults;
  const Scenario built = scenario_from_yaml(training_case_scenario(c, defaults), "case t");
  EXPECT_EQ(built.training.plan.shard_size, 8);  // the 8 GPUs of a node
  c["notes"] = "optimizer sharding: PyTorch FSDP FULL_SHARD.";
  EXPECT_FALSE(training_case_scenario(c, defaults)["parallelism"]["shard_size"]);
  // The same said in words: HSDP, hybrid-sharded data parallelism, shards kept inside a VM.
  for (const char* words : {"FSDP2 with HSDP.", "a hybrid-sharded data parallelism",
                            "parameters sharded FSDP-style over the 8 GPUs of a VM and replicated across VMs"}) {
    c["notes"] = words;
    EXPECT_EQ(scenario_from_yaml(training_case_scenario(c, defaults), "case t").training.plan.shard_size, 8) << words;
  }
  // Quoted advice and an open alternative say nothing of this run: sharded over all 32.
  for (const char* words : {"docs: \"For smaller models like 7b, HSDP is preferred; for larger models FSDP will be a "
                            "necessity.\" The sharding strategy of this row is not stated.",
                            "zero 3 = FSDP family (full or hybrid shard)."}) {
    c["notes"] = words;
    EXPECT_FALSE(training_case_scenario(c, defaults)["parallelism"]["shard_size"]) << words;
  }
  // A JAX mesh's fsdp axis names the shard group; a table's FSDP on/off flag does not.
  c["notes"] = "mesh data=-1, fsdp=16: a hybrid-sharded data parallelism.";
  EXPECT_EQ(scenario_from_yaml(training_case_scenario(c, defaults), "case t").training.plan.shard_size, 16);
  c["notes"] = "FSDP = 1 in the table (--use-torch-fsdp2).";
  EXPECT_FALSE(training_case_scenario(c, defaults)["parallelism"]["shard_size"]);
  // torchtitan's shard degree; a shard group inside a node said in other words.
  c["notes"] = "torchtitan HSDP: data_parallel_shard_degree = 4, replicate 8.";
  EXPECT_EQ(scenario_from_yaml(training_case_scenario(c, defaults), "case t").training.plan.shard_size, 4);
  c["notes"] = "ZeRO-1 optimizer states distributed within 8 GPUs in a single node.";
  EXPECT_EQ(scenario_from_yaml(training_case_scenario(c, defaults), "case t").training.plan.shard_size, 8);
  // On a rack-scale machine the node of "inside a node" is the source's (a 4-GPU tray).
  YAML::Node g = training_case("GB200", "");
  g["hardware"]["num_gpus"] = 64;
  g["hardware"]["gpus_per_node"] = 4;
  g["parallelism"]["dp"] = 64;
  g["parallelism"]["global_batch"] = 64;
  g["notes"] = "FSDP2 HSDP: shard within a node, replicate across nodes.";
  EXPECT_EQ(scenario_from_yaml(training_case_scenario(g, defaults), "case t").training.plan.shard_size, 4);
}

TEST(TrainingCasePolicy, TheNotesVocabularySaysWhoseFsdp) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["hardware"]["num_gpus"] = 8;
  c["parallelism"]["dp"] = 8;
  c["parallelism"]["global_batch"] = 8;
  c["parallelism"]["zero"] = 3;
  const auto impl = [&](const std::string& notes) {
    return scenario_from_yaml(built_with_notes(c, notes), "case t").training.plan.fsdp_impl;
  };
  EXPECT_EQ(impl("optimizer sharding: PyTorch FSDP FULL_SHARD."), stacksim::workload::FsdpImpl::Fsdp1);
  EXPECT_EQ(impl("FSDP2 (full shard), FSDP mixed-precision mode: DEFAULT."), stacksim::workload::FsdpImpl::Fsdp2);
  EXPECT_EQ(impl("FSDP = 8 (Megatron FSDP over the data-parallel ranks)."), stacksim::workload::FsdpImpl::Megatron);
  EXPECT_EQ(impl(""), stacksim::workload::FsdpImpl::Fsdp2);
  EXPECT_EQ(impl("PyTorch 2.3 FSDP1 with torch.compile"), stacksim::workload::FsdpImpl::Fsdp1);
  EXPECT_EQ(impl("FSDP v1 here; FSDP2 in a later post"), stacksim::workload::FsdpImpl::Fsdp2);  // FSDP2 named wins
}

TEST(TrainingCasePolicy, TheNotesPrecisionStatementSaysTheFp8Recipe) {
  YAML::Node c = training_case("B200", "");
  c["hardware"]["num_gpus"] = 8;
  c["parallelism"]["dp"] = 8;
  c["parallelism"]["global_batch"] = 8;
  c["parallelism"]["precision"] = "fp8";
  const auto recipe = [&](const std::string& notes) {
    return scenario_from_yaml(built_with_notes(c, notes), "case t").training.plan.fp8_recipe;
  };
  using stacksim::workload::Fp8Recipe;
  EXPECT_EQ(recipe("Precision FP8-MX (MXFP8 block scaling, 32x32 on Blackwell), typed as fp8."), Fp8Recipe::Mxfp8);
  EXPECT_EQ(recipe("Precision FP8-CS (per-tensor current scaling; the parenthesised FP8-MX figures are not used)."),
            Fp8Recipe::Current);
  EXPECT_EQ(recipe("Precision FP8 with per-tensor current scaling, as the page says."), Fp8Recipe::Current);
  EXPECT_EQ(recipe("FP8 via Transformer Engine."), Fp8Recipe::Delayed);
  EXPECT_EQ(recipe("torchao float8 training, tensorwise scaling."), Fp8Recipe::Current);
  EXPECT_EQ(recipe("Precision \"MXFP8\" as the table names it (block-scaled FP8)."), Fp8Recipe::Mxfp8);
  EXPECT_EQ(recipe("Precision: the row reads \"FP8-CS (FP8-MX)\"; this case uses the parenthesised FP8-MX figures."),
            Fp8Recipe::Mxfp8);
  EXPECT_EQ(recipe("recipe flag fp8_mx (MXFP8 block scaling)"), Fp8Recipe::Mxfp8);  // the recipe by its names
  EXPECT_EQ(recipe("Precision FP8-CS; the MXFP8 block scaling column is not used."), Fp8Recipe::Current);
}

TEST(TrainingCasePolicy, GatedMlpFamiliesNormaliseWithRmsNorm) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  std::vector<std::string> defaults;
  EXPECT_FALSE(training_case_scenario(c, defaults)["model"]["norm"]);  // GELU: LayerNorm, the default
  c["model"]["mlp"] = "swiglu";
  EXPECT_EQ(training_case_scenario(c, defaults)["model"]["norm"].as<std::string>(), "rmsnorm");
}

TEST(TrainingCasePolicy, EagerModulesAndEveryNthLayerCheckpointingAreReadFromTheNotes) {
  YAML::Node c = training_case("A100-SXM4-80GB", "");
  c["parallelism"]["recompute"] = "full";
  std::vector<std::string> defaults;
  YAML::Node built = training_case_scenario(c, defaults);
  EXPECT_FALSE(built["parallelism"]["kernels"]);
  EXPECT_FALSE(built["parallelism"]["recompute_layers"]);
  c["notes"] = "The model runs as eager PyTorch modules. Activation checkpointing of every 2nd layer.";
  built = training_case_scenario(c, defaults);
  const Scenario s = scenario_from_yaml(built, "case t");
  EXPECT_EQ(s.training.plan.kernels, stacksim::workload::Kernels::Eager);
  EXPECT_EQ(s.training.plan.recompute, stacksim::workload::Recompute::Full);
  EXPECT_EQ(s.training.plan.recompute_layers, 2);  // half of the 4 layers
  // Without full recomputation stated the note does not add any.
  c["parallelism"]["recompute"] = "none";
  EXPECT_FALSE(training_case_scenario(c, defaults)["parallelism"]["recompute_layers"]);
}

TEST(TrainingCasePolicy, AnExpertGroupBeyondDataParallelFoldsOverTensorParallelRanks) {
  // Megatron-Bridge's Qwen3-235B on DGX-H100 runs tp 2 with ep 32 over dp 16: only whole experts
  // (etp 1, parallel folding) let ep span tp*dp; an ep within dp*cp keeps experts split over tp.
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  c["model"]["moe"]["experts"] = 8;
  c["model"]["moe"]["top_k"] = 2;
  c["parallelism"]["tp"] = 2;
  c["parallelism"]["dp"] = 4;
  c["parallelism"]["global_batch"] = 4;
  c["parallelism"]["zero"] = 1;
  std::vector<std::string> defaults;
  c["parallelism"]["ep"] = 8;
  const Scenario folded = scenario_from_yaml(training_case_scenario(c, defaults), "case t");
  EXPECT_TRUE(folded.training.plan.experts_folded());
  c["parallelism"]["ep"] = 4;
  const Scenario split = scenario_from_yaml(training_case_scenario(c, defaults), "case t");
  EXPECT_FALSE(split.training.plan.experts_folded());
  EXPECT_EQ(split.training.plan.expert_tp(), 2);
  // Notes stating expert tensor parallel 1 fold the experts even where ep divides dp*cp.
  for (const char* said :
       {"expert-tensor-parallel 1, sequence parallel", "TP2 EP4 ETP1 VPP1", "--expert-tensor-parallel-size 1"}) {
    const Scenario stated = scenario_from_yaml(built_with_notes(c, said), "case t");
    EXPECT_TRUE(stated.training.plan.experts_folded()) << said;
  }
  EXPECT_FALSE(scenario_from_yaml(built_with_notes(c, "ETP2, expert-tensor-parallel 2"), "case t")
                   .training.plan.experts_folded());
}

TEST(TrainingCasePolicy, HeadDimAndSlidingWindowAreReadFromTheAttentionText) {
  YAML::Node c = training_case("H100-SXM5-80GB",
                               "GQA, head dim 64; sliding window of 128 tokens on alternate layers "
                               "(every 2nd layer full attention)");
  c["model"]["hidden"] = 1024;
  c["model"]["heads"] = 32;  // 32 x 64 = 2048 wide queries on hidden 1024
  c["model"]["kv_heads"] = 8;
  std::vector<std::string> defaults;
  const Scenario s = scenario_from_yaml(training_case_scenario(c, defaults), "case t");
  EXPECT_EQ(s.training.model.head_dim, 64);
  EXPECT_EQ(s.training.model.attention_window(0), 128);
  EXPECT_EQ(s.training.model.attention_window(1), 0);
  // A config key's spelling reads as the words.
  c["model"]["attention"] = "GQA, head_dim 64";
  EXPECT_EQ(scenario_from_yaml(training_case_scenario(c, defaults), "case t").training.model.head_dim, 64);
  // MLA's "RoPE head dim" is not a head dimension.
  EXPECT_FALSE(
      training_case_scenario(training_case("H100-SXM5-80GB", "MLA: kv compression 512, decoupled RoPE head dim 64"),
                             defaults)["model"]["head_dim"]);
}

TEST(TrainingCasePolicy, AStatedMultiTokenPredictionDepthAddsMtpLayers) {
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  std::vector<std::string> defaults;
  EXPECT_FALSE(training_case_scenario(c, defaults)["model"]["mtp_layers"]);
  c["notes"] = "active params (billions): 37. multi-token-prediction depth: 1. parallelism.dp: ZeRO-1";
  const Scenario s = scenario_from_yaml(training_case_scenario(c, defaults), "case t");
  EXPECT_EQ(s.training.model.mtp_layers, 1);
}

TEST(TrainingCaseInput, ZeroOrMismatchedCountsAreReasonsNotCrashes) {
  // Found by benchmarks/fuzz_cases.py: these divided by zero. Each now names what is wrong.
  const auto reason = [](const std::function<void(YAML::Node&)>& edit) {
    YAML::Node c = training_case("H100-SXM5-80GB", "");
    edit(c);
    std::vector<std::string> defaults;
    try {
      training_case_scenario(c, defaults);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(reason([](YAML::Node& c) { c["hardware"]["gpus_per_node"] = 0; }).find("gpus_per_node must be at least 1"),
            std::string::npos);
  EXPECT_NE(reason([](YAML::Node& c) { c["parallelism"]["micro_batch"] = 0; }).find("micro_batch must be at least 1"),
            std::string::npos);
  EXPECT_NE(reason([](YAML::Node& c) { c["parallelism"]["cp"] = 0; }).find("cp must be at least 1"), std::string::npos);
  // 3 GPUs cannot hold a data-parallel group of 8 with tp and pp left to infer.
  EXPECT_NE(reason([](YAML::Node& c) {
              c["hardware"]["num_gpus"] = 3;
              c["parallelism"]["tp"] = YAML::Node();
            }).find("not a multiple of dp * cp"),
            std::string::npos);
}

TEST(TrainingCasePolicy, AllGatherContextParallelismIsReadFromTheNotesAndCostsMore) {
  // Llama 3's context parallelism all-gathers K/V before the attention; Transformer Engine's
  // default ring runs the exchange under it. The same job: the ring is faster.
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["model"]["seq_len"] = 32768;
  c["parallelism"]["dp"] = 1;
  c["parallelism"]["cp"] = 8;
  c["parallelism"]["global_batch"] = 1;
  c["parallelism"]["zero"] = 1;
  const YAML::Node ring = built_with_notes(c, "");
  EXPECT_FALSE(ring["parallelism"]["cp_comm"]);
  const YAML::Node gathered = built_with_notes(c, "Context parallelism is all-gather based (Section 3.3.2).");
  // torchtitan's default rotate method gathers too.
  EXPECT_EQ(built_with_notes(c, "torchtitan, rotate method not stated")["parallelism"]["cp_comm"].as<std::string>(),
            "all_gather");
  // DeepSpeed-Ulysses named: the all-to-all sequence parallelism (32 heads split over cp 8).
  EXPECT_EQ(built_with_notes(c, "DeepSpeed-Ulysses sequence parallelism")["parallelism"]["cp_comm"].as<std::string>(),
            "all_to_all");
  // Said as the K/V all-gather itself, or by ring-flash-attn's Llama-3-style kernel.
  for (const char* words : {"ring-flash-attn's llama3_flash_attn_varlen_func", "an all-gather of K/V before attention"})
    EXPECT_EQ(built_with_notes(c, words)["parallelism"]["cp_comm"].as<std::string>(), "all_gather") << words;
  ASSERT_TRUE(gathered["parallelism"]["cp_comm"]);
  EXPECT_EQ(gathered["parallelism"]["cp_comm"].as<std::string>(), "all_gather");
  const double t_ring = simulate_training(scenario_from_yaml(ring, "ring").training, {}).step_time_s;
  const double t_gathered = simulate_training(scenario_from_yaml(gathered, "gathered").training, {}).step_time_s;
  EXPECT_LT(t_ring, t_gathered);
}

TEST(TrainingCasePolicy, DeepEpNamedInTheNotesDeduplicatesTheDispatch) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["hardware"]["num_gpus"] = 16;
  c["parallelism"]["dp"] = 16;
  c["parallelism"]["ep"] = 16;
  c["parallelism"]["global_batch"] = 16;
  c["model"]["moe"] = YAML::Load("{experts: 64, top_k: 8}");
  EXPECT_FALSE(built_with_notes(c, "")["parallelism"]["ep_dispatch"]);
  const YAML::Node s = built_with_notes(c, "Dispatcher: DeepEP (flex).");
  ASSERT_TRUE(s["parallelism"]["ep_dispatch"]);
  EXPECT_EQ(s["parallelism"]["ep_dispatch"].as<std::string>(), "deepep");
}

TEST(TrainingCasePolicy, ModelTflopsAreCountedTheSourcesWayForCausalAttention) {
  // A TFLOP/s figure from the Megatron MoE Model Zoo (Megatron-LM's 2025 throughput log) counts
  // the causal attention core at half; other sources the full s x s scores. Same run, same step:
  // the predicted TFLOP/s differ by the ratio of the two model-FLOP counts, here
  // (GEMMs + a/2) / (GEMMs + a) with the attention core a = 12 s h per token and layer.
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  c["measured"] = YAML::Load("{step_time_s: null, model_tflops_per_gpu: 300}");
  c["model"]["seq_len"] = 16384;
  CaseOutcome full, half;
  c["software"] = YAML::Load("{framework: megatron-core, version: null, year: 2024}");  // full count
  predict_training_case(c, full);
  c["software"] = YAML::Load("{framework: megatron-core, version: null, year: 2025}");  // the catalogue: causal_half
  predict_training_case(c, half);
  EXPECT_EQ(full.metric, "model_tflops_per_gpu");
  const double h = 1024, s = 16384, v = 50304, layers = 4;
  const double gemms = layers * 24 * h * h * 3 + 6 * h * v;  // QKV/out + 4h MLP (x3 for training), logits
  const double attention = layers * 12 * s * h;
  EXPECT_NEAR(half.predicted / full.predicted, (gemms + attention / 2) / (gemms + attention), 1e-9);
  EXPECT_LT(half.predicted, 0.75 * full.predicted);  // attention dominates at 16k tokens
  c["software"] = YAML::Load("{framework: megatron-core, version: '0.9', year: 2024}");  // 2024: full count
  CaseOutcome old;
  predict_training_case(c, old);
  EXPECT_DOUBLE_EQ(old.predicted, full.predicted);
}

TEST(TrainingCasePolicy, AGpuSpelledOtherwiseIsTheSameCatalogueGpu) {
  // A device name or a paper's spelling reaches the same profile and node type as the canonical
  // name, and the case's defaults say which part it was read as.
  CaseOutcome canonical, device;
  predict_training_case(training_case("H100-SXM5-80GB", ""), canonical);
  predict_training_case(training_case("NVIDIA H100 80GB HBM3", ""), device);
  EXPECT_EQ(device.predicted, canonical.predicted);
  EXPECT_NE(std::find(device.defaults.begin(), device.defaults.end(),
                      "hardware.gpu: 'NVIDIA H100 80GB HBM3' is the catalogue's H100-SXM5-80GB"),
            device.defaults.end());
  std::vector<std::string> defaults;
  EXPECT_EQ(training_case_scenario(training_case("a100 sxm4 40gb", ""), defaults)["cluster"]["node"].as<std::string>(),
            "dgx-a100-40gb");
  CaseOutcome unknown;
  EXPECT_THROW(predict_training_case(training_case("NVIDIA A40", ""), unknown), std::runtime_error);
}

TEST(TrainingCasePolicy, EnumeratedFieldsReadInAnyCase) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  CaseOutcome lower, upper;
  predict_training_case(c, lower);
  c["parallelism"]["precision"] = "BF16";
  c["parallelism"]["recompute"] = "None";
  c["model"]["mlp"] = "GeLU";
  predict_training_case(c, upper);
  EXPECT_EQ(upper.predicted, lower.predicted);
}

TEST(TrainingCasePolicy, AnUnstatedGlobalBatchIsAbout4MTokensInWholeMicroBatches) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["parallelism"]["global_batch"] = YAML::Node();
  c["measured"] = YAML::Load("{tokens_per_s_per_gpu: 3000}");  // a throughput, not a timed iteration
  std::vector<std::string> defaults;
  // 2^22 tokens / 2048 = 2048 sequences, 256 micro-batches of 1 on each of the 8 replicas.
  EXPECT_EQ(training_case_scenario(c, defaults)["parallelism"]["global_batch"].as<int>(), 2048);
  // With pipeline stages: a multiple of the stages (8192-token sequences: 512 of them, 32
  // micro-batches of 2 per replica, rounded up to 33 for 3 stages).
  c["model"]["seq_len"] = 8192;
  c["model"]["layers"] = 6;
  c["parallelism"]["micro_batch"] = 2;
  c["parallelism"]["pp"] = 3;
  c["parallelism"]["dp"] = 8;
  c["hardware"]["num_gpus"] = 24;
  EXPECT_EQ(training_case_scenario(c, defaults)["parallelism"]["global_batch"].as<int>(), 33 * 2 * 8);
  // A step time is then predicted, with the policy listed.
  CaseOutcome out;
  out.id = "t";
  predict_training_case(c, out);
  EXPECT_GT(out.predicted, 0);
  EXPECT_NE(std::find_if(out.defaults.begin(), out.defaults.end(),
                         [](const std::string& d) { return d.rfind("parallelism.global_batch: 528", 0) == 0; }),
            out.defaults.end());
}

TEST(TrainingCasePolicy, AnUnstatedPlanIsTheSmallestModelParallelSizeThatFits) {
  // A 13B-shaped model (40 heads) on 16 A100-40GB without recomputation: too big for one GPU or
  // for tp 2 / tp 4 alone; tp 8 does not divide 40 heads, so 8-way model parallelism is tp 4 x pp 2.
  YAML::Node c = thirteen_b_case("A100-SXM4-40GB");
  c["hardware"]["num_gpus"] = 16;
  for (const char* k : {"tp", "pp", "dp"}) c["parallelism"][k] = YAML::Node();
  c["parallelism"]["zero"] = 0;
  c["parallelism"]["global_batch"] = 64;
  std::vector<std::string> defaults;
  const YAML::Node s = training_case_scenario(c, defaults);
  const YAML::Node pl = s["parallelism"];
  EXPECT_EQ(pl["tp"].as<int>() * pl["pp"].as<int>() * pl["dp"].as<int>(), 16);
  EXPECT_EQ(40 % pl["tp"].as<int>(), 0);
  EXPECT_TRUE(fits_in_memory(scenario_from_yaml(s, "case t").training));
  // No smaller model-parallel size fits.
  const int mp = pl["tp"].as<int>() * pl["pp"].as<int>();
  for (const auto& [tp, pp] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {1, 2}, {4, 1}, {2, 2}, {1, 4}}) {
    if (tp * pp >= mp) continue;
    YAML::Node smaller = YAML::Clone(s);
    smaller["parallelism"]["tp"] = tp;
    smaller["parallelism"]["pp"] = pp;
    smaller["parallelism"]["dp"] = 16 / (tp * pp);
    EXPECT_FALSE(fits_in_memory(scenario_from_yaml(smaller, "case t").training)) << "tp " << tp << " pp " << pp;
  }
  EXPECT_EQ(defaults.front().rfind("parallelism.tp/pp/dp: ", 0), 0u) << defaults.front();
  // A small model needs none: every GPU a data-parallel replica.
  YAML::Node small = training_case("A100-SXM4-40GB", "");
  for (const char* k : {"tp", "pp", "dp"}) small["parallelism"][k] = YAML::Node();
  EXPECT_EQ(training_case_scenario(small, defaults)["parallelism"]["dp"].as<int>(), 8);
  // A stated tensor-parallel size is kept; only pp and dp are chosen.
  c["parallelism"]["tp"] = 2;
  const YAML::Node kept = training_case_scenario(c, defaults)["parallelism"];
  EXPECT_EQ(kept["tp"].as<int>(), 2);
  EXPECT_EQ(kept["tp"].as<int>() * kept["pp"].as<int>() * kept["dp"].as<int>(), 16);
}

TEST(TrainingCasePolicy, AStatedFabricFamilyWithoutARateTakesTheNodeTypesRateOnIt) {
  YAML::Node c = training_case("A100-SXM4-80GB", "");
  std::vector<std::string> defaults;
  EXPECT_FALSE(training_case_scenario(c, defaults)["cluster"]["nic"]);  // the DGX's own InfiniBand NIC
  c["hardware"]["inter_node"]["fabric"] = "roce";
  EXPECT_EQ(training_case_scenario(c, defaults)["cluster"]["nic"].as<std::string>(), "roce-200");
  c["hardware"]["inter_node"]["fabric"] = "infiniband";
  EXPECT_FALSE(training_case_scenario(c, defaults)["cluster"]["nic"]);
}

namespace {
bool mentions(const std::vector<std::string>& defaults, const std::string& text) {
  for (const auto& d : defaults)
    if (d.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(TrainingCasePolicy, ANamedPublicModelHasItsPublicShape) {
  // "Llama 2 70B" with its whole shape unstated: the catalogue's (the Llama 2 config.json).
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["model"] = YAML::Load(
      "{name: LLAMA2-70B, layers: null, hidden: null, heads: null, kv_heads: null, ffn_hidden: null,"
      " vocab: null, seq_len: null, mlp: null, moe: null, attention: null}");
  c["hardware"]["num_gpus"] = 64;
  c["parallelism"] = YAML::Load("{tp: 8, pp: 1, dp: 8, micro_batch: 1, global_batch: 64, recompute: full, zero: 1}");
  std::vector<std::string> defaults;
  const YAML::Node m = training_case_scenario(c, defaults)["model"];
  EXPECT_EQ(m["layers"].as<int>(), 80);
  EXPECT_EQ(m["kv_heads"].as<int>(), 8);
  EXPECT_EQ(m["ffn_hidden"].as<int>(), 28672);
  EXPECT_EQ(m["vocab"].as<int>(), 32000);
  EXPECT_EQ(m["seq_len"].as<int>(), 4096);
  EXPECT_EQ(m["norm"].as<std::string>(), "rmsnorm");
  EXPECT_TRUE(mentions(defaults, "model.layers: 80 (the catalogue's Llama 2 70B)"));

  // A stated field other than the entry's: a variant, nothing is taken (the rules fill the rest).
  YAML::Node variant = training_case("A100-SXM4-80GB", "");
  variant["model"]["name"] = "GPT-3 1.3B";
  variant["model"]["layers"] = 4;  // the test model's 4 layers, not GPT-3 1.3B's 24
  variant["model"]["vocab"] = YAML::Node();
  defaults.clear();
  const YAML::Node v = training_case_scenario(variant, defaults)["model"];
  EXPECT_EQ(v["layers"].as<int>(), 4);
  EXPECT_FALSE(v["tied_embeddings"]);
  EXPECT_FALSE(mentions(defaults, "catalogue's"));
  // The same with the layers it has: the entry's tied embeddings come with the name.
  variant["model"]["layers"] = 24;
  variant["model"]["hidden"] = 2048;
  variant["model"]["ffn_hidden"] = 8192;
  defaults.clear();
  EXPECT_TRUE(training_case_scenario(variant, defaults)["model"]["tied_embeddings"].as<bool>());
  EXPECT_TRUE(mentions(defaults, "model.vocab: 51200 (the catalogue's GPT-3 1.3B)"));
}

TEST(TrainingCasePolicy, ANamedMoeModelHasItsExpertsAndRouting) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["model"] = YAML::Load(
      "{name: DeepSeek-V3, layers: 61, hidden: 7168, heads: 128, kv_heads: null, ffn_hidden: null,"
      " vocab: null, seq_len: 4096, mlp: null, attention: null,"
      " moe: {experts: null, top_k: null, shared_experts: null, expert_ffn_hidden: null, moe_layer_freq: null}}");
  c["hardware"]["num_gpus"] = 64;
  c["parallelism"] =
      YAML::Load("{tp: 1, pp: 8, dp: 8, ep: 8, micro_batch: 1, global_batch: 64, recompute: full, zero: 1}");
  std::vector<std::string> defaults;
  const YAML::Node m = training_case_scenario(c, defaults)["model"];
  EXPECT_EQ(m["ffn_hidden"].as<int>(), 18432);
  EXPECT_EQ(m["moe"]["experts"].as<int>(), 256);
  EXPECT_EQ(m["moe"]["top_k"].as<int>(), 8);
  EXPECT_EQ(m["moe"]["shared_experts"].as<int>(), 1);
  EXPECT_EQ(m["moe"]["expert_ffn_hidden"].as<int>(), 2048);
  EXPECT_EQ(m["moe"]["first_dense_layers"].as<int>(), 3);
  EXPECT_EQ(m["moe"]["groups_per_token"].as<int>(), 4);
  EXPECT_EQ(m["mla"]["kv_lora_rank"].as<int>(), 512);  // MLA although the attention text is null
  const Scenario built = scenario_from_yaml(training_case_scenario(c, defaults), "case t");
  EXPECT_NEAR(built.training.model.total_params() / 671e9, 1.0, 0.02);
}

TEST(TrainingCasePolicy, AnUnstatedSequenceLengthIsTheEras) {
  YAML::Node c = training_case("A100-SXM4-80GB", "");
  c["model"]["seq_len"] = YAML::Node();
  std::vector<std::string> defaults;
  EXPECT_EQ(training_case_scenario(c, defaults)["model"]["seq_len"].as<int>(), 2048);
  c["hardware"]["gpu"] = "H100-SXM5-80GB";
  EXPECT_EQ(training_case_scenario(c, defaults)["model"]["seq_len"].as<int>(), 4096);
  c["model"]["name"] = "Llama 3 8B";  // named, but its stated shape is not Llama 3 8B's: still the era's
  EXPECT_EQ(training_case_scenario(c, defaults)["model"]["seq_len"].as<int>(), 4096);
}

TEST(TrainingCasePolicy, TorchtitansUnstatedAttentionIsPyTorchSdpasFlashAttention2) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  EXPECT_EQ(built_with_notes(c, "")["model"]["attention"].as<std::string>(), "flash");
  EXPECT_EQ(built_with_notes(c, "Run with torchtitan, FSDP2.")["model"]["attention"].as<std::string>(), "flash2");
  c["model"]["attention"] = "FlashAttention-3";  // a stated kernel is read literally
  EXPECT_EQ(built_with_notes(c, "Run with torchtitan.")["model"]["attention"].as<std::string>(), "flash");
  // A file name, a path or a negation does not name the framework as used.
  c["model"]["attention"] = YAML::Node();
  for (const char* notes : {"Figures from benchmarks/llama3_h100_202412_torchtitan.md.", "Megatron-LM, not torchtitan.",
                            "Shape from torchtitan/models/llama3/__init__.py"})
    EXPECT_EQ(built_with_notes(c, notes)["model"]["attention"].as<std::string>(), "flash") << notes;
  EXPECT_EQ(built_with_notes(c, "torchtitan's FSDP2 (torchtitan.toml).")["model"]["attention"].as<std::string>(),
            "flash2");
  // Nor does a component list pinning it at a commit (AMD Primus vendors both frameworks).
  EXPECT_EQ(
      built_with_notes(
          c, "Primus (Megatron backend; submodules Megatron-LM 5a676b36, torchtitan 4c4388f6).")["model"]["attention"]
          .as<std::string>(),
      "flash");
}

TEST(TrainingCasePolicy, TorchtitanWithoutAGlobalBatchTrainsOneLocalBatchPerRank) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["parallelism"]["global_batch"] = YAML::Node();
  c["parallelism"]["micro_batch"] = 2;
  c["measured"] = YAML::Load("{tokens_per_s_per_gpu: 3000}");  // a throughput, not a timed iteration
  EXPECT_EQ(built_with_notes(c, "torchtitan, FSDP2")["parallelism"]["global_batch"].as<int>(), 16);  // 2 x dp 8
  EXPECT_GT(built_with_notes(c, "Megatron-LM")["parallelism"]["global_batch"].as<int>(), 16);  // the 4M-token policy
}

TEST(TrainingCasePolicy, TorchtitanAndTransformersModelCodeRunsEagerUnlessCompiled) {
  const auto kernels = [](const std::string& notes) {
    const YAML::Node pl = built_with_notes(training_case("H100-SXM5-80GB", ""), notes)["parallelism"];
    return pl["kernels"] ? pl["kernels"].as<std::string>() : std::string("fused");
  };
  EXPECT_EQ(kernels("torchtitan, FSDP2"), "eager");  // training.compile is off by default
  EXPECT_EQ(kernels("torchtitan with --training.compile --model.converters=float8"), "fused");
  EXPECT_EQ(kernels("torchtitan; torch.compile on (each TransformerBlock)"), "fused");
  EXPECT_EQ(kernels("DeepSpeed ZeRO-3 over Hugging Face Transformers LlamaForCausalLM"), "eager");
  EXPECT_EQ(kernels("Megatron-LM"), "fused");
  EXPECT_EQ(kernels("torch.compile off: eager PyTorch modules"), "eager");
  EXPECT_EQ(kernels("torchtitan: both bf16 and float8 use torch.compile"), "fused");
  EXPECT_EQ(kernels("torchtitan (torch.compile, FSDP2)"), "fused");
  EXPECT_EQ(kernels("torchtitan's Llama; torch.compile is off by default"), "eager");
  EXPECT_EQ(kernels("torchtitan; torch.compile: off (not enabled in this config)"), "eager");
  EXPECT_EQ(kernels("torchtitan, compile enabled for model and loss"), "fused");
}

TEST(TrainingCasePolicy, StatedCudaGraphsAndTorchtitansReduceDtypeAreRead) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  const auto graphs = [&](const std::string& notes) {
    const YAML::Node pl = built_with_notes(c, notes)["parallelism"];
    return pl["cuda_graphs"] ? YAML::Dump(pl["cuda_graphs"]) : std::string("none");
  };
  EXPECT_EQ(graphs("enable_cuda_graph 1, cuda_graph_scope full_iteration"), "full");
  EXPECT_EQ(graphs("config: FULL_CUDA_GRAPH=True"), "full");
  EXPECT_EQ(graphs("'#export FULL_CUDA_GRAPH=True'"), "none");  // commented out
  EXPECT_EQ(graphs("enable_cuda_graph=True"), "[attn, mlp]");   // Transformer Engine's per-layer graphs
  EXPECT_EQ(graphs("MCORE_CUDA_GRAPH=False"), "none");
  // torchtitan reduces gradients in fp32 unless told otherwise.
  const auto fp32 = [&](const std::string& notes) {
    const YAML::Node pl = built_with_notes(c, notes)["parallelism"];
    return pl["grad_reduce_fp32"] && pl["grad_reduce_fp32"].as<bool>();
  };
  EXPECT_TRUE(fp32("torchtitan, FSDP2"));
  EXPECT_FALSE(fp32("torchtitan, mixed_precision_reduce = bfloat16"));
  EXPECT_FALSE(fp32("Megatron-LM"));
}

TEST(TrainingCasePolicy, ThisRoundsReadingsOfStatedSettings) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["parallelism"]["zero"] = YAML::Node();
  const auto plan = [&](const std::string& notes) { return built_with_notes(c, notes)["parallelism"]; };
  // ZeRO named without its stage: ZeRO-1; the word "zero" alone is not ZeRO.
  c["hardware"]["gpu"] = "A100-SXM4-80GB";
  EXPECT_EQ(plan("data parallelism with ZeRO")["zero"].as<int>(), 1);
  EXPECT_EQ(plan("zero gradients after each step")["zero"].as<int>(), 0);
  // DeepSpeed's bf16 optimizer at stage 0 partitions the fp32 state: ZeRO-1 in effect.
  c["parallelism"]["zero"] = 0;
  EXPECT_EQ(plan("Megatron-DeepSpeed, --bf16, ZeRO stage 0")["zero"].as<int>(), 1);
  EXPECT_EQ(plan("Megatron-LM, --bf16")["zero"].as<int>(), 0);
  // FSDP of the Volta/Ampere era is FSDP 1 unless FSDP2 (or torchtitan) is named.
  c["parallelism"]["zero"] = 3;
  EXPECT_EQ(plan("PyTorch FSDP, 2023")["fsdp_impl"].as<std::string>(), "fsdp1");
  EXPECT_FALSE(plan("torchtitan on A100")["fsdp_impl"]);  // FSDP2, the plan default
  // The optimizer offloaded to the CPU (with ZeRO-1/2).
  c["parallelism"]["zero"] = 2;
  EXPECT_TRUE(plan("DeepSpeed ZeRO-2 with offload_optimizer device cpu")["offload_optimizer"].as<bool>());
  EXPECT_FALSE(plan("DeepSpeed ZeRO-2, no optimizer offload")["offload_optimizer"]);
  EXPECT_FALSE(plan("ds_config: offload_optimizer device none")["offload_optimizer"]);
  // With ZeRO-3 too; offloaded parameter shards (DeepSpeed's offload_param, FSDP's CPU offload)
  // also step on the host. Not under ZeRO-2, and not where the device is none.
  c["parallelism"]["zero"] = 3;
  EXPECT_TRUE(plan("DeepSpeed ZeRO-3 with offload_optimizer device cpu")["offload_optimizer"].as<bool>());
  EXPECT_FALSE(plan("DeepSpeed ZeRO-3 with offload_optimizer device cpu")["offload_params"]);
  const std::string ds_infinity =
      "Run settings: ZeRO stage 3 with \"offload_optimizer\": {\"device\": \"cpu\"} and \"offload_param\": "
      "{\"device\": \"cpu\"}.";
  EXPECT_TRUE(plan(ds_infinity)["offload_params"].as<bool>());
  EXPECT_TRUE(plan(ds_infinity)["offload_optimizer"].as<bool>());
  EXPECT_TRUE(plan("torchtune recipe: fsdp_cpu_offload: True, bf16")["offload_params"].as<bool>());
  EXPECT_TRUE(plan("torchtune recipe: fsdp_cpu_offload: True, bf16")["offload_optimizer"].as<bool>());
  EXPECT_TRUE(plan("Parameter and activation CPU offloading were used for the 1T runs")["offload_params"].as<bool>());
  EXPECT_FALSE(plan("fsdp_cpu_offload: False")["offload_params"]);
  EXPECT_FALSE(plan("\"offload_param\": {\"device\": \"none\"}")["offload_params"]);
  EXPECT_FALSE(plan("offload_param device cpu can be set for larger models")["offload_params"]);
  c["parallelism"]["zero"] = 2;
  EXPECT_FALSE(plan("torchtune recipe: fsdp_cpu_offload: True")["offload_params"]);
  // A stated norm; a hyphenated sliding window; a shard degree.
  c["hardware"]["gpu"] = "H100-SXM5-80GB";
  c["model"]["mlp"] = "swiglu";
  EXPECT_EQ(built_with_notes(c, "config: norm_type = \"layernorm\"")["model"]["norm"].as<std::string>(), "layernorm");
  c["model"]["attention"] = "GQA; sliding-window attention (window 512) on every layer";
  EXPECT_EQ(built_with_notes(c, "")["model"]["sliding_window"].as<int>(), 512);
  c["model"]["attention"] = YAML::Node();
  c["parallelism"]["zero"] = 3;
  EXPECT_EQ(plan("HSDP, shard_degree=4")["shard_size"].as<int>(), 4);
  // Megatron-Core's CUDA graph scopes; the per-rank capacity buffer is not token dropping.
  EXPECT_EQ(YAML::Dump(plan("cuda_graph_impl transformer_engine, cuda_graph_scope [attn]")["cuda_graphs"]), "[attn]");
  YAML::Node moe = c;
  moe["model"]["moe"] = YAML::Load("{experts: 16, top_k: 2, expert_ffn_hidden: 1024}");
  moe["parallelism"]["zero"] = 1;
  EXPECT_FALSE(built_with_notes(moe, "moe_expert_rank_capacity_factor 1.5")["model"]["moe"]["capacity_factor"]);
  EXPECT_DOUBLE_EQ(
      built_with_notes(moe, "moe_expert_capacity_factor 1.0")["model"]["moe"]["capacity_factor"].as<double>(), 1.0);
  // Selective recompute of named modules said in one phrase.
  moe["parallelism"]["recompute"] = "selective";
  const YAML::Node modules =
      built_with_notes(moe, "selective layernorm and MoE activation recompute")["parallelism"]["recompute_modules"];
  ASSERT_TRUE(modules);
  EXPECT_EQ(YAML::Dump(modules), "[layernorm, moe_act]");
}

TEST(TrainingCasePolicy, StatedTpCommOverlapIsRead) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["parallelism"]["tp"] = 4;
  c["parallelism"]["dp"] = 2;
  c["parallelism"]["zero"] = 1;
  const auto overlap = [&](const std::string& notes) { return plan_flag(c, notes, "tp_comm_overlap"); };
  EXPECT_TRUE(overlap("config: TP_COMM_OVERLAP True, BUCKET_CAP_MB 125"));
  EXPECT_TRUE(overlap("model.sequence_parallel=true, model.ub_tp_comm_overlap=true"));
  EXPECT_TRUE(overlap("launched with --tp-comm-overlap"));
  EXPECT_FALSE(overlap("TP_COMM_OVERLAP False"));
  EXPECT_FALSE(overlap("config_common.sh: '#export TP_COMM_OVERLAP=True' (commented out)"));
  EXPECT_FALSE(overlap("Megatron-LM"));
  c["parallelism"]["sequence_parallel"] = false;  // userbuffer overlap needs sequence parallelism
  EXPECT_FALSE(overlap("TP_COMM_OVERLAP True"));
}

TEST(TrainingCasePolicy, AnUnstatedZeroStageShardsTheOptimizerWhereUnshardedDoesNotFit) {
  // A 13B-parameter model on 64 A100-40GB at tp 2: unsharded Adam (16 B per parameter over 2
  // ranks, 104 GB) cannot have run; the distributed optimizer (ZeRO-1) over dp 32 fits.
  YAML::Node c = thirteen_b_case("A100-SXM4-40GB");
  c["hardware"]["num_gpus"] = 64;
  c["parallelism"]["tp"] = 2;
  c["parallelism"]["dp"] = 32;
  c["parallelism"]["global_batch"] = 64;
  c["parallelism"]["recompute"] = "full";
  c["parallelism"]["zero"] = YAML::Node();
  std::vector<std::string> defaults;
  EXPECT_EQ(training_case_scenario(c, defaults)["parallelism"]["zero"].as<int>(), 1);
  // A small model fits unsharded: the era's default stays; a stated stage is kept as stated.
  c["model"]["layers"] = 4;
  EXPECT_EQ(training_case_scenario(c, defaults)["parallelism"]["zero"].as<int>(), 0);
  c["model"]["layers"] = 40;
  c["parallelism"]["zero"] = 0;
  EXPECT_EQ(training_case_scenario(c, defaults)["parallelism"]["zero"].as<int>(), 0);
}

TEST(TrainingCasePolicy, TheGradientReductionsPrecisionIsReadInWords) {
  const auto fp32 = [](const std::string& notes) {
    const YAML::Node r =
        built_with_notes(training_case("H100-SXM5-80GB", ""), notes)["parallelism"]["grad_reduce_fp32"];
    return r ? std::string(r.as<bool>() ? "fp32" : "16-bit") : std::string("unstated");
  };
  EXPECT_EQ(fp32("FSDP2 with fp32 gradient reduction."), "fp32");
  EXPECT_EQ(fp32("mixed_precision_reduce = 'float32' (torchtitan's default)"), "fp32");
  EXPECT_EQ(fp32("MixedPrecision(param_dtype=bf16, reduce_dtype=torch.float32)"), "fp32");
  EXPECT_EQ(fp32("gradients reduced in bf16"), "16-bit");
  EXPECT_EQ(fp32("FSDP mixed-precision mode: PURE"), "16-bit");  // Composer's name wins where stated
  EXPECT_EQ(fp32("FSDP mixed-precision mode: PURE; fp32 gradient reduction elsewhere"), "16-bit");
  EXPECT_EQ(fp32("bf16 everywhere"), "unstated");
}

TEST(TrainingCasePolicy, DeepEpNamedAsUsedSelectsItsDispatch) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["model"]["moe"] = YAML::Load("{experts: 16, top_k: 2, expert_ffn_hidden: 1024}");
  c["parallelism"]["ep"] = 8;
  const auto dispatch = [&](const std::string& notes) {
    const YAML::Node d = built_with_notes(c, notes)["parallelism"]["ep_dispatch"];
    return d ? d.as<std::string>() : std::string("alltoall");
  };
  EXPECT_EQ(dispatch("Expert dispatch through DeepEP."), "deepep");
  EXPECT_EQ(dispatch("The all-to-all dispatcher, without DeepEP."), "alltoall");
  EXPECT_EQ(dispatch("AllToAll baseline (instead of DeepEP)."), "alltoall");
  EXPECT_EQ(dispatch("DeepEP was not used in this run."), "alltoall");
  // A negated mention outweighs a passing one; NVIDIA's HybridEP forwards as DeepEP does.
  EXPECT_EQ(dispatch("the all-to-all dispatcher without DeepEP, compared with the DeepEP row"), "alltoall");
  EXPECT_EQ(dispatch("dispatcher: HybridEP"), "deepep");
  EXPECT_EQ(dispatch("Dispatcher (DeepEP or not) not stated."), "alltoall");  // left open
  EXPECT_EQ(dispatch("The source does not say whether DeepEP ran."), "alltoall");
  EXPECT_EQ(dispatch(""), "alltoall");
}

TEST(TrainingCasePolicy, AnUnnamedMoeCountsItsExpertsFromTheNameAndRoutesTopTwo) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["model"]["name"] = "Internal-MoE 16x3B";
  c["model"]["moe"] = YAML::Load("{experts: null, top_k: null, expert_ffn_hidden: null}");
  c["parallelism"]["ep"] = 8;
  std::vector<std::string> defaults;
  const YAML::Node moe = training_case_scenario(c, defaults)["model"]["moe"];
  EXPECT_EQ(moe["experts"].as<int>(), 16);
  EXPECT_EQ(moe["top_k"].as<int>(), 2);
  c["model"]["name"] = "Internal-MoE";  // nothing says how many experts: refused, the field named
  EXPECT_NE(refusal_of(c).find("model.moe.experts"), std::string::npos) << refusal_of(c);
}

TEST(TrainingCasePolicy, AServerWithFewerGpusKeepsTheNodeTypesNicsPerGpu) {
  // Four H100s per server: four of the DGX H100's eight NICs, one per GPU. (Four A100 SXM4 per
  // node are the HGX 4-GPU board's, a node type of its own with four NICs.)
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["hardware"]["num_gpus"] = 16;
  c["hardware"]["gpus_per_node"] = 4;
  c["parallelism"]["dp"] = 16;
  c["parallelism"]["global_batch"] = 16;
  std::vector<std::string> defaults;
  const YAML::Node cluster = training_case_scenario(c, defaults)["cluster"];
  EXPECT_EQ(cluster["gpus_per_node"].as<int>(), 4);
  EXPECT_EQ(cluster["nics_per_node"].as<int>(), 4);
  c["hardware"]["inter_node"]["nics_per_node"] = 2;  // a stated count is kept
  EXPECT_EQ(training_case_scenario(c, defaults)["cluster"]["nics_per_node"].as<int>(), 2);
}

TEST(TrainingCasePolicy, ANeMoContainerBeforeTransformerEnginesCudnnPreferenceRunsFlashAttention2) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  const auto kernel = [&](const std::string& software) {
    c["software"] = YAML::Load(software);  // the stack's catalogue entry says (stacks/nemo.yaml)
    std::vector<std::string> defaults;
    return training_case_scenario(c, defaults)["model"]["attention"].as<std::string>();
  };
  EXPECT_EQ(kernel("{framework: nemo, version: '24.03.01', year: 2024}"), "flash2");
  EXPECT_EQ(kernel("{framework: nemo, version: '24.07', year: 2024}"), "flash");
  EXPECT_EQ(kernel("{framework: megatron-bridge, version: '25.11', year: 2025}"), "flash");
  EXPECT_EQ(kernel("{framework: nemo, version: '23.11', year: 2023}"), "flash2");
  EXPECT_EQ(kernel("{framework: megatron-core, version: null, year: 2024}"), "flash");  // no NeMo container
}

TEST(TrainingCasePolicy, EpAllToAllOverlapIsReadWhereStatedOnAndMegatronRunsIt) {
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  c["model"]["moe"]["experts"] = 8;
  c["model"]["moe"]["top_k"] = 2;
  c["parallelism"]["ep"] = 8;
  c["parallelism"]["global_batch"] = 16;
  c["parallelism"]["zero"] = 1;
  const auto overlap = [&](const YAML::Node& cc, const std::string& notes) {
    return plan_flag(cc, notes, "ep_overlap");
  };
  EXPECT_TRUE(overlap(c, "Megatron-Core, --overlap-moe-expert-parallel-comm --delay-wgrad-compute."));
  EXPECT_TRUE(overlap(c, "CommOverlapConfig(overlap_moe_expert_parallel_comm=True)."));
  EXPECT_TRUE(overlap(c, "EP A2A overlap on."));
  EXPECT_FALSE(overlap(c, "Baseline: overlap OFF (overlap_moe_expert_parallel_comm = False)."));
  EXPECT_FALSE(overlap(c, "No EP A2A overlap (the next row adds it)."));
  EXPECT_FALSE(overlap(c, "PP 8, VPP 4, EP 8, A2A overlap off."));
  EXPECT_FALSE(overlap(c, "moe_a2a_overlap False."));
  // Megatron runs it with interleaving or without a pipeline; a plain 1F1B pipeline says so.
  c["hardware"]["num_gpus"] = 16;
  c["parallelism"]["pp"] = 2;
  c["parallelism"]["vp"] = 1;
  std::vector<std::string> defaults;
  c["notes"] = "--overlap-moe-expert-parallel-comm";
  const YAML::Node pl = training_case_scenario(c, defaults)["parallelism"];
  EXPECT_FALSE(pl["ep_overlap"]);
  EXPECT_NE(std::find_if(defaults.begin(), defaults.end(),
                         [](const std::string& d) { return d.find("ep_overlap: false") != std::string::npos; }),
            defaults.end());
}

TEST(TrainingCasePolicy, StatedZeroStageAndFp16AreReadOnlyWhereSaidOfThisRun) {
  YAML::Node c = training_case("A100-SXM4-80GB", "FlashAttention-2");
  c["parallelism"].remove("zero");
  c["parallelism"].remove("precision");
  const auto zero = [&](const std::string& notes) {
    const YAML::Node pl = built_with_notes(YAML::Clone(c), notes)["parallelism"];
    return pl["zero"] ? pl["zero"].as<int>() : -1;
  };
  EXPECT_EQ(zero("DeepSpeed ZeRO-2 with overlap_comm."), 2);
  EXPECT_EQ(zero("launched with deepspeed_zero3.json"), 3);
  EXPECT_EQ(zero("zero_optimization: {stage: 1}"), 1);
  // Unstated, an example or a possibility is not this run's stage.
  EXPECT_NE(zero("ZeRO stage: not stated."), 3);
  EXPECT_NE(zero("The guide's example launch uses deepspeed_zero3."), 3);
  EXPECT_NE(zero("Can be combined with ZeRO-3."), 3);
  EXPECT_NE(zero("Plain DDP, no ZeRO-3."), 3);
  const auto precision = [&](const std::string& notes) {
    return built_with_notes(YAML::Clone(c), notes)["parallelism"]["precision"].as<std::string>();
  };
  EXPECT_EQ(precision("model loaded with torch_dtype=torch.float16"), "fp16");
  EXPECT_EQ(precision("fp16: true in the config"), "fp16");
  EXPECT_EQ(precision("Mixed precision may be fp16 or bf16."), "bf16");  // a possibility, not this run
  EXPECT_EQ(precision(""), "bf16");
}

TEST(TrainingCasePolicy, FlashAttnPackageWithoutVersionIsItsTwoSeriesAndModernStacksLeaveTheEraProxy) {
  // The attention text names the package (or Megatron's flag that calls it) without a version.
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "Megatron-LM --use-flash-attn"), "flash2");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "flash-attn package"), "flash2");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "flash-attn==1.0.4"), "flash1");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "flash_attn v2.5.8"), "flash2");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "Megatron-DeepSpeed --use-flash-attn-v1"), "flash1");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "Megatron-DeepSpeed --use-flash-attn-v2"), "flash2");
  EXPECT_EQ(kernel_for("A100-SXM4-80GB", "Triton FlashAttention (--use-flash-attn-triton)"), "flash1");
  // Megatron-Core on an A100 is today's stack: whole-tensor pipeline sends, not the 2020-22 scatter.
  YAML::Node c = training_case("A100-SXM4-80GB", "");
  c["hardware"]["num_gpus"] = 16;
  c["parallelism"]["tp"] = 8;
  c["parallelism"]["pp"] = 2;
  c["parallelism"]["dp"] = 1;
  c["parallelism"]["zero"] = 0;
  c["parallelism"]["sequence_parallel"] = false;
  const auto scattered = [&](const std::string& notes) { return plan_flag(c, notes, "p2p_scatter_gather"); };
  EXPECT_TRUE(scattered("Megatron-LM."));
  EXPECT_FALSE(scattered("Megatron-Core 0.9 with Transformer Engine."));
  EXPECT_TRUE(scattered("Megatron-Core may be used instead."));  // hedged: not this run's stack
}

TEST(TrainingCasePolicy, AnIterationTimePublishedWithoutItsBatchIsOneMicroBatchPerRank) {
  YAML::Node c = training_case("A100-SXM4-80GB", "FlashAttention-2");
  c["parallelism"].remove("global_batch");
  c["parallelism"]["micro_batch"] = 2;
  const auto batch = [](const YAML::Node& cc) {
    std::vector<std::string> defaults;
    return training_case_scenario(YAML::Clone(cc), defaults)["parallelism"]["global_batch"].as<int>();
  };
  EXPECT_EQ(batch(c), 2 * 8);  // the published step time: the frameworks' default batch
  // A step time derived from a throughput is no iteration the source timed: about 4M tokens.
  c["derived"].push_back(YAML::Load("{field: measured.step_time_s, formula: 'x'}"));
  EXPECT_EQ(batch(c), 4194304 / 2048);
  c.remove("derived");
  c["measured"] = YAML::Load("{tokens_per_s_per_gpu: 3000}");
  EXPECT_EQ(batch(c), 4194304 / 2048);
}

TEST(TrainingCasePolicy, MegatronDeepSpeedsBnbFlagIsEightBitAdam) {
  YAML::Node c = training_case("A100-SXM4-80GB", "FlashAttention-2");
  const auto moments = [&](const std::string& notes) {
    const YAML::Node pl = built_with_notes(YAML::Clone(c), notes)["parallelism"];
    return pl["optimizer_moments"] ? pl["optimizer_moments"].as<std::string>() : std::string("fp32");
  };
  EXPECT_EQ(moments("Published row (section BNB, w/ --use-bnb-optimizer): NNODES 32."), "int8");
  EXPECT_EQ(moments("Without --use-bnb-optimizer."), "fp32");
  EXPECT_EQ(moments(""), "fp32");
}

TEST(TrainingCasePolicy, StatedActivationOffloadingIsRead) {
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  const auto offloaded = [&](const std::string& notes) { return plan_flag(c, notes, "offload_activations"); };
  EXPECT_TRUE(offloaded("SFTConfig: gradient_checkpointing_kwargs {'offload': True}, bf16=True."));
  EXPECT_TRUE(offloaded("Megatron-Core with --cpu-offloading --cpu-offloading-num-layers 30."));
  EXPECT_TRUE(offloaded("recipe: enable_activation_offloading=True"));
  EXPECT_FALSE(offloaded("enable_activation_offloading: False"));
  // Another row's command quoted (a full stop inside a flag name does not end the clause).
  EXPECT_FALSE(offloaded(
      "Reproduction command of the table's final row: dataset.packed=True enable_activation_offloading=True"));
  EXPECT_FALSE(offloaded("--cpu-offloading-weights only."));
  EXPECT_FALSE(offloaded("Activation offloading could be enabled with --cpu-offloading."));
  EXPECT_FALSE(offloaded(""));
}

// The case's software block becomes the scenario's; without one, the GPU era's stack (stacks/eras.yaml).
TEST(TrainingCaseSoftware, BlockOrEraChoosesTheStack) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["software"] = YAML::Load("{framework: deepspeed, version: null, year: 2024}");
  std::vector<std::string> defaults;
  const YAML::Node s = training_case_scenario(c, defaults);
  EXPECT_EQ(s["software"]["framework"].as<std::string>(), "deepspeed");
  EXPECT_EQ(s["software"]["year"].as<int>(), 2024);
  EXPECT_EQ(scenario_from_yaml(s, "case").training.software.profile, "deepspeed-current");

  YAML::Node old = training_case("A100-SXM4-80GB", "");
  defaults.clear();
  const YAML::Node e = training_case_scenario(old, defaults);
  EXPECT_EQ(e["software"]["framework"].as<std::string>(), "megatron-lm");
  bool said = false;
  for (const auto& d : defaults) said = said || d.rfind("software: megatron-lm", 0) == 0;
  EXPECT_TRUE(said);

  // A version the catalogue does not list is dropped (the year decides), and said so.
  c["software"] = YAML::Load("{framework: nemo, version: '99.99', year: 2024}");
  defaults.clear();
  const YAML::Node v = training_case_scenario(c, defaults);
  EXPECT_FALSE(v["software"]["version"]);
  EXPECT_EQ(scenario_from_yaml(v, "case").training.software.profile, "nemo-24.x");
}

// What a stack's era means for an unstated knob is the catalogue's: NeMo before 24.05 ran
// Transformer Engine's FlashAttention-2; 24.07 the fused kernels.
TEST(TrainingCaseSoftware, CatalogueStatesTheEraAttentionKernels) {
  YAML::Node c = training_case("H100-SXM5-80GB", "");
  c["software"] = YAML::Load("{framework: nemo, version: '24.03.01', year: 2024}");
  std::vector<std::string> defaults;
  EXPECT_EQ(training_case_scenario(c, defaults)["model"]["attention"].as<std::string>(), "flash2");
  c["software"] = YAML::Load("{framework: nemo, version: '24.07', year: 2024}");
  const YAML::Node later = training_case_scenario(c, defaults)["model"]["attention"];
  EXPECT_TRUE(!later || later.as<std::string>() != "flash2");
}

TEST(TrainingCasePolicy, DeepSpeedZero3GathersPerModuleFromItsCatalogueEntry) {
  // stacks/deepspeed.yaml says zero3_gather_unit: module: one all-gather per weight matrix of a
  // layer (q, k, v, o + fc1, fc2 for a GELU MLP; + gate for SwiGLU). FSDP gathers a layer at once.
  YAML::Node c = training_case("H100-SXM5-80GB", "FlashAttention-2");
  std::vector<std::string> defaults;
  EXPECT_FALSE(training_case_scenario(c, defaults)["parallelism"]["fsdp_gathers_per_layer"]);
  c["software"]["framework"] = "deepspeed";
  EXPECT_EQ(training_case_scenario(c, defaults)["parallelism"]["fsdp_gathers_per_layer"].as<int>(), 6);
  c["model"]["mlp"] = "swiglu";
  EXPECT_EQ(training_case_scenario(c, defaults)["parallelism"]["fsdp_gathers_per_layer"].as<int>(), 7);
  c["parallelism"]["zero"] = 1;  // nothing gathered per layer below ZeRO-3
  EXPECT_FALSE(training_case_scenario(c, defaults)["parallelism"]["fsdp_gathers_per_layer"]);
  c["parallelism"]["zero"] = 3;
  c["software"]["framework"] = "pytorch-fsdp";
  EXPECT_FALSE(training_case_scenario(c, defaults)["parallelism"]["fsdp_gathers_per_layer"]);
}
