// Per-layer ops: FLOP closed forms, tensor/sequence/context/expert parallel splits and the
// collectives each parallelism adds.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "models/workload/flops.hpp"
#include "models/workload/ops.hpp"
#include "tests/workload/gpt_model.hpp"

namespace stacksim::workload {
namespace {

// GPT-style layer: MHA, GeLU MLP with ffn = 4h, LayerNorm.
ModelConfig gpt(int64_t h = 4096, int64_t heads = 32, int64_t s = 2048) { return gpt_model(8, h, heads, s); }

ParallelPlan plan(int tp = 1, bool sp = false, int micro_batch = 1) {
  ParallelPlan p;
  p.tp = tp;
  p.sequence_parallel = sp;
  p.micro_batch = micro_batch;
  p.global_batch = micro_batch;
  return p;
}

double sum(const std::vector<Op>& ops, const std::function<bool(const Op&)>& pick,
           const std::function<double(const Op&)>& value) {
  double total = 0;
  for (const Op& o : ops)
    if (pick(o)) total += value(o);
  return total;
}
double flops_of(const std::vector<Op>& ops, OpKind kind) {
  return sum(
      ops, [&](const Op& o) { return o.kind == kind && !o.recompute; }, [](const Op& o) { return o.flops; });
}
int count(const std::vector<Op>& ops, CommKind kind, CommGroup group) {
  return static_cast<int>(sum(
      ops, [&](const Op& o) { return o.kind == OpKind::Comm && o.comm == kind && o.group == group; },
      [](const Op&) { return 1.0; }));
}
double comm_bytes(const std::vector<Op>& ops, CommKind kind, CommGroup group) {
  return sum(
      ops, [&](const Op& o) { return o.kind == OpKind::Comm && o.comm == kind && o.group == group; },
      [](const Op& o) { return o.comm_bytes; });
}

TEST(LayerOps, ForwardFlopsMatchTheMegatronClosedForm) {
  // One GPT layer forward (Narayanan et al. 2021, appendix): QKV 6bsh^2, output 2bsh^2, MLP
  // 16bsh^2, attention scores and values 4bs^2h: 24bsh^2 (1 + s/(6h)), counting causal
  // attention in full.
  const ModelConfig m = gpt();
  const double b = 2, s = 2048, h = 4096;
  const auto fwd = layer_forward_ops(m, plan(1, false, 2), 0);
  const double total = flops_of(fwd, OpKind::Gemm) + flops_of(fwd, OpKind::Attention);
  EXPECT_NEAR(total / (24 * b * s * h * h * (1 + s / (6 * h))), 1.0, 1e-12);
  // The same closed form with Megatron's unfused attention (QK^T and PV as batched GEMMs).
  ModelConfig unfused = m;
  unfused.attention = AttentionImpl::Unfused;
  const auto fwd_u = layer_forward_ops(unfused, plan(1, false, 2), 0);
  EXPECT_NEAR(flops_of(fwd_u, OpKind::Gemm) / (24 * b * s * h * h * (1 + s / (6 * h))), 1.0, 1e-12);
  // And per token it is flops.hpp's layer count.
  EXPECT_NEAR(total / (b * s) / layer_forward_flops_per_token(m, 0), 1.0, 1e-12);
}

TEST(LayerOps, SparseAttentionOpsMatchTheFlopCount) {
  // With DeepSeek Sparse Attention the layer adds the indexer's projections and logits, and its
  // attention kernel attends top-k keys: the ops' FLOPs still equal flops.hpp's per-token count,
  // and at tp 4 the indexer is whole on every rank (its logits are not divided).
  ModelConfig m = gpt();
  m.sparse = {16, 64, 512};
  const auto fwd = layer_forward_ops(m, plan(1, false, 2), 0);
  const double total = flops_of(fwd, OpKind::Gemm) + flops_of(fwd, OpKind::Attention);
  EXPECT_NEAR(total / (2.0 * 2048) / layer_forward_flops_per_token(m, 0), 1.0, 1e-12);
  auto logits = [](const std::vector<Op>& ops) {
    return sum(
        ops, [](const Op& o) { return o.name == "indexer logits"; }, [](const Op& o) { return o.flops; });
  };
  EXPECT_GT(logits(fwd), 0);
  EXPECT_DOUBLE_EQ(logits(layer_forward_ops(m, plan(4), 0)), logits(layer_forward_ops(m, plan(1), 0)));
}

TEST(LayerOps, BackwardIsTwiceForward) {
  for (auto impl : {AttentionImpl::Flash, AttentionImpl::Unfused}) {
    ModelConfig m = gpt();
    m.attention = impl;
    const auto fwd = layer_forward_ops(m, plan(), 0);
    const auto bwd = layer_backward_ops(m, plan(), 0);
    EXPECT_DOUBLE_EQ(flops_of(bwd, OpKind::Gemm), 2 * flops_of(fwd, OpKind::Gemm));
    EXPECT_DOUBLE_EQ(flops_of(bwd, OpKind::Attention), 2 * flops_of(fwd, OpKind::Attention));
    for (const Op& o : bwd) EXPECT_TRUE(o.backward) << o.name;
  }
}

TEST(LayerOps, TensorParallelDividesGemmFlops) {
  const ModelConfig m = gpt();
  const double one = flops_of(layer_forward_ops(m, plan(1), 0), OpKind::Gemm);
  for (int t : {2, 4, 8}) {
    EXPECT_DOUBLE_EQ(flops_of(layer_forward_ops(m, plan(t), 0), OpKind::Gemm), one / t);
    EXPECT_DOUBLE_EQ(flops_of(layer_forward_ops(m, plan(t, true), 0), OpKind::Gemm), one / t);  // SP too
  }
}

TEST(LayerOps, TensorParallelCollectives) {
  // Without SP: an all-reduce of the b*s*h 16-bit block output per block (attention, MLP) in
  // forward and one of the block-input gradient in backward.
  const ModelConfig m = gpt();
  const double bsh2 = 1.0 * 2048 * 4096 * 2;
  const auto fwd = layer_forward_ops(m, plan(8), 0);
  const auto bwd = layer_backward_ops(m, plan(8), 0);
  EXPECT_EQ(count(fwd, CommKind::AllReduce, CommGroup::TP), 2);
  EXPECT_DOUBLE_EQ(comm_bytes(fwd, CommKind::AllReduce, CommGroup::TP), 2 * bsh2);
  EXPECT_EQ(count(bwd, CommKind::AllReduce, CommGroup::TP), 2);
  // With SP each all-reduce becomes an all-gather + reduce-scatter of the same buffer (ring
  // traffic 2(n-1)/n S either way); backward adds the re-gather of the input for wgrad.
  const auto fwd_sp = layer_forward_ops(m, plan(8, true), 0);
  const auto bwd_sp = layer_backward_ops(m, plan(8, true), 0);
  EXPECT_EQ(count(fwd_sp, CommKind::AllReduce, CommGroup::TP), 0);
  EXPECT_EQ(count(fwd_sp, CommKind::AllGather, CommGroup::TP), 2);
  EXPECT_EQ(count(fwd_sp, CommKind::ReduceScatter, CommGroup::TP), 2);
  EXPECT_DOUBLE_EQ(comm_bytes(fwd_sp, CommKind::AllGather, CommGroup::TP),
                   comm_bytes(fwd, CommKind::AllReduce, CommGroup::TP));
  EXPECT_DOUBLE_EQ(comm_bytes(fwd_sp, CommKind::ReduceScatter, CommGroup::TP),
                   comm_bytes(fwd, CommKind::AllReduce, CommGroup::TP));
  EXPECT_EQ(count(bwd_sp, CommKind::AllGather, CommGroup::TP), 4);
  EXPECT_EQ(count(bwd_sp, CommKind::ReduceScatter, CommGroup::TP), 2);
  // SP splits the norm and dropout tokens by t: the input norm moves 4 B x (s/t) x h.
  EXPECT_DOUBLE_EQ(fwd_sp.front().bytes, 4.0 * 2048 / 8 * 4096);
  EXPECT_DOUBLE_EQ(fwd.front().bytes, 4.0 * 2048 * 4096);
  // No TP, no TP collectives.
  EXPECT_EQ(count(layer_forward_ops(m, plan(1, true), 0), CommKind::AllGather, CommGroup::TP), 0);
}

TEST(LayerOps, MegatronLayerOrderWithSequenceParallelism) {
  const ModelConfig m = gpt();
  std::vector<std::string> names;
  for (const Op& o : layer_forward_ops(m, plan(2, true), 0)) names.push_back(o.name);
  const std::vector<std::string> expected{"input norm",
                                          "tp all-gather (attention)",
                                          "qkv projection",
                                          "rotary embedding",
                                          "attention",
                                          "attention output projection",
                                          "tp reduce-scatter (attention)",
                                          "dropout + residual",
                                          "post-attention norm",
                                          "tp all-gather (mlp)",
                                          "mlp fc1",
                                          "mlp gelu",
                                          "mlp fc2",
                                          "tp reduce-scatter (mlp)",
                                          "dropout + residual"};
  EXPECT_EQ(names, expected);
}

TEST(LayerOps, AsyncTensorParallelBackward) {
  // Megatron/Transformer Engine backward of a column-parallel linear: input all-gather (SP) under
  // the dgrad GEMM, input-gradient reduction under the wgrad GEMM; without async, both in sequence
  // around the block's whole backward.
  const ModelConfig m = gpt();
  auto names = [&](const ParallelPlan& p) {
    std::vector<std::string> out;
    for (const Op& o : layer_backward_ops(m, p, 0)) out.push_back(o.name + (o.overlaps_next ? " [async]" : ""));
    return out;
  };
  auto tail = [](const std::vector<std::string>& v, size_t n) {
    return std::vector<std::string>(v.end() - n, v.end());
  };
  ParallelPlan sp = plan(2, true);
  EXPECT_EQ(tail(names(sp), 5),
            (std::vector<std::string>{"tp all-gather (attention) (wgrad input) [async]", "qkv projection dgrad",
                                      "tp reduce-scatter (attention) (input grad) [async]", "qkv projection wgrad",
                                      "input norm backward"}))
      << "the layer's backward ends with the attention block's entry";
  ParallelPlan ar = plan(2);
  const auto a = names(ar);
  EXPECT_NE(std::find(a.begin(), a.end(), "tp all-reduce (mlp) (input grad) [async]"), a.end());
  ar.async_tp_backward = false;
  sp.async_tp_backward = false;
  EXPECT_EQ(tail(names(sp), 4),
            (std::vector<std::string>{"qkv projection dgrad", "qkv projection wgrad",
                                      "tp reduce-scatter (attention) (input grad)", "input norm backward"}));
  // Same collectives and bytes either way: only their placement changes.
  EXPECT_EQ(layer_backward_ops(m, ar, 0).size(), layer_backward_ops(m, plan(2), 0).size());
}

TEST(LayerOps, TensorParallelCommOverlapPipelinesTheSequenceParallelCollectivesWithTheirGemms) {
  // Userbuffers: each all-gather runs under the GEMM that consumes it, each reduce-scatter under
  // the GEMM that produces it; the backward's output-gradient all-gather under the exit dgrad.
  const ModelConfig m = gpt();
  ParallelPlan p = plan(2, true);
  p.tp_comm_overlap = true;
  std::vector<std::string> names;
  for (const Op& o : layer_forward_ops(m, p, 0)) names.push_back(o.name + (o.overlaps_next ? " [async]" : ""));
  const std::vector<std::string> expected{"input norm",
                                          "tp all-gather (attention) [async]",
                                          "qkv projection",
                                          "rotary embedding",
                                          "attention",
                                          "tp reduce-scatter (attention) [async]",
                                          "attention output projection",
                                          "dropout + residual",
                                          "post-attention norm",
                                          "tp all-gather (mlp) [async]",
                                          "mlp fc1",
                                          "mlp gelu",
                                          "tp reduce-scatter (mlp) [async]",
                                          "mlp fc2",
                                          "dropout + residual"};
  EXPECT_EQ(names, expected);
  const std::vector<Op> backward = layer_backward_ops(m, p, 0);
  const auto gather = std::find_if(backward.begin(), backward.end(),
                                   [](const Op& o) { return o.name == "tp all-gather (mlp) (output grad)"; });
  ASSERT_NE(gather, backward.end());
  EXPECT_TRUE(gather->overlaps_next);
  EXPECT_EQ(std::next(gather)->name, "mlp fc2 dgrad");
  // Without sequence parallelism there is nothing to pipeline (and the plan check refuses the key).
  ParallelPlan no_sp = plan(2);
  no_sp.tp_comm_overlap = true;
  for (const Op& o : layer_forward_ops(m, no_sp, 0)) EXPECT_FALSE(o.overlaps_next) << o.name;
}

TEST(LayerOps, Fp8TrainingGathersQuantisedTensorsAndReducesIn16Bit) {
  // Transformer Engine quantises before every sequence-parallel all-gather (forward input, the
  // wgrad re-gather, the output gradient): one byte per element, half the 16-bit volume. The
  // reduce-scatters carry the GEMMs' 16-bit outputs either way.
  const ModelConfig m = gpt();
  ParallelPlan bf16 = plan(4, true), fp8 = plan(4, true);
  fp8.precision = Precision::FP8;
  for (const bool backward : {false, true}) {
    const auto ops = [&](const ParallelPlan& p) {
      return backward ? layer_backward_ops(m, p, 0) : layer_forward_ops(m, p, 0);
    };
    const double gather16 = comm_bytes(ops(bf16), CommKind::AllGather, CommGroup::TP);
    ASSERT_GT(gather16, 0);
    EXPECT_DOUBLE_EQ(comm_bytes(ops(fp8), CommKind::AllGather, CommGroup::TP), gather16 / 2);
    EXPECT_DOUBLE_EQ(comm_bytes(ops(fp8), CommKind::ReduceScatter, CommGroup::TP),
                     comm_bytes(ops(bf16), CommKind::ReduceScatter, CommGroup::TP));
  }
  // Per layer forward: two gathers of the s x h hidden states, 2 bytes each in bf16.
  EXPECT_DOUBLE_EQ(comm_bytes(layer_forward_ops(m, fp8, 0), CommKind::AllGather, CommGroup::TP), 2.0 * 2048 * 4096);
}

TEST(LayerOps, GqaAndSwiGluShapes) {
  ModelConfig m = gpt(8192, 64);
  m.kv_heads = 8;
  m.mlp = Mlp::SwiGlu;
  m.ffn_hidden = 28672;
  const auto fwd = layer_forward_ops(m, plan(4), 0);
  const Op& qkv = fwd[1];
  EXPECT_EQ(qkv.name, "qkv projection");
  EXPECT_EQ(qkv.n, (64 + 2 * 8) * 128 / 4);  // Q heads + K and V of kv_heads, split by tp
  EXPECT_EQ(qkv.k, 8192);
  // SwiGLU: 3 weight matrices (gate, up fused into fc1; down) = 3 * 2*T*h*ffn/t FLOPs.
  const double mlp = sum(
      fwd, [](const Op& o) { return o.name.rfind("mlp fc", 0) == 0; }, [](const Op& o) { return o.flops; });
  EXPECT_DOUBLE_EQ(mlp, 3.0 * 2 * 2048 * 8192 * 28672 / 4);
  for (const Op& o : fwd)
    if (o.kind == OpKind::Attention) {
      EXPECT_EQ(o.attention.heads, 16);
      EXPECT_EQ(o.attention.kv_heads, 2);
    }
}

TEST(LayerOps, EagerElementwiseKernelsMoveMoreBytesThanFusedOnes) {
  ModelConfig m = gpt(4096, 32);
  m.kv_heads = 8;
  m.mlp = Mlp::SwiGlu;
  m.ffn_hidden = 14336;
  m.norm = Norm::RmsNorm;
  ParallelPlan fused = plan(1, false, 2), eager = fused;
  eager.kernels = Kernels::Eager;
  auto bytes_of = [](const std::vector<Op>& ops, const std::string& name) {
    return sum(
        ops, [&](const Op& o) { return o.name == name; }, [](const Op& o) { return o.bytes; });
  };
  auto kernels_of = [](const std::vector<Op>& ops, const std::string& name) {
    return sum(
        ops, [&](const Op& o) { return o.name == name; }, [](const Op& o) { return 1.0 * o.kernels; });
  };
  const double T = 2.0 * 2048, h = 4096, qk = (32 + 8) * 128.0, f = 14336;
  const auto f_ops = layer_forward_ops(m, fused, 0), e_ops = layer_forward_ops(m, eager, 0);
  EXPECT_DOUBLE_EQ(bytes_of(f_ops, "input norm"), 4 * T * h);
  EXPECT_DOUBLE_EQ(bytes_of(e_ops, "input norm"), 36 * T * h);  // fp32 up-cast chain
  EXPECT_DOUBLE_EQ(kernels_of(e_ops, "input norm"), 8);
  EXPECT_DOUBLE_EQ(bytes_of(f_ops, "rotary embedding"), 4 * T * qk);
  EXPECT_DOUBLE_EQ(bytes_of(e_ops, "rotary embedding"), 20 * T * qk);
  EXPECT_DOUBLE_EQ(bytes_of(f_ops, "mlp swiglu"), 6 * T * f);
  EXPECT_DOUBLE_EQ(bytes_of(e_ops, "mlp swiglu"), 10 * T * f);
  // The backward of each moves twice the bytes, one gradient kernel per forward launch.
  const auto e_bwd = layer_backward_ops(m, eager, 0);
  EXPECT_DOUBLE_EQ(bytes_of(e_bwd, "input norm backward"), 72 * T * h);
  EXPECT_DOUBLE_EQ(kernels_of(e_bwd, "input norm backward"), 8);
  // LayerNorm and GELU are one PyTorch kernel either way; the GEMMs do not change.
  ModelConfig g = gpt(4096, 32);
  EXPECT_DOUBLE_EQ(bytes_of(layer_forward_ops(g, eager, 0), "input norm"), 4 * T * h);
  EXPECT_DOUBLE_EQ(bytes_of(layer_forward_ops(g, eager, 0), "mlp gelu"),
                   bytes_of(layer_forward_ops(g, fused, 0), "mlp gelu"));
  EXPECT_DOUBLE_EQ(flops_of(e_ops, OpKind::Gemm), flops_of(f_ops, OpKind::Gemm));
}

TEST(LayerOps, Recomputation) {
  const ModelConfig m = gpt();
  ParallelPlan p = plan(8);
  const auto fwd = layer_forward_ops(m, p, 0);
  p.recompute = Recompute::Full;
  const auto full = layer_backward_ops(m, p, 0);
  // Full: the whole forward, TP all-reduces included, first.
  for (size_t i = 0; i < fwd.size(); ++i) {
    EXPECT_TRUE(full[i].recompute);
    EXPECT_EQ(full[i].kind, fwd[i].kind);
  }
  EXPECT_FALSE(full[fwd.size()].recompute);
  p.recompute = Recompute::Selective;
  const auto sel = layer_backward_ops(m, p, 0);
  ASSERT_TRUE(sel.front().recompute);
  EXPECT_EQ(sel.front().kind, OpKind::Attention);
  EXPECT_FALSE(sel[1].recompute);
}

TEST(LayerOps, SelectiveRecomputationReRunsTheNamedModules) {
  // DeepSeek-V3's set (its report, section 3.2.3, and Megatron-Core's recompute_modules): the
  // norms, the MLA up-projections with RoPE and the experts' activation, re-run before the
  // backward, and not the attention core.
  ModelConfig m = parse_hf_config(std::string(STACKSIM_TEST_DATA_DIR) + "/hf/deepseek-v3.json");
  m.seq_len = 4096;
  m.attention = AttentionImpl::Flash;
  ParallelPlan p = plan();
  p.recompute = Recompute::Selective;
  p.recompute_modules = kRecomputeLayernorm | kRecomputeMlaUpProj | kRecomputeMoeAct;
  std::vector<std::string> recomputed;
  for (const Op& o : layer_backward_ops(m, p, 3))
    if (o.recompute) recomputed.push_back(o.name);
  const std::vector<std::string> expected{"recompute input norm",          "recompute q up projection",
                                          "recompute kv up projection",    "recompute rotary embedding",
                                          "recompute post-attention norm", "recompute expert swiglu"};
  EXPECT_EQ(recomputed, expected);
  // The whole MoE layer: its dispatch and combine all-to-alls are re-run too.
  p.ep = 8;
  p.dp = 8;
  p.recompute_modules = kRecomputeMoe;
  int all_to_alls = 0;
  for (const Op& o : layer_backward_ops(m, p, 3))
    all_to_alls += o.recompute && o.kind == OpKind::Comm && o.comm == CommKind::AllToAll;
  EXPECT_EQ(all_to_alls, 2);
}

TEST(LayerOps, TorchtitanOpCheckpointingRecomputesEverySecondMatmulAndKeepsTheAttention) {
  // Llama-style layer: GQA, SwiGLU. PyTorch issues wq, wk, wv, wo, w1, w3, w2; torchtitan's op
  // policy keeps the odd-numbered matmuls and recomputes wk, wo and w3.
  ModelConfig m = gpt(4096, 32);
  m.kv_heads = 8;
  m.mlp = Mlp::SwiGlu;
  m.ffn_hidden = 14336;
  const double T = 2048, h = 4096, kv = 8 * 128, f = 14336;
  const auto recomputed_gemm_flops = [&](const ParallelPlan& p) {
    return sum(
        layer_backward_ops(m, p, 0), [](const Op& o) { return o.recompute && o.kind == OpKind::Gemm; },
        [](const Op& o) { return o.flops; });
  };
  ParallelPlan p = plan();
  p.recompute = Recompute::Op;
  EXPECT_DOUBLE_EQ(recomputed_gemm_flops(p), 2 * T * h * (kv + h + f));
  // Under tp 2 with sequence parallelism the recomputed matmuls are split, the entry all-gathers
  // run again and the exit reduce-scatters (kept) do not; the attention core is never re-run.
  ParallelPlan t2 = plan(2, true);
  t2.recompute = Recompute::Op;
  EXPECT_DOUBLE_EQ(recomputed_gemm_flops(t2), 2 * T * h * (kv + h + f) / 2);
  int gathers = 0, scatters = 0, attention = 0, norms = 0;
  for (const Op& o : layer_backward_ops(m, t2, 0)) {
    if (!o.recompute) continue;
    gathers += o.kind == OpKind::Comm && o.comm == CommKind::AllGather;
    scatters += o.kind == OpKind::Comm && o.comm == CommKind::ReduceScatter;
    attention += o.kind == OpKind::Attention;
    norms += o.cls == OpClass::Norm;
  }
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(scatters, 0);
  EXPECT_EQ(attention, 0);
  EXPECT_EQ(norms, 2);
  // FP8 linears (torch._scaled_mm) are not on the save list: every linear is recomputed.
  p.precision = Precision::FP8;
  EXPECT_DOUBLE_EQ(recomputed_gemm_flops(p), 2 * T * h * (h + 2 * kv + h + 3 * f));
  // The hardware FLOP count adds the same matmuls over the step.
  p.precision = Precision::BF16;
  ParallelPlan none = p;
  none.recompute = Recompute::None;
  EXPECT_DOUBLE_EQ(hardware_flops_per_step(m, p) - hardware_flops_per_step(m, none),
                   m.layers * 2 * T * h * (kv + h + f) * p.global_batch);
}

TEST(LayerOps, ContextParallelRingAttention) {
  const ModelConfig m = gpt();
  ParallelPlan p = plan(2);
  p.cp = 4;
  const auto fwd = layer_forward_ops(m, p, 0);
  // K and V of the whole sequence for this rank's heads, 16-bit: 2 * b*s * (h/t) * 2 bytes.
  EXPECT_EQ(count(fwd, CommKind::AllGather, CommGroup::CP), 1);
  EXPECT_DOUBLE_EQ(comm_bytes(fwd, CommKind::AllGather, CommGroup::CP), 2.0 * 2048 * 4096 / 2 * 2);
  for (const Op& o : fwd)
    if (o.kind == OpKind::Attention) {
      EXPECT_EQ(o.attention.seq_q, 2048 / 4);
      EXPECT_EQ(o.attention.seq_kv, 2048);
    }
  const auto bwd = layer_backward_ops(m, p, 0);
  EXPECT_EQ(count(bwd, CommKind::AllGather, CommGroup::CP), 1);
  EXPECT_EQ(count(bwd, CommKind::ReduceScatter, CommGroup::CP), 1);
  // cp ranks together do the whole layer: GEMM FLOPs split by cp (and tp).
  EXPECT_DOUBLE_EQ(flops_of(fwd, OpKind::Gemm) * 4 * 2, flops_of(layer_forward_ops(m, plan(1), 0), OpKind::Gemm));
}

TEST(LayerOps, UlyssesAllToAllsTurnSequenceShardsIntoHeadShards) {
  // DeepSpeed-Ulysses on cp 4 (tp 2): Q, K, V of this rank's s/cp tokens all-to-all into the
  // whole sequence for heads/(tp*cp) heads, the output back; the same attention FLOPs as the ring.
  const ModelConfig m = gpt();  // 32 heads of 128, MHA
  ParallelPlan ring = plan(2);
  ring.cp = 4;
  ParallelPlan ulysses = ring;
  ulysses.cp_comm = CpComm::AllToAll;
  const auto fwd = layer_forward_ops(m, ulysses, 0);
  EXPECT_EQ(count(fwd, CommKind::AllGather, CommGroup::CP), 0);
  EXPECT_EQ(count(fwd, CommKind::AllToAll, CommGroup::CP), 2);
  const double tokens = 2048 / 4, width = 4096 / 2;  // per cp rank, per tp rank
  EXPECT_DOUBLE_EQ(comm_bytes(fwd, CommKind::AllToAll, CommGroup::CP), 2.0 * tokens * (3 * width + width));
  for (const Op& o : fwd)
    if (o.kind == OpKind::Attention) {
      EXPECT_EQ(o.attention.heads, 32 / 2 / 4);
      EXPECT_EQ(o.attention.seq_q, 2048);
      EXPECT_EQ(o.attention.seq_kv, 2048);
      for (const Op& r : layer_forward_ops(m, ring, 0))
        if (r.kind == OpKind::Attention) EXPECT_DOUBLE_EQ(o.flops, r.flops);
    }
  // The backward runs both all-to-alls again (dO in, dQ/dK/dV out).
  EXPECT_EQ(count(layer_backward_ops(m, ulysses, 0), CommKind::AllToAll, CommGroup::CP), 2);
}

TEST(LayerOps, ContextParallelExchangeRunsUnderTheAttentionOnlyWithP2p) {
  // p2p (Transformer Engine's ring): the forward K/V exchange runs under the attention, the
  // backward's K/V and dK/dV exchanges under the attention backward (placed right before it).
  // all_gather: K/V gathered before the attention (backward too), dK/dV reduce-scattered after it.
  const ModelConfig m = gpt();
  ParallelPlan p = plan(2);
  p.cp = 4;
  auto index_of = [](const std::vector<Op>& ops, auto pred) {
    for (size_t i = 0; i < ops.size(); ++i)
      if (pred(ops[i])) return static_cast<int>(i);
    return -1;
  };
  auto is_cp = [](CommKind k) {
    return [k](const Op& o) { return o.kind == OpKind::Comm && o.group == CommGroup::CP && o.comm == k; };
  };
  auto is_attention = [](const Op& o) { return o.kind == OpKind::Attention; };
  for (const CpComm mode : {CpComm::P2P, CpComm::AllGather}) {
    p.cp_comm = mode;
    const bool ring = mode == CpComm::P2P;
    const auto fwd = layer_forward_ops(m, p, 0);
    const int kv = index_of(fwd, is_cp(CommKind::AllGather));
    ASSERT_GE(kv, 0);
    EXPECT_EQ(index_of(fwd, is_attention), kv + 1);
    EXPECT_EQ(fwd[kv].overlaps_next, ring);
    const auto bwd = layer_backward_ops(m, p, 0);
    const int att = index_of(bwd, is_attention), ag = index_of(bwd, is_cp(CommKind::AllGather)),
              rs = index_of(bwd, is_cp(CommKind::ReduceScatter));
    EXPECT_LT(ag, att);
    EXPECT_EQ(rs < att, ring);
    EXPECT_EQ(bwd[ag].overlaps_next, ring);
    EXPECT_EQ(bwd[rs].overlaps_next, ring);
    if (ring) {
      EXPECT_EQ(att, std::max(ag, rs) + 1);
    }
  }
}

// The gpt() layer with `experts` SwiGLU experts of width `ffn`, top_k routing, balanced load; and a
// plan with expert parallelism `ep` out of dp = ep.
ModelConfig moe_gpt(int experts, int top_k, int64_t ffn) {
  ModelConfig m = gpt();
  m.mlp = Mlp::SwiGlu;
  m.moe.experts = experts;
  m.moe.top_k = top_k;
  m.moe.expert_ffn_hidden = ffn;
  m.moe.imbalance = 1.0;
  return m;
}
ParallelPlan ep_plan(int ep) {
  ParallelPlan p = plan();
  p.ep = p.dp = ep;
  return p;
}

TEST(LayerOps, MoeExpertsAndAllToAll) {
  ModelConfig m = moe_gpt(8, 2, 14336);
  ParallelPlan p = ep_plan(8);
  const auto fwd = layer_forward_ops(m, p, 0);
  // Dispatch and combine: the rank's s*top_k token copies of h 16-bit values each.
  EXPECT_EQ(count(fwd, CommKind::AllToAll, CommGroup::EP), 2);
  EXPECT_DOUBLE_EQ(comm_bytes(fwd, CommKind::AllToAll, CommGroup::EP), 2 * 2048.0 * 2 * 4096 * 2);
  // One local expert processes the ep ranks' s*top_k/E*ep = s*top_k tokens on average:
  // expert FLOPs = 3 matrices x 2 x (s*top_k) x h x f.
  const double experts = sum(
      fwd, [](const Op& o) { return o.name.rfind("expert fc", 0) == 0; }, [](const Op& o) { return o.flops; });
  EXPECT_DOUBLE_EQ(experts, 3.0 * 2 * 2048 * 2 * 4096 * 14336);
  EXPECT_EQ(count(layer_backward_ops(m, p, 0), CommKind::AllToAll, CommGroup::EP), 2);
  // With TP + SP the dispatched tokens (s*top_k of them) are gathered over TP and kept for the
  // backward: forward AG + RS, backward AG (output grad) + RS (input grad), no re-gather.
  p.tp = 2;
  p.sequence_parallel = true;
  p.dp = 8;
  const auto fwd_tp = layer_forward_ops(m, p, 0);
  const auto bwd_tp = layer_backward_ops(m, p, 0);
  auto expert_comm = [](const std::vector<Op>& ops, CommKind k) {
    return static_cast<int>(sum(
        ops,
        [&](const Op& o) {
          return o.kind == OpKind::Comm && o.comm == k && o.name.find("(experts)") != std::string::npos;
        },
        [](const Op&) { return 1.0; }));
  };
  EXPECT_EQ(expert_comm(fwd_tp, CommKind::AllGather), 1);
  EXPECT_EQ(expert_comm(bwd_tp, CommKind::AllGather), 1);
  EXPECT_EQ(expert_comm(bwd_tp, CommKind::ReduceScatter), 1);
  for (const Op& o : fwd_tp)
    if (o.name == "tp all-gather (experts)") {
      EXPECT_DOUBLE_EQ(o.comm_bytes, 2048.0 * 2 * 4096 * 2);
    }
  // Parallel folding (etp 1): whole experts on this rank's own sequence-parallel tokens, no TP
  // collectives around them; the tp ranks together do the same expert work as one rank of the
  // unfolded plan, and each holds E/ep whole experts.
  p.etp = 1;
  const auto fwd_folded = layer_forward_ops(m, p, 0);
  EXPECT_EQ(expert_comm(fwd_folded, CommKind::AllGather), 0);
  EXPECT_EQ(expert_comm(layer_backward_ops(m, p, 0), CommKind::ReduceScatter), 0);
  const double folded = sum(
      fwd_folded, [](const Op& o) { return o.name.rfind("expert fc", 0) == 0; }, [](const Op& o) { return o.flops; });
  EXPECT_DOUBLE_EQ(folded * p.tp, experts);
  EXPECT_DOUBLE_EQ(comm_bytes(fwd_folded, CommKind::AllToAll, CommGroup::EP), 2 * 1024.0 * 2 * 4096 * 2);
  EXPECT_DOUBLE_EQ(layer_expert_params_per_rank(m, p, 0), m.expert_params() * 8 / p.ep);
  p.etp = 0;  // = tp
  EXPECT_DOUBLE_EQ(layer_expert_params_per_rank(m, p, 0), m.expert_params() * 8 / p.ep / p.tp);
  // The busiest rank's imbalance scales its expert work.
  m.moe.imbalance = 1.25;
  p.tp = 1;
  p.etp = 0;
  const double busier = sum(
      layer_forward_ops(m, p, 0), [](const Op& o) { return o.name.rfind("expert fc", 0) == 0; },
      [](const Op& o) { return o.flops; });
  EXPECT_NEAR(busier / experts, 1.25, 1e-9);
}

TEST(LayerOps, AllToAllDispatcherSortsTokensBySeveralLocalExperts) {
  // Megatron-Core's all-to-all dispatcher re-sorts the received copies by local expert (and back
  // before the combine) when a rank holds several experts: a read and a write of each copy.
  const ModelConfig m = moe_gpt(32, 4, 1024);
  ParallelPlan p = ep_plan(8);
  const auto sorts = [&](const std::vector<Op>& ops) {
    return sum(
        ops, [](const Op& o) { return o.name.rfind("sort tokens", 0) == 0 || o.name.rfind("restore tokens", 0) == 0; },
        [](const Op& o) { return o.bytes; });
  };
  const double received = 2048.0 * 4;  // s * top_k copies reach this rank's 4 experts on average
  EXPECT_DOUBLE_EQ(sorts(layer_forward_ops(m, p, 0)), 2 * (2 * 2.0 * received * 4096));
  EXPECT_DOUBLE_EQ(sorts(layer_backward_ops(m, p, 0)), 2 * (2 * 2.0 * received * 4096));  // the inverse sorts
  p.ep_dispatch = EpDispatch::DeepEP;  // its receive-side permute is the routing permute
  EXPECT_EQ(sorts(layer_forward_ops(m, p, 0)), 0.0);
  EXPECT_EQ(sorts(layer_forward_ops(m, ep_plan(32), 0)), 0.0);  // one expert per rank: nothing to sort
}

TEST(LayerOps, DroplessRoutingMakesTheHostWaitOncePerMoeForward) {
  // The host reads the token counts back before the dispatch (or, without expert parallelism,
  // before the grouped GEMM); the backward reuses them; a recomputed forward reads them again; a
  // capacity factor (static shapes) reads nothing.
  ModelConfig m = moe_gpt(8, 2, 14336);
  const auto syncs = [](const std::vector<Op>& ops) {
    std::vector<std::string> names;
    for (const Op& o : ops)
      if (o.host_sync) names.push_back(o.name);
    return names;
  };
  ParallelPlan p = ep_plan(8);
  EXPECT_EQ(syncs(layer_forward_ops(m, p, 0)), std::vector<std::string>{"ep all-to-all dispatch"});
  EXPECT_TRUE(syncs(layer_backward_ops(m, p, 0)).empty());
  p.recompute = Recompute::Full;
  EXPECT_EQ(syncs(layer_backward_ops(m, p, 0)), std::vector<std::string>{"recompute ep all-to-all dispatch"});
  EXPECT_EQ(syncs(layer_forward_ops(m, ep_plan(1), 0)), std::vector<std::string>{"expert fc1 (gate+up)"});
  EXPECT_TRUE(syncs(layer_forward_ops(gpt(), plan(), 0)).empty());  // dense: none
  m.moe.capacity_factor = 1.25;
  EXPECT_TRUE(syncs(layer_forward_ops(m, ep_plan(8), 0)).empty());
}

TEST(StepOps, OpFlopsOverAStepAreTheModelFlops) {
  // Summing every rank's GEMM and attention FLOPs over a step (layers forward + backward, the
  // logits, all micro-batches, all dp*tp ranks) gives model_flops_per_step: the ops and the FLOP
  // convention describe the same work.
  // The same with a multi-token-prediction module (its projection, layer and logits).
  ModelConfig m = gpt(2048, 16, 1024);
  ParallelPlan p = plan(2, true);
  p.dp = 4;
  p.global_batch = 16;
  for (int mtp : {0, 1}) {
    m.mtp_layers = mtp;
    double per_rank = 0;
    for (int l = 0; l < m.layers; ++l) {
      for (const auto& ops : {layer_forward_ops(m, p, l), layer_backward_ops(m, p, l)})
        per_rank += flops_of(ops, OpKind::Gemm) + flops_of(ops, OpKind::Attention);
    }
    for (const auto& ops :
         {head_forward_ops(m, p), head_backward_ops(m, p), mtp_forward_ops(m, p), mtp_backward_ops(m, p)})
      per_rank += flops_of(ops, OpKind::Gemm) + flops_of(ops, OpKind::Attention);
    const double step = per_rank * p.num_micro_batches() * p.dp * p.tp;
    EXPECT_NEAR(step / model_flops_per_step(m, p), 1.0, 1e-12) << "mtp_layers " << mtp;
  }
  // The MTP module's parameters sit on the last stage: a layer, two norms and the 2h x h projection.
  EXPECT_DOUBLE_EQ(mtp_params_per_rank(m, p), layer_params_per_rank(m, p, m.layers - 1) + 2.0 * m.norm_params() +
                                                  2.0 * m.hidden * m.hidden / p.tp);
}

TEST(StepOps, MtpProjectionCollectivesAndRecomputation) {
  // Megatron-Core's eh_proj is column-parallel: with sequence parallelism its 2h-wide input is
  // gathered over the sequence (reduce-scattered and re-gathered for wgrad in backward) and its
  // h-wide output gathered over the hidden dimension, whose sequence split back is a gather in
  // backward. Without sequence parallelism: the output gather forward, the input-grad all-reduce
  // backward. Beyond what a plain last layer and head send.
  ModelConfig m = gpt(2048, 16, 1024);
  m.mtp_layers = 1;
  const double T = 1024, h = 2048;
  auto extra = [&](const ParallelPlan& p, bool backward, CommKind kind) {
    const auto mtp = backward ? mtp_backward_ops(m, p) : mtp_forward_ops(m, p);
    const auto layer = backward ? layer_backward_ops(m, p, m.layers - 1) : layer_forward_ops(m, p, m.layers - 1);
    const auto head = backward ? head_backward_ops(m, p) : head_forward_ops(m, p);
    return comm_bytes(mtp, kind, CommGroup::TP) - comm_bytes(layer, kind, CommGroup::TP) -
           comm_bytes(head, kind, CommGroup::TP);
  };
  const ParallelPlan sp = plan(2, true), no_sp = plan(2, false);
  EXPECT_DOUBLE_EQ(extra(sp, false, CommKind::AllGather), 2.0 * T * (2 * h + h));
  EXPECT_DOUBLE_EQ(extra(sp, true, CommKind::AllGather), 2.0 * T * (h + 2 * h));
  EXPECT_DOUBLE_EQ(extra(sp, true, CommKind::ReduceScatter), 2.0 * T * 2 * h);
  EXPECT_DOUBLE_EQ(extra(no_sp, false, CommKind::AllGather), 2.0 * T * h);
  EXPECT_DOUBLE_EQ(extra(no_sp, true, CommKind::AllGather), 0.0);
  EXPECT_DOUBLE_EQ(extra(no_sp, true, CommKind::AllReduce), 2.0 * T * 2 * h);
  // Full recomputation re-runs the projection and the layer (not the head) before each depth's
  // backward, even when recompute_layers would leave the last layer alone.
  ParallelPlan full = plan(2, true);
  full.recompute = Recompute::Full;
  full.recompute_layers = 1;
  auto recomputed = [](const std::vector<Op>& ops) {
    return static_cast<int>(sum(
        ops, [](const Op& o) { return o.recompute; }, [](const Op&) { return 1.0; }));
  };
  const int layer_ops = static_cast<int>(layer_forward_ops(m, full, m.layers - 1).size());
  const int projection_ops =
      static_cast<int>(mtp_forward_ops(m, full).size() - layer_ops - head_forward_ops(m, full).size());
  EXPECT_EQ(recomputed(mtp_backward_ops(m, full)), layer_ops + projection_ops);
  m.mtp_layers = 2;
  EXPECT_EQ(recomputed(mtp_backward_ops(m, full)), 2 * (layer_ops + projection_ops));
  EXPECT_EQ(recomputed(mtp_backward_ops(m, plan(2, true))), 0);
}

TEST(StepOps, HeadAndEmbeddingCollectives) {
  const ModelConfig m = gpt();
  const auto head = head_forward_ops(m, plan(8));
  EXPECT_EQ(count(head, CommKind::AllReduce, CommGroup::TP), 3);                           // cross-entropy statistics
  EXPECT_EQ(count(head_backward_ops(m, plan(8)), CommKind::AllReduce, CommGroup::TP), 1);  // input grad
  EXPECT_EQ(count(embedding_forward_ops(m, plan(8)), CommKind::AllReduce, CommGroup::TP), 1);
  EXPECT_EQ(count(embedding_forward_ops(m, plan(8, true)), CommKind::ReduceScatter, CommGroup::TP), 1);
  EXPECT_EQ(count(embedding_backward_ops(m, plan(8, true)), CommKind::AllGather, CommGroup::TP), 1);
}

TEST(StepOps, OptimizerBytesPerParameter) {
  // Per local parameter with 16-bit gradients (g = 2): gradient norm g + Adam 24 + g + fp32 ->
  // 16-bit weights 6 = 34 B over the optimizer shard, then g per parameter to zero the buffer.
  const ModelConfig m = gpt();
  ParallelPlan p = plan();
  const double params = stage_params_per_rank(m, p, 0);
  auto bytes = [&](const ParallelPlan& q, size_t i) { return optimizer_ops(m, q).at(i).bytes; };
  EXPECT_DOUBLE_EQ(bytes(p, 0), 34.0 * params);
  EXPECT_DOUBLE_EQ(bytes(p, 1), 2.0 * params);
  p.dp = 8;
  p.zero = 1;  // the optimizer shard is 1/dp; the gradient buffer is not sharded
  EXPECT_DOUBLE_EQ(bytes(p, 0), 34.0 * params / 8);
  EXPECT_DOUBLE_EQ(bytes(p, 1), 2.0 * params);
  p.zero = 2;
  EXPECT_DOUBLE_EQ(bytes(p, 1), 2.0 * params / 8);
  p.grad_reduce_fp32 = true;  // fp32 main gradients: 4 B read twice and zeroed
  EXPECT_DOUBLE_EQ(bytes(p, 0), 38.0 * params / 8);
  EXPECT_DOUBLE_EQ(bytes(p, 1), 4.0 * params / 8);
  p.zero = 3;  // FSDP: no 16-bit copy (cast at the gather), no buffer to zero
  EXPECT_DOUBLE_EQ(bytes(p, 0), 32.0 * params / 8);
  EXPECT_EQ(optimizer_ops(m, p).size(), 1u);
  p.optimizer_moment_bytes = 2.0;  // Adam reads and writes 2-byte moments: 16 B instead of 24
  EXPECT_DOUBLE_EQ(bytes(p, 0), 24.0 * params / 8);
  // With pp = 1 and tp = 1 the rank holds the whole model.
  EXPECT_DOUBLE_EQ(params, m.total_params());
}

TEST(StepOps, AutocastCastsWeightsEachForwardAndAccumulatesFp32Gradients) {
  // torch.autocast over fp32 weights: each layer's forward starts by casting its weights to
  // 16-bit (read 4, write 2 B per parameter); its backward ends by casting the 16-bit weight
  // gradients into fp32 .grad (6 B) and, after the first of m micro-batches, accumulating (+8 B);
  // Adam updates the fp32 weights in place: 4 + 24 + 4 B, no 16-bit copy.
  const ModelConfig m = gpt();
  ParallelPlan p = plan();
  const double layer = layer_params_per_rank(m, p, 0);
  const size_t plain_forward = layer_forward_ops(m, p, 0).size(), plain_backward = layer_backward_ops(m, p, 0).size();
  p.autocast = true;
  p.global_batch = 4;  // four micro-batches
  const std::vector<Op> fwd = layer_forward_ops(m, p, 0), bwd = layer_backward_ops(m, p, 0);
  ASSERT_EQ(fwd.size(), plain_forward + 1);
  ASSERT_EQ(bwd.size(), plain_backward + 1);
  EXPECT_EQ(fwd.front().name, "autocast: 16-bit weight copies");
  EXPECT_DOUBLE_EQ(fwd.front().bytes, 6.0 * layer);
  EXPECT_EQ(bwd.back().name, "autocast: fp32 gradient accumulation");
  EXPECT_DOUBLE_EQ(bwd.back().bytes, (6.0 + 8.0 * 3 / 4) * layer);
  EXPECT_DOUBLE_EQ(head_forward_ops(m, p).front().bytes, 6.0 * embedding_params_per_rank(m, p));
  const double params = stage_params_per_rank(m, p, 0);
  EXPECT_DOUBLE_EQ(optimizer_ops(m, p).at(0).bytes, 32.0 * params);
  EXPECT_DOUBLE_EQ(optimizer_ops(m, p).at(1).bytes, 4.0 * params);  // the fp32 gradients zeroed
}

TEST(StepOps, EagerCrossEntropyIsPyTorchsFp32LogSoftmax) {
  // Fused: 12 B per logit forward, 24 backward. Eager PyTorch: the fp32 upcast (6) and
  // log_softmax's three reads and one write of fp32 (16) forward; softmax gradient (16), nll
  // gradient (4) and the cast back (6) backward.
  const ModelConfig m = gpt();
  ParallelPlan p = plan();
  auto loss = [&](const std::vector<Op>& ops) {
    for (const Op& o : ops)
      if (o.name.rfind("cross-entropy", 0) == 0) return o.bytes;
    return 0.0;
  };
  const double logits = static_cast<double>(m.seq_len) * m.vocab;
  EXPECT_DOUBLE_EQ(loss(head_forward_ops(m, p)), 12.0 * logits);
  EXPECT_DOUBLE_EQ(loss(head_backward_ops(m, p)), 24.0 * logits);
  p.kernels = Kernels::Eager;
  EXPECT_DOUBLE_EQ(loss(head_forward_ops(m, p)), 22.0 * logits);
  EXPECT_DOUBLE_EQ(loss(head_backward_ops(m, p)), 26.0 * logits);
}

TEST(StepOps, UnevenStageBounds) {
  ModelConfig m = gpt();
  m.layers = 126;
  ParallelPlan p = plan();
  p.pp = 16;
  p.first_stage_layers = 7;
  p.last_stage_layers = 7;
  const std::vector<int> b = virtual_stage_bounds(m, p);
  ASSERT_EQ(b.size(), 17u);
  EXPECT_EQ(b[1], 7);
  EXPECT_EQ(b[2], 15);
  EXPECT_EQ(b[15], 119);
  EXPECT_EQ(b[16], 126);
}

}  // namespace
}  // namespace stacksim::workload
