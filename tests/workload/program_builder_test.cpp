// The step program's data-parallel volumes against their closed forms.
#include <gtest/gtest.h>

#include "models/hardware/gpu_spec.hpp"
#include "models/workload/ops.hpp"
#include "models/workload/program_builder.hpp"
#include "models/workload/replay.hpp"
#include "tests/workload/gpt_model.hpp"

namespace stacksim::workload {
namespace {

compute::GpuModel gpu() {
  hw::GpuSpec s;
  s.name = "ideal";
  s.sm_count = 100;
  s.hbm_Bps = 2e12;
  s.hbm_efficiency = 1.0;
  s.peak_flops_per_s["bf16"] = 1e15;
  s.peak_flops_per_s["fp32"] = 1e14;
  s.peak_flops_per_s["fp8"] = 2e15;
  return compute::GpuModel(s);
}

// Bytes of gradients one rank hands to data-parallel reduction per step.
double reduced_grad_bytes(const StepProgram& prog) {
  double b = prog.embedding_grad_bytes + prog.head_grad_bytes;
  for (const LayerProgram& l : prog.layers) b += l.grad_bytes;
  return b;
}

}  // namespace

TEST(StepProgram, DataParallelGradientBytesAreTheRanksParametersInTheGradientPrecision) {
  const ModelConfig m = gpt_model(4, 1024, 16, 1024);
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 8;
  const compute::GpuModel g = gpu();
  // Every parameter: layers, input embedding, untied output layer, final norm.
  const double params = m.total_params();
  EXPECT_DOUBLE_EQ(reduced_grad_bytes(build_step_program(m, p, g)), 2.0 * params);
  p.grad_reduce_fp32 = true;
  EXPECT_DOUBLE_EQ(reduced_grad_bytes(build_step_program(m, p, g)), 4.0 * params);
}

TEST(StepProgram, RoutedExpertGradientsGoToTheirOwnGroupOnceExpertParallelismIsCarvedOut) {
  ModelConfig m = gpt_model(4, 1024, 16, 1024);
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden = m.ffn_hidden;
  ParallelPlan p;
  p.dp = 8;
  p.global_batch = 8;
  const compute::GpuModel g = gpu();
  const auto expert_grad_bytes = [&](const StepProgram& prog) {
    double b = 0;
    for (const LayerProgram& l : prog.layers) b += l.expert_grad_bytes;
    return b;
  };
  // ep 1: the experts' data-parallel group is DP itself; every gradient reduced there.
  StepProgram prog = build_step_program(m, p, g);
  EXPECT_DOUBLE_EQ(expert_grad_bytes(prog), 0.0);
  EXPECT_DOUBLE_EQ(reduced_grad_bytes(prog), 2.0 * m.total_params());
  // ep 4: each rank holds 2 of the 8 experts, whose gradients leave DP's buckets for their own.
  p.ep = 4;
  prog = build_step_program(m, p, g);
  double routed = 0;
  for (int l = 0; l < m.layers; ++l) routed += layer_expert_params_per_rank(m, p, l);
  EXPECT_DOUBLE_EQ(routed, m.layers * m.expert_params() * 2);
  EXPECT_DOUBLE_EQ(expert_grad_bytes(prog), 2.0 * routed);
  EXPECT_NEAR(reduced_grad_bytes(prog) + expert_grad_bytes(prog), 2.0 * (m.total_params() - 3 * routed),
              1.0);  // 6 of 8 experts elsewhere
}

TEST(StepProgram, UnderFp8TheOutputLayerStaysA16BitGemmWithoutCasts) {
  // Transformer Engine runs the layers' linears in FP8 (each input cast first); Megatron's output
  // layer is a plain 16-bit linear.
  const ModelConfig m = gpt_model(2, 1024, 16, 1024);
  ParallelPlan p;
  p.global_batch = 1;
  p.precision = Precision::FP8;
  const compute::GpuModel g = gpu();
  const StepProgram prog = build_step_program(m, p, g);
  const auto named = [](const std::vector<CostedOp>& ops, const std::string& name) {
    int n = 0;
    for (const CostedOp& o : ops) n += o.name == name;
    return n;
  };
  const double tokens = static_cast<double>(m.seq_len) * p.micro_batch;
  double logits_s = -1;
  for (const CostedOp& o : prog.post_forward)
    if (o.name == "logits") logits_s = o.seconds;
  EXPECT_DOUBLE_EQ(logits_s, g.gemm(tokens, m.vocab, m.hidden, compute::DType::BF16).seconds);
  EXPECT_EQ(named(prog.post_forward, "fp8 quantize") + named(prog.pre_backward, "fp8 quantize"), 0);
  EXPECT_GT(named(prog.layers[0].forward, "fp8 quantize"), 0);
}

TEST(StepProgram, Fp8QuantizesEachActivationAndOutputGradientOnceAsTheRecipeDoes) {
  // One quantisation per FP8 GEMM's A operand in the forward and in the dgrad (the wgrad reads
  // their columnwise copies): sum over the layer's linears of T x K (forward) and T x N (dgrad)
  // elements, at the recipe's bytes per element (parallel_plan.hpp).
  const ModelConfig m = gpt_model(2, 1024, 16, 1024);
  ParallelPlan p;
  p.global_batch = 1;
  p.precision = Precision::FP8;
  const compute::GpuModel g = gpu();  // architecture unset: reads either layout (no transpose)
  const double T = static_cast<double>(m.seq_len) * p.micro_batch, h = m.hidden, f = m.ffn_hidden;
  // QKV (h -> 3h), output projection (h -> h), fc1 (h -> f), fc2 (f -> h).
  const double forward_elements = T * (h + h + h + f), dgrad_elements = T * (3 * h + h + f + h);
  const auto quantize_s = [&](const std::vector<CostedOp>& ops, int& count) {
    double s = 0;
    for (const CostedOp& o : ops)
      if (o.name == "fp8 quantize") s += o.seconds - g.kernel_overhead_s(), ++count;
    return s;
  };
  for (const Fp8Recipe r : {Fp8Recipe::Delayed, Fp8Recipe::Current, Fp8Recipe::Mxfp8}) {
    p.fp8_recipe = r;
    const StepProgram prog = build_step_program(m, p, g);
    int fwd_n = 0, bwd_n = 0;
    const double fwd_s = quantize_s(prog.layers[0].forward, fwd_n), bwd_s = quantize_s(prog.layers[0].backward, bwd_n);
    EXPECT_EQ(fwd_n, 4);
    EXPECT_EQ(bwd_n, 4);  // dgrads only
    const double bytes = p.fp8_quantize_bytes_per_element(false);
    EXPECT_NEAR(fwd_s, bytes * forward_elements / g.hbm_rate_Bps(), 1e-12);
    EXPECT_NEAR(bwd_s, bytes * dgrad_elements / g.hbm_rate_Bps(), 1e-12);
  }
}

TEST(StepProgram, WindowedAndFullAttentionLayersAreCostedApart) {
  // Layers share one costed program per kind; a sliding window is part of the kind: with every
  // 2nd layer full, layer 0 (windowed) is cheaper than layer 1, and layer 2 costs as layer 0.
  ModelConfig m = gpt_model(4, 1024, 16, 1024);
  m.seq_len = 8192;
  m.sliding_window = 128;
  m.full_attention_every = 2;
  ParallelPlan p;
  p.global_batch = 1;
  const StepProgram prog = build_step_program(m, p, gpu());
  const auto seconds = [](const std::vector<CostedOp>& ops) {
    double s = 0;
    for (const CostedOp& o : ops) s += o.seconds;
    return s;
  };
  EXPECT_LT(seconds(prog.layers[0].forward), 0.8 * seconds(prog.layers[1].forward));
  EXPECT_DOUBLE_EQ(seconds(prog.layers[2].forward), seconds(prog.layers[0].forward));
  EXPECT_DOUBLE_EQ(seconds(prog.layers[3].backward), seconds(prog.layers[1].backward));
}

TEST(StepProgram, LaunchesCountTheKernelsTheHostIssues) {
  // A grouped expert GEMM is one GEMM per local expert; the fused attention backward is three
  // kernels; an eager element-wise chain one per step; the sync rides on the MoE dispatch.
  ModelConfig m = gpt_model(2, 1024, 16, 1024);
  m.mlp = Mlp::SwiGlu;
  m.norm = Norm::RmsNorm;  // eager RMSNorm is a chain of kernels
  m.moe.experts = 16;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden = 512;
  m.moe.imbalance = 1.0;
  ParallelPlan p;
  p.dp = p.ep = 4;
  p.global_batch = 4;
  const StepProgram prog = build_step_program(m, p, gpu());
  const auto find = [](const std::vector<CostedOp>& ops, const std::string& name) {
    for (const CostedOp& o : ops)
      if (o.name == name) return o;
    ADD_FAILURE() << "no op " << name;
    return CostedOp{};
  };
  const LayerProgram& l = prog.layers[0];
  EXPECT_EQ(find(l.forward, "expert fc1 (gate+up)").launches, 4);  // 16 experts over ep 4
  EXPECT_EQ(find(l.backward, "expert fc2 wgrad").launches, 4);
  EXPECT_EQ(find(l.forward, "qkv projection").launches, 1);
  EXPECT_EQ(find(l.backward, "attention backward").launches, 3);
  EXPECT_TRUE(find(l.forward, "ep all-to-all dispatch").host_sync);
  EXPECT_FALSE(find(l.backward, "ep all-to-all dispatch (backward)").host_sync);
  p.kernels = Kernels::Eager;
  const StepProgram eager = build_step_program(m, p, gpu());
  EXPECT_GT(find(eager.layers[0].forward, "input norm").launches, 1);
}

TEST(StepProgram, ACudaGraphIsOneLaunchForTheOpsItCaptures) {
  // tp 2 with an MoE layer (experts over ep 2): the attention block, collectives included, is one
  // launch forward and one backward under attn; the router and routing under moe_router and
  // moe_preprocess; the dispatch (the host read-back), the experts and the combine stay eager;
  // full captures each dense layer's list whole. The compute is the same either way.
  ModelConfig m = gpt_model(2, 1024, 16, 1024);
  m.mlp = Mlp::SwiGlu;
  m.moe.experts = 8;
  m.moe.top_k = 2;
  m.moe.expert_ffn_hidden = 512;
  m.moe.imbalance = 1.0;
  ParallelPlan p;
  p.tp = 2;
  p.dp = p.ep = 2;
  p.global_batch = 2;
  const auto launches = [](const std::vector<CostedOp>& ops, const std::string& prefix) {
    int n = 0;
    for (const CostedOp& o : ops)
      if (o.name.rfind(prefix, 0) == 0) n += o.launches;
    return n;
  };
  const auto total = [](const std::vector<CostedOp>& ops) {
    int n = 0;
    double s = 0;
    for (const CostedOp& o : ops) {
      n += o.launches;
      s += o.seconds;
    }
    return std::pair<int, double>{n, s};
  };
  const StepProgram eager = build_step_program(m, p, gpu());
  p.cuda_graphs = kGraphAttn | kGraphMoeRouter | kGraphMoePreprocess;
  const StepProgram graphed = build_step_program(m, p, gpu());
  const LayerProgram &e = eager.layers[0], &g = graphed.layers[0];
  EXPECT_EQ(launches(g.forward, "input norm"), 1);  // the attention graph's launch
  EXPECT_EQ(launches(g.forward, "qkv projection") + launches(g.forward, "attention") +
                launches(g.forward, "tp all-reduce (attention)") + launches(g.forward, "dropout + residual"),
            1);  // the second residual (after the MoE combine) is eager: its launch
  EXPECT_EQ(launches(g.forward, "post-attention norm"), 1);  // the router graph
  EXPECT_EQ(launches(g.forward, "router"), 0);
  EXPECT_EQ(launches(g.forward, "top-k routing + permute"), 1);  // the preprocess graph
  EXPECT_EQ(launches(g.forward, "ep all-to-all dispatch"), 1);
  EXPECT_EQ(launches(g.forward, "expert fc1"), launches(e.forward, "expert fc1"));
  EXPECT_EQ(launches(g.backward, "attention backward"), 0);  // inside the backward graph
  EXPECT_LT(total(g.forward).first, total(e.forward).first);
  EXPECT_LT(total(g.backward).first, total(e.backward).first);
  EXPECT_DOUBLE_EQ(total(g.forward).second, total(e.forward).second);
  // full: a dense model's layer is one launch forward and one backward; the optimizer stays eager.
  ModelConfig dense = gpt_model(2, 1024, 16, 1024);
  ParallelPlan d;
  d.tp = 2;
  d.dp = 2;
  d.global_batch = 2;
  d.cuda_graphs = kGraphFull;
  const StepProgram whole = build_step_program(dense, d, gpu());
  EXPECT_EQ(total(whole.layers[1].forward).first, 1);
  EXPECT_EQ(total(whole.layers[1].backward).first, 1);
  EXPECT_EQ(total(whole.optimizer).first, static_cast<int>(whole.optimizer.size()));
}

namespace {
// GPUs on one 100 GB/s switch.
topo::Cluster switched_cluster(int gpus) {
  topo::Cluster c;
  const topo::DeviceId sw = c.add_device({topo::DeviceKind::NvSwitch, "switch", 0, 0, 0, false});
  for (int i = 0; i < gpus; ++i) {
    const topo::DeviceId d = c.add_device({topo::DeviceKind::Gpu, "gpu" + std::to_string(i), 0, i, 0, false});
    c.add_duplex(d, sw, {topo::LinkKind::NvLink, 100e9, 0.0});
  }
  c.set_shape(1, gpus);
  return c;
}
}  // namespace

TEST(StepProgram, TheHostShortcutGivesTheFullHostChainsResult) {
  // A model whose kernels outlast their launches takes the shortcut (fewer tasks, the same step
  // and breakdown); a tiny one launched at 50 us per kernel, whose host falls behind, does not.
  const compute::GpuModel g = gpu();
  for (auto [hidden, pp] : {std::pair<int64_t, int>{2048, 1}, {2048, 2}, {64, 2}}) {
    const ModelConfig m = gpt_model(8, hidden, 16, 2048);
    ParallelPlan plan;
    plan.tp = 2;
    plan.pp = pp;
    plan.vp = pp > 1 ? 2 : 1;
    plan.dp = 4 / pp;
    plan.zero = 1;
    plan.global_batch = 16;
    StepProgram p = build_step_program(m, plan, g);
    p.host_launch_s = hidden > 64 ? 4.7e-6 : 50e-6;
    const topo::Cluster cluster = switched_cluster(8);
    SCOPED_TRACE("hidden " + std::to_string(hidden) + " pp " + std::to_string(pp));
    ReplayOptions full;
    full.host_shortcut = false;
    const ReplayResult a = replay_step(p, cluster, coll::CommTuning{}, {}),
                       b = replay_step(p, cluster, coll::CommTuning{}, full);
    EXPECT_NEAR(a.step_time_s, b.step_time_s, 1e-12 * b.step_time_s) << "hidden " << hidden;
    for (size_t c = 0; c < a.breakdown_s.size(); ++c)
      EXPECT_NEAR(a.breakdown_s[c], b.breakdown_s[c], 1e-9 * b.step_time_s) << "hidden " << hidden << " category " << c;
    if (hidden == 2048) {
      EXPECT_LT(a.tasks, b.tasks);
    } else {
      EXPECT_EQ(a.tasks, b.tasks);
      EXPECT_GT(b.breakdown_s[kCatHostLaunch], 0.1 * b.step_time_s);  // launch-bound
    }
  }
}

}  // namespace stacksim::workload
