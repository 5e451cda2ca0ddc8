// Memory footprint: ZeRO model states and Korthikanti et al.'s activation formulas.
#include <gtest/gtest.h>

#include "models/workload/memory.hpp"
#include "models/workload/ops.hpp"
#include "tests/workload/gpt_model.hpp"

namespace stacksim::workload {
namespace {

ModelConfig gpt3() {
  ModelConfig m = gpt_model(96, 12288, 96, 2048);
  m.attention = AttentionImpl::Unfused;  // Korthikanti et al. measured Megatron's unfused attention
  return m;
}

ParallelPlan plan(int tp, bool sp, Recompute rc) {
  ParallelPlan p;
  p.tp = tp;
  p.sequence_parallel = sp;
  p.recompute = rc;
  p.global_batch = 64;
  return p;
}

TEST(Memory, SixteenBytesPerParameterAndZero) {
  ModelConfig m = gpt3();
  m.layers = 4;
  ParallelPlan p = plan(1, false, Recompute::None);
  const double P = m.total_params();
  MemoryFootprint f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes, 16.0 * P);
  p.dp = 8;
  p.zero = 1;  // shards the 12 bytes of fp32 master weights, momentum and variance
  f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes, (4.0 + 12.0 / 8) * P);
  p.zero = 2;
  f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes, (2.0 + 14.0 / 8) * P);
  // PyTorch FSDP: fp32 parameter shards (the master weights), 16-bit gradient shards and the
  // Adam moments, 14 B / dp, no 16-bit copy of the shard; plus two gathered 16-bit layers and one
  // layer's gradient in flight (16-bit as produced, plus the 16-bit reduce-scatter copy).
  p.zero = 3;
  f = memory_per_gpu(m, p);
  const double layer = layer_params_per_rank(m, p, 0);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes,
                   14.0 * P / 8 + (2 * 2.0 + 2.0 + 2.0) * layer);
  // Megatron-Core's FSDP keeps 16-bit parameter shards beside the fp32 ones (16 B / dp) and
  // accumulates gradients straight into its buckets (no second copy in flight).
  p.fsdp_impl = FsdpImpl::Megatron;
  f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes, 16.0 * P / 8 + (2 * 2.0 + 2.0) * layer);
  p.fsdp_impl = FsdpImpl::Fsdp2;
  p.shard_size = 4;  // hybrid sharding: everything / 4 (two replicas of each shard)
  f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes,
                   14.0 * P / 4 + (2 * 2.0 + 2.0 + 2.0) * layer);
  // Under a pipeline FSDP keeps the stage gathered and its gradients unsharded until the last
  // micro-batch: 16-bit weights and gradients whole, only the 12 bytes sharded.
  p.shard_size = 0;
  p.pp = 2;
  f = memory_per_gpu(m, p);
  const double stage = stage_params_per_rank(m, p, 0);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes, 4.0 * stage + 12.0 * stage / 8);
}

TEST(Memory, Fp32GradientsAreMegatronsEighteenBytesPerParameter) {
  // Megatron-LM's distributed-optimizer table (docs): bf16 params with fp32 grads take 18 B per
  // parameter without sharding, 6 + 12/d with the distributed optimizer.
  ModelConfig m = gpt3();
  m.layers = 4;
  ParallelPlan p = plan(1, false, Recompute::None);
  p.grad_reduce_fp32 = true;
  const double P = m.total_params();
  MemoryFootprint f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes, 18.0 * P);
  p.dp = 8;
  p.zero = 1;
  f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes, (6.0 + 12.0 / 8) * P);
}

TEST(Memory, AutocastKeepsFp32WeightsAndGradients) {
  // torch.autocast over an fp32 model: fp32 weights (4 B) with the forward's 16-bit copies (2 B),
  // fp32 gradients (4 B) and Adam's moments (8 B, no separate master copy): 18 B per parameter.
  ModelConfig m = gpt3();
  m.layers = 4;
  ParallelPlan p = plan(1, false, Recompute::None);
  p.autocast = true;
  const double P = m.total_params();
  MemoryFootprint f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes, 6.0 * P);
  EXPECT_DOUBLE_EQ(f.gradients_bytes, 4.0 * P);
  EXPECT_DOUBLE_EQ(f.optimizer_bytes, 8.0 * P);
  p.dp = 8;
  p.zero = 2;  // ZeRO-2 shards the moments and the gradients, not the weights
  f = memory_per_gpu(m, p);
  EXPECT_DOUBLE_EQ(f.weights_bytes + f.gradients_bytes + f.optimizer_bytes, (6.0 + 12.0 / 8) * P);
}

