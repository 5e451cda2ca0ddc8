// Parallelism plans: parsing, defaults and every rule check_plan enforces (each error names the
// key and says what to change).
#include <gtest/gtest.h>

#include <string>

#include "config/error.hpp"
#include "config/yaml.hpp"
#include "models/workload/ops.hpp"
#include "models/workload/parallel_plan.hpp"

namespace stacksim::workload {
namespace {

ModelConfig gpt(int layers = 96, int64_t heads = 96, int64_t kv_heads = 96) {
  ModelConfig m;
  m.layers = layers;
  m.hidden = 12288;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = 128;
  m.ffn_hidden = 4 * 12288;
  m.vocab = 51200;
  m.seq_len = 2048;
  return m;
}

// check_plan's message for `plan_yaml` on `gpus` GPUs ("" when the plan is accepted).
std::string check(const ModelConfig& m, const std::string& plan_yaml, int gpus) {
  const config::Node root = config::Node::load_string("parallelism: " + plan_yaml + "\n", "plan.yaml");
  try {
    const ParallelPlan p = parse_plan(root["parallelism"]);
    check_plan(m, p, gpus, root["parallelism"]);
  } catch (const config::InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Plan, ParseAndDefaults) {
  const config::Node root = config::Node::load_string(
      "parallelism: {tp: 8, pp: 8, dp: 16, vp: 3, sequence_parallel: true, global_batch: 1536, zero: fsdp,"
      " recompute: selective, schedule: interleaved}\n",
      "plan.yaml");
  const ParallelPlan p = parse_plan(root["parallelism"]);
  EXPECT_EQ(p.num_gpus(), 1024);
  EXPECT_EQ(p.num_micro_batches(), 1536 / (1 * 16));
  EXPECT_EQ(p.zero, 3);
  EXPECT_TRUE(p.sp());
  EXPECT_TRUE(p.interleaved());
  EXPECT_EQ(p.recompute, Recompute::Selective);
  EXPECT_EQ(p.precision, Precision::BF16);
  EXPECT_TRUE(p.overlap_grad_reduce);
  EXPECT_EQ(p.kernels, Kernels::Fused);
  EXPECT_EQ(p.cp_comm, CpComm::P2P);  // Transformer Engine's cp_comm_type default
  // Megatron-Core's bucket: max(40M, 1M * dp) parameters of 16-bit gradients.
  EXPECT_DOUBLE_EQ(p.dp_bucket_bytes, 2.0 * 40e6);
  EXPECT_EQ(check(gpt(), "{tp: 8, pp: 8, dp: 16, vp: 3, sequence_parallel: true, global_batch: 1536}", 1024), "");
}

TEST(Plan, SequenceParallelWithoutTpIsIgnored) {
  const config::Node root = config::Node::load_string("parallelism: {sequence_parallel: true, global_batch: 8}\n", "p");
  EXPECT_FALSE(parse_plan(root["parallelism"]).sp());
  EXPECT_EQ(check(gpt(), "{dp: 8, sequence_parallel: true, global_batch: 8}", 8), "");
}

TEST(Plan, TensorParallelCommOverlapNeedsSequenceParallelism) {
  const std::string e = check(gpt(), "{tp: 8, dp: 1, global_batch: 1, tp_comm_overlap: true}", 8);
  EXPECT_TRUE(has(e, "'parallelism.tp_comm_overlap'")) << e;
  EXPECT_TRUE(has(e, "sequence_parallel: true")) << e;
  EXPECT_EQ(check(gpt(), "{tp: 8, dp: 1, global_batch: 1, sequence_parallel: true, tp_comm_overlap: true}", 8), "");
}

TEST(Plan, AutocastNeedsA16BitComputeDtypeAndNoFsdp) {
  EXPECT_EQ(check(gpt(), "{dp: 8, global_batch: 8, autocast: true}", 8), "");
  std::string e = check(gpt(), "{dp: 8, global_batch: 8, autocast: true, precision: fp32}", 8);
  EXPECT_TRUE(has(e, "'parallelism.autocast'")) << e;
  EXPECT_TRUE(has(e, "precision: bf16")) << e;
  e = check(gpt(), "{dp: 8, global_batch: 8, autocast: true, zero: 3}", 8);
  EXPECT_TRUE(has(e, "'parallelism.autocast'")) << e;
  EXPECT_TRUE(has(e, "FSDP")) << e;
}

TEST(Plan, CudaGraphScopesParseAndNeedWhatTheyCapture) {
  const auto scopes = [](const std::string& v) {
    const config::Node root =
        config::Node::load_string("parallelism: {global_batch: 1, cuda_graphs: " + v + "}\n", "plan.yaml");
    return parse_plan(root["parallelism"]).cuda_graphs;
  };
  EXPECT_EQ(scopes("none"), 0u);
  EXPECT_EQ(scopes("full"), unsigned{kGraphFull});
  EXPECT_EQ(scopes("attn"), unsigned{kGraphAttn});
  EXPECT_EQ(scopes("[attn, moe_router, moe_preprocess]"), unsigned{kGraphAttn | kGraphMoeRouter | kGraphMoePreprocess});
  EXPECT_EQ(cuda_graphs_name(kGraphAttn | kGraphMlp), "attn, mlp");
  EXPECT_TRUE(has(check(gpt(), "{dp: 8, global_batch: 8, cuda_graphs: [attn, bogus]}", 8), "unknown scope 'bogus'"));
  EXPECT_TRUE(has(check(gpt(), "{dp: 8, global_batch: 8, cuda_graphs: []}", 8), "'parallelism.cuda_graphs'"));
  EXPECT_TRUE(has(check(gpt(), "{dp: 8, global_batch: 8, cuda_graphs: sometimes}", 8), "unknown value"));
  // MoE scopes need an MoE model; a whole-step graph cannot hold a dropless dispatch's read-back.
  EXPECT_TRUE(has(check(gpt(), "{dp: 8, global_batch: 8, cuda_graphs: [moe_router]}", 8), "need an MoE model"));
  ModelConfig moe = gpt();
  moe.moe.experts = 8;
  moe.moe.top_k = 2;
  moe.moe.expert_ffn_hidden = 4096;
  EXPECT_EQ(check(moe, "{dp: 8, ep: 8, global_batch: 8, cuda_graphs: [attn, moe_router, moe_preprocess]}", 8), "");
  const std::string full = check(moe, "{dp: 8, ep: 8, global_batch: 8, cuda_graphs: full}", 8);
  EXPECT_TRUE(has(full, "dropless")) << full;
  EXPECT_TRUE(has(full, "capacity_factor")) << full;
  moe.moe.capacity_factor = 1.25;
  EXPECT_EQ(check(moe, "{dp: 8, ep: 8, global_batch: 8, cuda_graphs: full}", 8), "");
}

TEST(Plan, FfnWidthMustDivideByTp) {
  ModelConfig m = gpt();
  m.ffn_hidden = 1000;
  const std::string e = check(m, "{tp: 16, dp: 1, global_batch: 1}", 16);
  EXPECT_TRUE(has(e, "ffn_hidden (1000) is not divisible by tp (16)")) << e;
  EXPECT_TRUE(has(e, "use tp in {1, 2, 4, 8}")) << e;
}

TEST(Plan, HybridShardingRules) {
  EXPECT_EQ(check(gpt(), "{dp: 8, zero: 3, shard_size: 4, global_batch: 8}", 8), "");
  const std::string div = check(gpt(), "{dp: 8, zero: 3, shard_size: 3, global_batch: 8}", 8);
  EXPECT_TRUE(has(div, "'parallelism.shard_size'")) << div;
  EXPECT_TRUE(has(div, "{1, 2, 4, 8}")) << div;
  EXPECT_TRUE(has(check(gpt(), "{dp: 8, shard_size: 4, global_batch: 8}", 8), "zero is 0"));
}

TEST(Plan, GpuCountMismatchSuggestsDp) {
  const std::string e = check(gpt(), "{tp: 8, pp: 8, dp: 8, global_batch: 1536}", 1024);
  EXPECT_TRUE(has(e, "= 512")) << e;
  EXPECT_TRUE(has(e, "1024 GPUs")) << e;
  EXPECT_TRUE(has(e, "dp: 16")) << e;
}

TEST(Plan, HeadsAndKvHeadsMustDivideByTp) {
  const std::string heads = check(gpt(96, 96, 96), "{tp: 5, dp: 1, global_batch: 1}", 5);
  EXPECT_TRUE(has(heads, "'parallelism.tp'")) << heads;
  EXPECT_TRUE(has(heads, "use tp in {1, 2, 3, 4, 6, 8")) << heads;
  const std::string kv = check(gpt(96, 96, 8), "{tp: 16, dp: 1, global_batch: 1}", 16);
  EXPECT_TRUE(has(kv, "kv_heads (8)")) << kv;
  EXPECT_TRUE(has(kv, "{1, 2, 4, 8}")) << kv;
}

TEST(Plan, LayersMustDivideByStages) {
  const std::string e = check(gpt(96), "{pp: 7, dp: 1, global_batch: 7}", 7);
  EXPECT_TRUE(has(e, "pp*vp = 7*1 = 7")) << e;
  EXPECT_TRUE(has(e, "use pp in {1, 2, 3, 4, 6, 8")) << e;
  EXPECT_TRUE(has(e, "first_stage_layers")) << e;
  // An uneven split that works: 126 layers = 7 + 14 x 8 + 7 on 16 stages (Llama 3 405B).
  EXPECT_EQ(check(gpt(126, 128, 8), "{pp: 16, first_stage_layers: 7, last_stage_layers: 7, global_batch: 16}", 16), "");
  EXPECT_TRUE(
      has(check(gpt(126, 128, 8), "{pp: 16, first_stage_layers: 6, last_stage_layers: 7, global_batch: 16}", 16),
          "do not split evenly"));
}

TEST(Plan, AnExplicitLayoutGivesEveryVirtualStageItsLayers) {
  // Megatron-Core's pipeline layout: 7 layers over pp 2 x vp 2 as [1, 2, 2, 2]; virtual stages
  // 0 and 2 are rank 0's, 1 and 3 rank 1's.
  const ModelConfig m = gpt(7, 128, 8);
  EXPECT_EQ(check(m, "{pp: 2, vp: 2, dp: 1, global_batch: 4, stage_layers: [1, 2, 2, 2]}", 2), "");
  ParallelPlan p;
  p.pp = p.vp = 2;
  p.stage_layers = {1, 2, 2, 2};
  EXPECT_EQ(virtual_stage_bounds(m, p), (std::vector<int>{0, 1, 3, 5, 7}));
  EXPECT_EQ(max_layers_per_chunk(m, p), 2);
  EXPECT_TRUE(has(check(m, "{pp: 2, vp: 2, dp: 1, global_batch: 4, stage_layers: [1, 2, 2]}", 2), "pp*vp = 4"));
  EXPECT_TRUE(has(check(m, "{pp: 2, vp: 2, dp: 1, global_batch: 4, stage_layers: [1, 2, 2, 1]}", 2), "adds up to 6"));
  EXPECT_TRUE(has(check(m, "{pp: 2, vp: 2, dp: 1, global_batch: 4, stage_layers: [3, 0, 4, 0]}", 2),
                  "pipeline rank 1 gets no layer"));
  EXPECT_TRUE(has(check(m, "{pp: 2, dp: 1, global_batch: 4, stage_layers: [3, 4], first_stage_layers: 3}", 2),
                  "one or the other"));
}

TEST(Plan, EmbeddingAndLossCountedInThePipelineSplit) {
  // Megatron-Core's account_for_*_in_pipeline_split: Llama 3 405B's 126 layers + embedding + loss
  // over 16 x 8 virtual stages, one each; the first chunk holds only the embedding, the last only
  // the output layer and loss.
  const ModelConfig m = gpt(126, 128, 8);
  const std::string both = "account_for_embedding_in_pipeline_split: true, account_for_loss_in_pipeline_split: true";
  EXPECT_EQ(check(m, "{pp: 16, vp: 8, global_batch: 16, " + both + "}", 16), "");
  ParallelPlan p;
  p.pp = 16;
  p.vp = 8;
  p.embedding_in_split = p.loss_in_split = true;
  std::vector<int> expected{0, 0};
  for (int l = 1; l <= 126; ++l) expected.push_back(l);
  expected.push_back(126);
  EXPECT_EQ(virtual_stage_bounds(m, p), expected);
  p.vp = 4;  // 2 per chunk: the first and the last chunk 1 layer each
  const std::vector<int> b = virtual_stage_bounds(m, p);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(b[2], 3);
  EXPECT_EQ(b[63], 125);
  EXPECT_EQ(b[64], 126);
  p.loss_in_split = false;  // 127 slots do not divide by 64
  EXPECT_TRUE(has(check(m, "{pp: 16, vp: 4, global_batch: 16, account_for_embedding_in_pipeline_split: true}", 16),
                  "layers + 1 = 127 do not divide by pp*vp = 64"));
  EXPECT_TRUE(has(check(gpt(14, 128, 8), "{pp: 16, global_batch: 16, " + both + "}", 16), "no transformer layer"));
  EXPECT_TRUE(
      has(check(m, "{pp: 16, vp: 8, global_batch: 16, first_stage_layers: 7, " + both + "}", 16), "one or the other"));
}

TEST(Plan, InterleavingNeedsMultiplesOfPpMicroBatches) {
  const std::string fewer = check(gpt(), "{pp: 8, vp: 2, dp: 1, global_batch: 4}", 8);
  EXPECT_TRUE(has(fewer, "to be at least pp (8)")) << fewer;
  EXPECT_TRUE(has(fewer, "use global_batch 8")) << fewer;
  const std::string not_multiple = check(gpt(), "{pp: 8, vp: 2, dp: 1, global_batch: 12}", 8);
  EXPECT_TRUE(has(not_multiple, "multiple of pp")) << not_multiple;
  EXPECT_TRUE(has(not_multiple, "use global_batch 16")) << not_multiple;
  EXPECT_TRUE(has(check(gpt(), "{pp: 1, vp: 2, global_batch: 4}", 1), "needs pipeline parallelism"));
}

TEST(Plan, EpOverlapRules) {
  // Megatron-Core's overlap_moe_expert_parallel_comm: an MoE model with ep > 1, interleaving or no
  // pipeline, not dualpipe.
  ModelConfig moe = gpt(8, 96, 96);
  moe.moe.experts = 8;
  moe.moe.top_k = 2;
  moe.moe.expert_ffn_hidden = 4096;
  EXPECT_EQ(check(moe, "{dp: 8, ep: 8, global_batch: 16, ep_overlap: true}", 8), "");
  EXPECT_EQ(check(moe, "{pp: 2, vp: 2, dp: 4, ep: 4, global_batch: 16, ep_overlap: true}", 8), "");
  const std::string no_vp = check(moe, "{pp: 2, dp: 4, ep: 4, global_batch: 16, ep_overlap: true}", 8);
  EXPECT_TRUE(has(no_vp, "'parallelism.ep_overlap'") && has(no_vp, "set vp > 1")) << no_vp;
  EXPECT_TRUE(has(check(moe, "{dp: 8, global_batch: 16, ep_overlap: true}", 8), "set ep > 1"));
  EXPECT_TRUE(has(check(gpt(), "{dp: 8, global_batch: 16, ep_overlap: true}", 8), "no MoE layers"));
  EXPECT_TRUE(has(check(moe, "{pp: 2, dp: 4, ep: 4, schedule: dualpipe, global_batch: 16, ep_overlap: true}", 8),
                  "dualpipe already"));
}

TEST(Plan, DualPipeRules) {
  // pp even, vp 1, an even count of at least 2 pp micro-batches per replica, no ZeRO-3.
  EXPECT_EQ(check(gpt(), "{pp: 4, schedule: dualpipe, global_batch: 8}", 4), "");
  EXPECT_TRUE(has(check(gpt(), "{pp: 3, schedule: dualpipe, global_batch: 6}", 3), "pp must be even"));
  EXPECT_TRUE(has(check(gpt(), "{pp: 4, schedule: dualpipe, global_batch: 8, offload_activations: true}", 4),
                  "not modelled with dualpipe"));
  const std::string few = check(gpt(), "{pp: 4, schedule: dualpipe, global_batch: 6}", 4);
  EXPECT_TRUE(has(few, "at least 2*pp = 8") && has(few, "use global_batch 8")) << few;
  EXPECT_EQ(check(gpt(), "{pp: 4, schedule: dualpipe, global_batch: 10}", 4), "");
  const std::string odd = check(gpt(), "{pp: 4, schedule: dualpipe, global_batch: 9}", 4);
  EXPECT_TRUE(has(odd, "even") && has(odd, "use global_batch 10")) << odd;
  EXPECT_TRUE(has(check(gpt(), "{pp: 4, vp: 2, schedule: dualpipe, global_batch: 8}", 4), "set vp: 1"));
  EXPECT_TRUE(
      has(check(gpt(), "{pp: 4, dp: 2, zero: 3, schedule: dualpipe, global_batch: 16}", 8), "'parallelism.zero'"));
}

TEST(Plan, GlobalBatchMustDivideByMicroBatchTimesDp) {
  const std::string e = check(gpt(), "{dp: 16, micro_batch: 2, global_batch: 100}", 16);
  EXPECT_TRUE(has(e, "micro_batch*dp = 2*16 = 32")) << e;
  EXPECT_TRUE(has(e, "use global_batch 96 or 128")) << e;
}

TEST(Plan, ContextParallelNeedsTwoCpChunks) {
  ModelConfig m = gpt();
  m.seq_len = 2052;  // divisible by 4 but not by 2*4
  EXPECT_TRUE(has(check(m, "{cp: 4, global_batch: 1}", 4), "2*cp = 8"));
}

TEST(Plan, ExpertParallelRules) {
  ModelConfig moe = gpt();
  moe.moe.experts = 8;
  moe.moe.top_k = 2;
  moe.moe.expert_ffn_hidden = 4096;
  EXPECT_EQ(check(moe, "{dp: 8, ep: 8, global_batch: 8}", 8), "");
  EXPECT_TRUE(has(check(gpt(), "{dp: 8, ep: 2, global_batch: 8}", 8), "needs an MoE model"));
  const std::string experts = check(moe, "{dp: 12, ep: 3, global_batch: 12}", 12);
  EXPECT_TRUE(has(experts, "experts (8) are not divisible by ep (3)")) << experts;
  EXPECT_TRUE(has(experts, "use ep in {1, 2, 4}")) << experts;
  const std::string dp = check(moe, "{dp: 4, pp: 2, ep: 8, global_batch: 8}", 8);
  EXPECT_TRUE(has(dp, "must divide dp*cp (4*1)")) << dp;
  // Context-parallel ranks join the expert groups (Megatron-Core: NeMo's Mixtral 8x22B runs
  // cp 8 x dp 4 with ep 8).
  EXPECT_EQ(check(moe, "{dp: 4, cp: 2, ep: 8, global_batch: 4}", 8), "");
  // An ep beyond dp*cp points at parallel folding, which carves it out of tp*cp*dp.
  const std::string beyond = check(moe, "{tp: 2, dp: 4, ep: 8, sequence_parallel: true, global_batch: 8}", 8);
  EXPECT_TRUE(has(beyond, "or etp: 1 to carve ep out of tp*cp*dp")) << beyond;
  EXPECT_EQ(check(moe, "{tp: 2, dp: 4, ep: 8, etp: 1, sequence_parallel: true, global_batch: 8}", 8), "");
  const std::string folded_too_big =
      check(moe, "{tp: 2, dp: 2, ep: 8, etp: 1, sequence_parallel: true, global_batch: 8}", 4);
  EXPECT_TRUE(has(folded_too_big, "must divide tp*cp*dp (2*1*2)")) << folded_too_big;
  const std::string no_sp = check(moe, "{tp: 2, dp: 4, ep: 8, etp: 1, global_batch: 8}", 8);
  EXPECT_TRUE(has(no_sp, "set sequence_parallel: true")) << no_sp;
  const std::string odd = check(moe, "{tp: 4, dp: 2, ep: 2, etp: 2, sequence_parallel: true, global_batch: 8}", 8);
  EXPECT_TRUE(has(odd, "neither tp (4) nor 1")) << odd;
}

TEST(Plan, UlyssesNeedsTheHeadsOfATensorParallelRankToSplitOverCp) {
  // 96 heads over tp 8: 12 per rank, which cp 8 does not divide (cp 4 and 6 do).
  const std::string bad = check(gpt(), "{tp: 8, cp: 8, dp: 1, cp_comm: all_to_all, global_batch: 1}", 64);
  EXPECT_TRUE(has(bad, "cp_comm all_to_all")) << bad;
  EXPECT_TRUE(has(bad, "cp")) << bad;
  EXPECT_EQ(check(gpt(), "{tp: 8, cp: 4, dp: 1, cp_comm: all_to_all, global_batch: 1}", 32), "");
  EXPECT_EQ(check(gpt(), "{tp: 8, cp: 8, dp: 1, global_batch: 1}", 64), "");  // the ring has no such rule
}

TEST(Plan, BadValuesAreInputErrors) {
  EXPECT_TRUE(has(check(gpt(), "{tp: 0, global_batch: 1}", 1), "at least 1"));
  EXPECT_TRUE(has(check(gpt(), "{zero: 4, global_batch: 1}", 1), "0, 1, 2 or 3"));
  EXPECT_TRUE(has(check(gpt(), "{recompute: some, global_batch: 1}", 1), "none, selective, full or op"));
  EXPECT_TRUE(has(check(gpt(), "{schedule: interleaved, global_batch: 1}", 1), "vp >= 2"));
  EXPECT_TRUE(has(check(gpt(), "{tp: 1}", 1), "global_batch"));
  EXPECT_TRUE(has(check(gpt(), "{tpp: 1, global_batch: 1}", 1), "tp"));
  const std::string kernels = check(gpt(), "{kernels: compiled, global_batch: 1}", 1);
  EXPECT_TRUE(has(kernels, "'parallelism.kernels'") && has(kernels, "fused") && has(kernels, "eager")) << kernels;
  const std::string ep_dispatch = check(gpt(), "{ep_dispatch: nccl, global_batch: 1}", 1);
  EXPECT_TRUE(has(ep_dispatch, "'parallelism.ep_dispatch'") && has(ep_dispatch, "deepep")) << ep_dispatch;
  const std::string cp_comm = check(gpt(), "{cp_comm: ring, global_batch: 1}", 1);
  EXPECT_TRUE(has(cp_comm, "'parallelism.cp_comm'") && has(cp_comm, "p2p") && has(cp_comm, "all_gather")) << cp_comm;
  const std::string fsdp_impl = check(gpt(), "{fsdp_impl: deepspeed, global_batch: 1}", 1);
  EXPECT_TRUE(has(fsdp_impl, "'parallelism.fsdp_impl'") && has(fsdp_impl, "fsdp1") && has(fsdp_impl, "megatron"))
      << fsdp_impl;
  const std::string recipe = check(gpt(), "{fp8_recipe: tensorwise, global_batch: 1}", 1);
  EXPECT_TRUE(has(recipe, "'parallelism.fp8_recipe'") && has(recipe, "delayed") && has(recipe, "current") &&
              has(recipe, "mxfp8"))
      << recipe;
}

TEST(Plan, Fp8QuantizationBytesFollowTheRecipeAndTheGemmLayouts) {
  // Per element of a 16-bit operand: read 2 B; write 1 B (+ 1 B transposed where FP8 GEMMs take
  // only TN); current scaling reads the tensor once more for its amax; MXFP8 quantises rowwise
  // and columnwise copies, each with one 1-byte scale per 32 values.
  auto plan = [](const std::string& yaml) {
    return parse_plan(config::Node::load_string("parallelism: " + yaml + "\n", "p")["parallelism"]);
  };
  const ParallelPlan delayed = plan("{global_batch: 1, precision: fp8}");
  EXPECT_EQ(delayed.fp8_recipe, Fp8Recipe::Delayed);  // Transformer Engine's and Megatron's default
  EXPECT_DOUBLE_EQ(delayed.fp8_quantize_bytes_per_element(true), 2 + 1 + 1);
  EXPECT_DOUBLE_EQ(delayed.fp8_quantize_bytes_per_element(false), 2 + 1);
  const ParallelPlan current = plan("{global_batch: 1, precision: fp8, fp8_recipe: current}");
  EXPECT_DOUBLE_EQ(current.fp8_quantize_bytes_per_element(true), 2 + 2 + 1 + 1);
  EXPECT_DOUBLE_EQ(current.fp8_quantize_bytes_per_element(false), 2 + 2 + 1);
  const ParallelPlan mx = plan("{global_batch: 1, precision: fp8, fp8_recipe: mxfp8}");
  EXPECT_DOUBLE_EQ(mx.fp8_quantize_bytes_per_element(false), 2 + 2 * (1 + 1.0 / 32));
}

TEST(Plan, FsdpElementWisePassBytesFollowTheImplementation) {
  // Per parameter, with 16-bit compute weights (q = 2) and reduce dtype r.
  auto plan = [](const std::string& yaml) {
    return parse_plan(config::Node::load_string("parallelism: " + yaml + "\n", "p")["parallelism"]);
  };
  const ParallelPlan v2 = plan("{zero: 3, global_batch: 1, grad_reduce_fp32: true}");
  EXPECT_EQ(v2.fsdp_impl, FsdpImpl::Fsdp2);                        // PyTorch's current API is the default
  EXPECT_DOUBLE_EQ(v2.fsdp_grad_prep_bytes_per_param(), 2 + 4);    // copy-in with the cast to fp32
  EXPECT_DOUBLE_EQ(v2.fsdp_gather_copy_bytes_per_param(), 2 + 2);  // copy-out after the gather
  const ParallelPlan v1 = plan("{zero: 3, global_batch: 1, grad_reduce_fp32: true, fsdp_impl: fsdp1}");
  EXPECT_DOUBLE_EQ(v1.fsdp_grad_prep_bytes_per_param(), (2 + 4) + (4 + 4));  // cast, then pre-divide
  EXPECT_DOUBLE_EQ(v1.fsdp_gather_copy_bytes_per_param(), 0.0);              // flat-parameter views
  const ParallelPlan pure = plan("{zero: 3, global_batch: 1, fsdp_impl: fsdp1}");
  EXPECT_DOUBLE_EQ(pure.fsdp_grad_prep_bytes_per_param(), 2 + 2);  // no cast: the pre-divide only
  const ParallelPlan fp32 = plan("{zero: 3, global_batch: 1, precision: fp32}");
  EXPECT_DOUBLE_EQ(fp32.fsdp_grad_prep_bytes_per_param(), 4 + 4);
  EXPECT_DOUBLE_EQ(fp32.fsdp_gather_copy_bytes_per_param(), 4 + 4);
  const ParallelPlan mcore = plan("{zero: 3, global_batch: 1, grad_reduce_fp32: true, fsdp_impl: megatron}");
  EXPECT_DOUBLE_EQ(mcore.fsdp_grad_prep_bytes_per_param(), 0.0);  // in the collectives' buckets
  EXPECT_DOUBLE_EQ(mcore.fsdp_gather_copy_bytes_per_param(), 0.0);
}

TEST(Plan, RecomputeLayersRules) {
  const ModelConfig m = gpt(96);
  EXPECT_EQ(check(m, "{tp: 8, pp: 8, dp: 1, global_batch: 8, recompute: full, recompute_layers: 4}", 64), "");
  const std::string selective =
      check(m, "{tp: 8, pp: 8, dp: 1, global_batch: 8, recompute: selective, recompute_layers: 4}", 64);
  EXPECT_TRUE(has(selective, "recompute_layers") && has(selective, "full only")) << selective;
  const std::string too_many =
      check(m, "{tp: 8, pp: 8, dp: 1, global_batch: 8, recompute: full, recompute_layers: 13}", 64);
  EXPECT_TRUE(has(too_many, "recompute_layers") && has(too_many, "1..12")) << too_many;
  EXPECT_TRUE(
      has(check(m, "{tp: 8, pp: 8, dp: 1, global_batch: 8, recompute: full, recompute_layers: -1}", 64), ">= 0"));
}

}  // namespace
}  // namespace stacksim::workload

namespace stacksim::workload {
namespace {

TEST(Plan, RecomputeModulesAndOptimizerMoments) {
  const auto parse = [](std::string yaml) {  // a flow map; global_batch added
    yaml.insert(1, yaml == "{}" ? "global_batch: 8" : "global_batch: 8, ");
    return parse_plan(config::Node::load_string("parallelism: " + yaml + "\n", "p")["parallelism"]);
  };
  const auto refused = [&](const std::string& yaml, const std::string& part) {
    try {
      parse(yaml);
    } catch (const config::InputError& e) {
      return std::string(e.what()).find(part) != std::string::npos;
    }
    return false;
  };
  EXPECT_EQ(parse("{recompute: selective}").recompute_modules, unsigned(kRecomputeCoreAttn));  // Megatron's default
  const ParallelPlan p = parse("{recompute: selective, recompute_modules: [layernorm, mla_up_proj, moe_act]}");
  EXPECT_EQ(p.recompute_modules, unsigned(kRecomputeLayernorm | kRecomputeMlaUpProj | kRecomputeMoeAct));
  EXPECT_TRUE(p.recomputes(kRecomputeMlaUpProj));
  EXPECT_FALSE(p.recomputes(kRecomputeCoreAttn));
  EXPECT_TRUE(refused("{recompute: full, recompute_modules: [mlp]}", "selective only"));
  EXPECT_TRUE(refused("{recompute: selective, recompute_modules: [attention]}", "unknown module 'attention'"));
  EXPECT_TRUE(refused("{recompute: selective, recompute_modules: []}", "non-empty list"));
  EXPECT_DOUBLE_EQ(parse("{}").optimizer_bytes_per_param(), 12.0);
  EXPECT_DOUBLE_EQ(parse("{optimizer_moments: bf16}").optimizer_bytes_per_param(), 8.0);
  EXPECT_NEAR(parse("{optimizer_moments: int8}").optimizer_bytes_per_param(), 6.03, 0.01);  // 8-bit Adam
  EXPECT_TRUE(parse("{chunked_loss: true}").chunked_loss);
  EXPECT_TRUE(parse("{offload_activations: true}").offload_activations);
  EXPECT_FALSE(parse("{}").chunked_loss);
  EXPECT_TRUE(refused("{optimizer_moments: fp16}", "unknown optimizer moment dtype"));
}

}  // namespace
}  // namespace stacksim::workload

namespace stacksim::workload {
namespace {

TEST(Plan, RecomputeModulesTheModelDoesNotHaveAreRefused) {
  const ModelConfig dense = gpt(32, 32, 32);  // no MLA, no MoE
  const std::string base = "{tp: 1, dp: 8, global_batch: 8, recompute: selective, recompute_modules: ";
  EXPECT_TRUE(has(check(dense, base + "[mla_up_proj]}", 8), "mla_up_proj needs multi-latent attention"));
  EXPECT_TRUE(has(check(dense, base + "[moe_act]}", 8), "need an MoE model"));
  EXPECT_TRUE(has(check(dense, base + "[shared_experts]}", 8), "needs shared experts"));
  EXPECT_EQ(check(dense, base + "[layernorm, mlp]}", 8), "");
}

TEST(Plan, Fp8SwigluCacheNeedsFp8AndSwigluExperts) {
  ModelConfig moe = gpt(32, 32, 32);
  moe.mlp = Mlp::SwiGlu;
  moe.moe.experts = 8;
  moe.moe.top_k = 2;
  moe.moe.expert_ffn_hidden = 4096;
  const std::string plan = "{dp: 8, ep: 8, global_batch: 8, fp8_swiglu_cache: true";
  EXPECT_EQ(check(moe, plan + ", precision: fp8}", 8), "");
  EXPECT_TRUE(has(check(moe, plan + ", precision: bf16}", 8), "needs FP8 training (precision is bf16)"));
  EXPECT_TRUE(has(check(gpt(32, 32, 32), "{dp: 8, global_batch: 8, precision: fp8, fp8_swiglu_cache: true}", 8),
                  "needs an MoE model with a SwiGLU MLP"));
  moe.mlp = Mlp::Gelu;
  EXPECT_TRUE(has(check(moe, plan + ", precision: fp8}", 8), "needs an MoE model with a SwiGLU MLP"));
}

}  // namespace
}  // namespace stacksim::workload
