// The scenario schema, part 2: parallelism, the parallel plan and the framework behaviour it
// models (models/workload/parallel_plan.cpp reads these keys; defaults are Megatron-Core's).
#include "config/scenario_schema_rows.hpp"

namespace stacksim::config::rows {

namespace {

void add_sizes(std::vector<KeySpec>& t) {
  t.push_back(section("parallelism", "the parallel plan and framework behaviour (training; required)"));
  t.push_back(count("parallelism.tp", "GPUs", "1", "tensor-parallel size"));
  t.push_back(count("parallelism.pp", "stages", "1", "pipeline-parallel size"));
  t.push_back(count("parallelism.dp", "replicas", "1", "data-parallel size"));
  t.push_back(count("parallelism.cp", "GPUs", "1", "context-parallel size"));
  t.push_back(
      count("parallelism.ep", "GPUs", "1", "expert-parallel size (MoE; out of cp x dp, or tp x cp x dp with etp 1)"));
  t.push_back(count("parallelism.etp", "GPUs", "tp", "expert tensor-parallel size: tp or 1"));
  t.push_back(count("parallelism.vp", "chunks", "1", "virtual pipeline chunks per rank (interleaved 1F1B)"));
  t.push_back(count("parallelism.micro_batch", "sequences", "1", "sequences per micro-batch"));
  t.push_back(count("parallelism.global_batch", "sequences", "", "sequences per optimizer step (required)"));
  t.push_back(flag("parallelism.sequence_parallel", "false", "Megatron sequence parallelism"));
  t.push_back(choice("parallelism.recompute", "none|selective|full|op|auto", "none",
                     "activation recomputation (op: torchtitan's per-op policy; auto: the least that fits)"));
  t.push_back(integer("parallelism.recompute_layers", "layers", "0 (all)", 0, kNoLimit,
                      "with full: only the first N layers of each model chunk"));
  t.push_back(list("parallelism.recompute_modules", "core_attn|layernorm|mla_up_proj|moe_act|mlp|moe|shared_experts",
                   "with selective: the modules re-run"));
  t.push_back(typed("parallelism.zero", KeyType::IntOrEnum, "fsdp", "0",
                    "0 DDP, 1 distributed optimizer, 2, 3 (FSDP; or fsdp)", 0, 3));
  t.push_back(count("parallelism.shard_size", "ranks", "dp x cp", "hybrid sharding (HSDP): shards over N ranks"));
  t.push_back(choice("parallelism.fsdp_impl", "fsdp2|fsdp1|megatron", "fsdp2", "zero 3: whose element-wise passes"));
  t.push_back(
      integer("parallelism.fsdp_gathers_per_layer", "gathers", "1", 1, 64,
              "zero 3: a layer's parameters in k all-gathers one after another (DeepSpeed: one per weight matrix)"));
  t.push_back(choice("parallelism.precision", "fp32|tf32|fp16|bf16|fp8", "bf16", "training precision"));
  t.push_back(choice("parallelism.fp8_recipe", "delayed|current|mxfp8", "delayed",
                     "fp8: Transformer Engine's quantisation (mxfp8: Blackwell)"));
  t.push_back(choice("parallelism.optimizer_moments", "fp32|bf16|int8", "fp32", "Adam's moment dtype"));
  t.push_back(choice("parallelism.schedule", "1f1b|interleaved|gpipe|dualpipe", "1f1b", "pipeline schedule"));
}

void add_behaviour(std::vector<KeySpec>& t) {
  t.push_back(flag("parallelism.chunked_loss", "false", "output layer + loss fused over token chunks (Liger, CCE)"));
  t.push_back(flag("parallelism.offload_activations", "false", "saved activations to host memory and back over PCIe"));
  t.push_back(flag("parallelism.offload_optimizer", "false", "Adam's state and step on the host CPU (ZeRO-Offload)"));
  t.push_back(flag("parallelism.offload_params", "false", "zero 3 + offload_optimizer: 16-bit shards in host memory"));
  t.push_back(flag("parallelism.fp8_swiglu_cache", "false", "fp8 MoE: the experts' SwiGLU inputs kept in FP8"));
  t.push_back(flag("parallelism.overlap_grad_reduce", "true", "data-parallel gradient reduction under the backward"));
  t.push_back(flag("parallelism.overlap_param_gather", "true", "parameter all-gather under the forward"));
  t.push_back(quantity("parallelism.dp_bucket_size", Dimension::Bytes, 1.0, "B", "2 x max(40 MB, 1 MB x dp)", 0, true,
                       kNoLimit, "gradient bucket size"));
  t.push_back(flag("parallelism.async_tp_backward", "true", "tensor-parallel backward collectives overlapped"));
  t.push_back(flag("parallelism.grad_reduce_fp32", "false", "gradients reduced in fp32"));
  t.push_back(flag("parallelism.autocast", "false", "torch.autocast over fp32 weights (HF Trainer's bf16)"));
  t.push_back(flag("parallelism.overlap_p2p_comm", "vp > 1", "pipeline sends/receives overlapped"));
  t.push_back(
      flag("parallelism.p2p_scatter_gather", "false", "tp ranks send 1/tp of a pipeline tensor, then all-gather"));
  t.push_back(flag("parallelism.tp_comm_overlap", "false", "tensor-parallel communication overlapped with GEMMs"));
  t.push_back(flag("parallelism.ep_overlap", "false", "Megatron-Core's --overlap-moe-expert-parallel-comm"));
  t.push_back(choice("parallelism.cp_comm", "p2p|all_gather|all_to_all", "p2p",
                     "context-parallel exchange (all_to_all: DeepSpeed-Ulysses)"));
  t.push_back(choice("parallelism.ep_dispatch", "alltoall|deepep", "alltoall", "MoE token dispatcher"));
  t.push_back(choice("parallelism.kernels", "fused|eager", "fused", "eager: PyTorch op by op, no torch.compile"));
  t.push_back(typed("parallelism.cuda_graphs", KeyType::EnumOrList, "none|full|attn|mlp|moe_router|moe_preprocess",
                    "none", "CUDA graphs: none, full, or a list of Megatron-Core's scopes"));
  t.push_back(integer("parallelism.first_stage_layers", "layers", "0 (even split)", 0, kNoLimit,
                      "layers on the first pipeline stage"));
  t.push_back(integer("parallelism.last_stage_layers", "layers", "0 (even split)", 0, kNoLimit,
                      "layers on the last pipeline stage"));
  t.push_back(list("parallelism.stage_layers", "", "layers per virtual stage (Megatron-Core's pipeline layout)"));
  t.push_back(flag("parallelism.account_for_embedding_in_pipeline_split", "false", "the embedding counts as a layer"));
  t.push_back(
      flag("parallelism.account_for_loss_in_pipeline_split", "false", "the output layer and loss count as a layer"));
}

}  // namespace

void add_plan_rows(std::vector<KeySpec>& t) {
  add_sizes(t);
  add_behaviour(t);
}

}  // namespace stacksim::config::rows