TEST(Memory, KorthikantiActivationsGpt3OnTp8) {
  // Korthikanti et al. 2022, Table 2, per layer (bytes), s = 2048, b = 1, h = 12288, a = 96, t = 8.
  const ModelConfig m = gpt3();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;
  EXPECT_NEAR(
      activation_bytes_per_layer(m, plan(8, false, Recompute::None), 0) / (sbh * (10 + 24 / t + 5 * a * s / (h * t))),
      1.0, 1e-12);
  EXPECT_NEAR(activation_bytes_per_layer(m, plan(8, true, Recompute::None), 0) / (sbh / t * (34 + 5 * a * s / h)), 1.0,
              1e-12);
  EXPECT_NEAR(activation_bytes_per_layer(m, plan(8, true, Recompute::Selective), 0) / (34 * sbh / t), 1.0, 1e-12);
  EXPECT_NEAR(activation_bytes_per_layer(m, plan(8, false, Recompute::Full), 0) / (2 * sbh), 1.0, 1e-12);
  // Flash attention never stores the scores: the selective number without recomputation.
  ModelConfig flash = m;
  flash.attention = AttentionImpl::Flash;
  EXPECT_NEAR(activation_bytes_per_layer(flash, plan(8, true, Recompute::None), 0) / (34 * sbh / t), 1.0, 1e-12);
}

TEST(Memory, FirstStageHoldsPpMicroBatches) {
  // 1F1B: the first stage keeps pp micro-batches of L/pp layers = the whole model's L layers
  // (Korthikanti section 4.2.3); interleaving multiplies by 1 + (pp-1)/(pp*vp).
  const ModelConfig m = gpt3();
  ParallelPlan p = plan(8, true, Recompute::Selective);
  p.pp = 8;
  p.global_batch = 64;  // 64 micro-batches >= pp
  const double per_layer = activation_bytes_per_layer(m, p, 0);
  EXPECT_NEAR(memory_per_gpu(m, p, 0).activations_bytes / (96 * per_layer), 1.0, 1e-12);
  EXPECT_NEAR(memory_per_gpu(m, p, 7).activations_bytes / (96 * per_layer / 8), 1.0, 1e-12);  // last: one
  p.vp = 3;
  EXPECT_NEAR(memory_per_gpu(m, p, 0).activations_bytes / (96 * per_layer * (1 + 7.0 / 24)), 1.0, 1e-12);
  // Fewer micro-batches than stages: only those are in flight.
  p.vp = 1;
  p.global_batch = 2;
  EXPECT_NEAR(memory_per_gpu(m, p, 0).activations_bytes / (2 * 12 * per_layer), 1.0, 1e-12);
}

TEST(Memory, EpOverlapHoldsOneMoreMicroBatchOrChunkInFlight) {
  // Its pairs start a forward before the backward beside it frees its activations.
  const ModelConfig m = gpt3();
  ParallelPlan p = plan(8, true, Recompute::Selective);
  p.global_batch = 64;
  ParallelPlan paired = p;
  paired.ep_overlap = true;
  EXPECT_EQ(in_flight_micro_batches(p, 0), 1);
  EXPECT_EQ(in_flight_micro_batches(paired, 0), 2);
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, paired, 0).activations_bytes, 2 * memory_per_gpu(m, p, 0).activations_bytes);
  p.pp = paired.pp = 8;
  p.vp = paired.vp = 3;
  EXPECT_EQ(in_flight_micro_batches(paired, 0), in_flight_micro_batches(p, 0) + 1);
  p.global_batch = paired.global_batch = 8;  // 8 micro-batches of 3 chunks: the last stage too
  EXPECT_EQ(in_flight_micro_batches(paired, 7), in_flight_micro_batches(p, 7) + 1);
}

TEST(Memory, DualPipeHoldsTwoStagesAndPpPlusOneChunksOfActivations) {
  // The DeepSeek-V3 report's Table 2: parameters 2x, activations PP + 1 (chunks of one stage).
  ModelConfig m = gpt3();
  m.layers = 8;
  ParallelPlan one = plan(1, false, Recompute::None);
  one.pp = 4;
  one.global_batch = 16;
  ParallelPlan dual = one;
  dual.schedule = Schedule::DualPipe;
  const int middle = 1;  // no embedding or output layer on either of its stages (1 and 2)
  const MemoryFootprint a = memory_per_gpu(m, one, middle), b = memory_per_gpu(m, dual, middle);
  EXPECT_DOUBLE_EQ(b.weights_bytes, 2 * a.weights_bytes);
  EXPECT_DOUBLE_EQ(b.optimizer_bytes, 2 * a.optimizer_bytes);
  // 1F1B's stage 1 holds pp - 1 = 3 micro-batches of its stage; DualPipe pp + 1 = 5 stage chunks.
  EXPECT_DOUBLE_EQ(b.activations_bytes / a.activations_bytes, 5.0 / 3.0);
}

TEST(Memory, OutOfMemoryVerdict) {
  const ModelConfig m = gpt3();
  ParallelPlan p = plan(8, true, Recompute::Selective);
  p.pp = 8;
  p.dp = 16;
  p.zero = 1;
  p.global_batch = 1536;
  const MemoryFootprint f = memory_per_gpu(m, p);
  EXPECT_FALSE(out_of_memory(f, 80e9));  // the SC'21 setup runs on 80 GB A100s
  p.tp = 1;
  p.pp = 1;
  EXPECT_TRUE(out_of_memory(memory_per_gpu(m, p), 80e9));  // 175B on one GPU does not
  // The reserve: a footprint just below capacity*(1 - kFragmentation) fits, just above does not.
  MemoryFootprint g;
  g.weights_bytes = 80e9 * (1 - kFragmentation) - 1;
  EXPECT_FALSE(out_of_memory(g, 80e9));
  g.weights_bytes += 2;
  EXPECT_TRUE(out_of_memory(g, 80e9));
}

TEST(Memory, Fp8KeepsLinearInputsInOneByte) {
  // Transformer Engine saves the FP8 copy of each linear input: QKV and fc1 inputs (2sbh),
  // the output-projection input (sb*q) and fc2's input (sb*ffn) drop from 2 bytes to 1.
  ModelConfig m = gpt3();
  m.attention = AttentionImpl::Flash2;
  ParallelPlan p = plan(8, true, Recompute::None);
  const double bf16 = activation_bytes_per_layer(m, p, 0);
  p.precision = Precision::FP8;
  const double s = 2048, h = 12288, t = 8;
  EXPECT_NEAR(bf16 - activation_bytes_per_layer(m, p, 0), (2 * s * h + s * h + s * 4 * h) / t, 1.0);
}

TEST(Memory, BlockRecomputationOfTheFirstLayersOfEachChunk) {
  // recompute_layers = k: the first k layers of every model chunk keep only their input.
  ModelConfig m = gpt3();
  m.layers = 8;
  ParallelPlan p = plan(8, true, Recompute::Full);
  p.pp = 2;
  p.vp = 2;
  p.global_batch = 8;
  p.recompute_layers = 1;
  for (int l = 0; l < 8; ++l)
    EXPECT_EQ(layer_recompute(m, p, l), l % 2 == 0 ? Recompute::Full : Recompute::None) << "layer " << l;
  ParallelPlan none = p, all = p;
  none.recompute = Recompute::None;
  all.recompute_layers = 0;
  const double partial = memory_per_gpu(m, p).activations_bytes;
  EXPECT_LT(partial, memory_per_gpu(m, none).activations_bytes);
  EXPECT_GT(partial, memory_per_gpu(m, all).activations_bytes);
  // The recomputed layers replay their forward in backward; the others do not.
  const auto recomputed_ops = [&](int l) {
    int n = 0;
    for (const Op& o : layer_backward_ops(m, p, l)) n += o.recompute;
    return n;
  };
  EXPECT_GT(recomputed_ops(0), 0);
  EXPECT_EQ(recomputed_ops(1), 0);
  // Hardware FLOPs count the recomputed forward of half of the layers.
  const double model = model_flops_per_step(m, p);
  const double extra_all = hardware_flops_per_step(m, all) - model, extra_half = hardware_flops_per_step(m, p) - model;
  EXPECT_NEAR(extra_half / extra_all, 0.5, 1e-12);
}

}  // namespace
}  // namespace stacksim::workload

namespace stacksim::workload {
namespace {

ModelConfig deepseek_v3() {
  ModelConfig m = parse_hf_config(std::string(STACKSIM_TEST_DATA_DIR) + "/hf/deepseek-v3.json");
  m.seq_len = 4096;
  m.attention = AttentionImpl::Flash;
  return m;
}

TEST(Memory, RecomputeModulesDropWhatTheyRecompute) {
  // One MoE layer (layer 3) of DeepSeek-V3, one sequence of 4,096 tokens, no tensor parallelism:
  // each module's selective recomputation drops the bytes it would have stored.
  const ModelConfig m = deepseek_v3();
  ASSERT_TRUE(m.is_mla() && m.is_moe_layer(3));
  ParallelPlan p = plan(1, false, Recompute::Selective);
  const double sb = 4096, h = m.hidden, base = activation_bytes_per_layer(m, p, 3);
  const auto without = [&](unsigned modules) {
    ParallelPlan q = p;
    q.recompute_modules = modules;
    return base - activation_bytes_per_layer(m, q, 3);
  };
  const double q = m.q_width(), k = m.kv_width(), v = double(m.kv_heads) * m.v_head_dim();
  EXPECT_NEAR(without(kRecomputeMlaUpProj), 2 * sb * (q + k + v), 1.0);  // Q, K (RoPE'd), V
  EXPECT_NEAR(without(kRecomputeLayernorm), 4 * sb * h, 1.0);            // two 16-bit norm outputs
  const double routed = sb * m.moe.top_k * m.moe.load_factor(), ffn = m.moe.expert_ffn_hidden;
  EXPECT_NEAR(without(kRecomputeMoeAct), 2 * routed * ffn, 1.0);  // the experts' activation outputs
  // The whole routed part: the dispatched tokens, fc1 outputs (gate + up) and activation outputs.
  EXPECT_NEAR(without(kRecomputeMoe), 2 * routed * h + 6 * routed * ffn, 1.0);
  EXPECT_NEAR(without(kRecomputeSharedExperts), 6 * sb * m.moe.shared_experts * ffn, 1.0);
  EXPECT_NEAR(without(kRecomputeMlp), 0.0, 1.0);  // no dense MLP in an MoE layer
  // Under FP8 the dispatched tokens are kept as their 1-byte copies (Transformer Engine's grouped
  // linear saves its quantised input).
  ParallelPlan f8 = p;
  f8.precision = Precision::FP8;
  ParallelPlan f8_moe = f8;
  f8_moe.recompute_modules = kRecomputeMoe;
  EXPECT_NEAR(activation_bytes_per_layer(m, f8, 3) - activation_bytes_per_layer(m, f8_moe, 3),
              routed * h + 5 * routed * ffn, 1.0);
}

TEST(Memory, TorchtitanOpCheckpointingKeepsTheInputAndTheSavedOutputs) {
  ModelConfig m = gpt_model(4, 4096, 32, 2048);
  m.kv_heads = 8;
  m.mlp = Mlp::SwiGlu;
  m.ffn_hidden = 14336;
  m.attention = AttentionImpl::Flash;
  const double T = 2048, h = 4096, q = 4096, kv = 8 * 128, f = 14336, heads = 32;
  ParallelPlan p = plan(1, false, Recompute::Op);
  // The input; wq, wv, w1 and w2's outputs (the odd-numbered matmuls); the attention output and
  // its fp32 log-sum-exp per head and token; all 16-bit.
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, p, 0),
                   2 * T * h + 2 * T * (q + kv + f + h) + 2 * T * q + 4 * T * heads);
  // tp 2 with sequence parallelism: the input and the column-parallel outputs split; w2's output
  // (row-parallel: whole before its reduce-scatter) not; the two reduce-scatters' outputs kept.
  ParallelPlan t2 = plan(2, true, Recompute::Op);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, t2, 0), 2 * T * h / 2 + 2 * T * (q + kv + f) / 2 + 2 * T * h +
                                                             (2 * T * q + 4 * T * heads) / 2 + 2 * (2 * T * h / 2));
  // FP8 linears keep nothing: the input and the attention's output only.
  p.precision = Precision::FP8;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, p, 0), 2 * T * h + 2 * T * q + 4 * T * heads);
  // Between full recomputation and none.
  p.precision = Precision::BF16;
  const double op = activation_bytes_per_layer(m, p, 0);
  EXPECT_GT(op, activation_bytes_per_layer(m, plan(1, false, Recompute::Full), 0));
  EXPECT_LT(op, activation_bytes_per_layer(m, plan(1, false, Recompute::None), 0));
}

TEST(Memory, Fp8SwigluCacheHalvesTheExpertsSwigluInputs) {
  // DeepSeek-V3's FP8 caching of the routed experts' SwiGLU inputs: gate and up at 1 byte each
  // instead of 2, with or without the SwiGLU output recomputed; nothing else changes.
  const ModelConfig m = deepseek_v3();
  ParallelPlan p = plan(1, false, Recompute::Selective);
  p.precision = Precision::FP8;
  const double routed = 4096.0 * m.moe.top_k * m.moe.load_factor(), ffn = m.moe.expert_ffn_hidden;
  for (const unsigned modules : {unsigned(kRecomputeCoreAttn), unsigned(kRecomputeMoeAct | kRecomputeLayernorm)}) {
    p.recompute_modules = modules;
    ParallelPlan cached = p;
    cached.fp8_swiglu_cache = true;
    EXPECT_NEAR(activation_bytes_per_layer(m, p, 3) - activation_bytes_per_layer(m, cached, 3), 2 * routed * ffn, 1.0);
    EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, p, 0), activation_bytes_per_layer(m, cached, 0));  // a dense layer
  }
}

TEST(Memory, Bf16OptimizerMomentsKeepEightBytesPerParameter) {
  ModelConfig m = gpt3();
  m.layers = 4;
  ParallelPlan p = plan(1, false, Recompute::None);
  const double fp32 = memory_per_gpu(m, p).optimizer_bytes;
  p.optimizer_moment_bytes = 2.0;
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, p).optimizer_bytes, fp32 * 8.0 / 12.0);
  p.optimizer_moment_bytes = 1.0 + 4.0 / 256;  // 8-bit Adam: a byte per moment and a block scale
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, p).optimizer_bytes, fp32 * (4.0 + 2 * (1.0 + 4.0 / 256)) / 12.0);
}

}  // namespace
TEST(Memory, ChunkedLossHoldsOneLigerChunkOfLogitsInsteadOfTheWholeMicroBatchs) {
  // Llama 3 8B's shape at 8192 tokens: the full loss holds 6 B per token per vocab entry (the
  // logits and their fp32 copy); Liger's chunk is next_pow2(ceil(8192 / ceil(128256 / 4096)))
  // = next_pow2(ceil(8192 / 32)) = 256 tokens of 16-bit logits.
  ModelConfig m = gpt3();
  m.hidden = 4096;
  m.vocab = 128256;
  m.seq_len = 8192;
  ParallelPlan p = plan(1, false, Recompute::None);
  EXPECT_DOUBLE_EQ(logits_bytes(m, p, 8192), 6.0 * 8192 * 128256);
  p.chunked_loss = true;
  EXPECT_DOUBLE_EQ(logits_bytes(m, p, 8192), 2.0 * 256 * 128256);
  EXPECT_DOUBLE_EQ(logits_bytes(m, p, 100), 2.0 * 4 * 128256);  // ceil(100 / 32) = 4 tokens
  ParallelPlan full = p;
  full.chunked_loss = false;
  EXPECT_NEAR(memory_per_gpu(m, full).buffers_bytes - memory_per_gpu(m, p).buffers_bytes,
              (6.0 * 8192 - 2.0 * 256) * 128256, 1.0);
}

TEST(Memory, OffloadedActivationsLeaveTwoLayersOnTheGpu) {
  const ModelConfig m = gpt3();
  ParallelPlan p = plan(8, true, Recompute::Selective);
  p.pp = 8;
  p.global_batch = 64;
  ParallelPlan off = p;
  off.offload_activations = true;
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, off, 0).activations_bytes, 2.0 * activation_bytes_per_layer(m, p, 0));
  EXPECT_GT(memory_per_gpu(m, p, 0).activations_bytes, 10 * memory_per_gpu(m, off, 0).activations_bytes);
}

}  // namespace stacksim::workload
