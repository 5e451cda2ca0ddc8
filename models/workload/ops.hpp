// The ops one rank runs for one transformer layer and one micro-batch, following Megatron-Core's
// layer (norm, fused QKV, attention, output projection, dropout + residual; norm, MLP or MoE,
// dropout + residual), with shapes already divided by tensor parallelism (t), the sequence by
// context parallelism (cp) and, with sequence parallelism (SP), the tokens of norms and dropouts
// by t; plus the collectives the layer needs.
//
// Collectives (nccl-tests convention: comm_bytes = the full buffer per rank, 16-bit elements):
//  - TP, per attention / MLP block: without SP an all-reduce of the block output (b*s*h*2 bytes)
//    in forward, and one of the block-input gradient in backward (Megatron's f/g pair); with SP
//    an all-gather before the block and a reduce-scatter after it in forward, and in backward an
//    all-gather of the output gradient, an all-gather of the input again for the weight gradient
//    and a reduce-scatter of the input gradient (Korthikanti et al. 2022, section 4.2.2).
//  - CP (ring attention): the K/V blocks of the other cp-1 ranks, as an all-gather of the full
//    K/V (the same bytes per rank as cp-1 send/recv steps of the local block); in backward K/V
//    again plus a reduce-scatter of dK/dV back to their owners.
//  - EP: all-to-all dispatch and combine of the routed tokens (b*s/t*top_k*h*2 per rank), and
//    the mirrored pair in backward. Experts are split over t like the dense MLP (expert tensor
//    parallelism = t), so with t > 1 the dispatched tokens are gathered over TP as well.
//
// GEMMs (C[m,n] = A[m,k] B[k,n]): QKV fused into one (n = q + 2 kv widths, GQA's K/V have
// kv_heads*head_dim); SwiGLU's gate and up projections fused into fc1 (n = 2*ffn/t), so a gated
// MLP has fc1 + fc2 kernels for its 3 weight matrices. Backward: dgrad C[m,k] = dY W^T and
// wgrad C[k,n] = X^T dY, twice the forward FLOPs. MLA (DeepSeek-V2/V3): the Q and KV
// down-projections (to the latents) are replicated on every TP rank, the up-projections and the
// output projection are split by heads.
//
// Attention core: one fused kernel (model.attention flash / flash2), or Megatron's unfused
// sequence (QK^T and PV batched GEMMs over the full s x s, scale-mask-softmax and dropout as
// memory-bound passes over the 16-bit scores), all of class Attention.
// FLOPs (Op::flops): 2mnk per GEMM; fused attention forward 2*b*heads*seq_q*seq_kv*(qk_dim +
// v_dim), the Megatron/NeMo model-FLOP convention that counts causal attention in full (the kernel
// model gets `causal` in the shape and executes about half); attention backward 2x forward.
//
// Element-wise ops (MemoryBound, bytes read + written, 16-bit activations):
//   norm 4 B per element (read x, write y); rotary 4 B per Q/K element; dropout + residual 7 B
//   (read x and residual, write y, write a 1-byte mask); GeLU 4 B per ffn element, SwiGLU 6 B
//   (read gate and up, write); MoE permute 4 B per routed element, unpermute + weighted sum
//   (2*top_k + 2) B per token element; embedding lookup 4 B; cross-entropy 12 B per logit (three
//   fp32 passes: max, sum-exp, softmax); Q/K/V bias adds ride in the GEMM epilogue. Backward of
//   an element-wise op moves twice its forward bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/collectives/collective.hpp"  // MoeDispatch
#include "models/workload/flops.hpp"          // the step FLOP counts, for callers that include only the ops
#include "models/workload/model_config.hpp"
#include "models/workload/parallel_plan.hpp"

namespace stacksim::workload {

enum class OpKind { Gemm, Attention, MemoryBound, Comm };
enum class OpClass { Gemm, Attention, Elementwise, Norm, Embedding, Loss, Optimizer };
enum class CommKind { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };
enum class CommGroup { TP, CP, EP, DP, PP };

struct AttentionShape {
  int64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0;
  int64_t head_dim = 0;    // Q.K dimension per head
  int64_t v_head_dim = 0;  // V (and output) dimension per head; differs from head_dim only for MLA
  bool causal = true;
  int64_t window = 0;  // sliding window in keys (0 = none)
};

struct Op {
  std::string name;
  OpKind kind = OpKind::MemoryBound;
  OpClass cls = OpClass::Elementwise;
  bool backward = false;
  bool recompute = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;  // GEMM: C[m,n] = A[m,k] B[k,n], `batch` of them
  AttentionShape attention;
  double bytes = 0;                    // MemoryBound: HBM bytes read + written
  double backward_bytes_factor = 2.0;  // MemoryBound: the backward's bytes over the forward's (a
                                       // permutation's backward is the inverse permutation: 1)
  int kernels = 1;                     // MemoryBound: kernel launches the op takes (eager element-wise chains)
  double flops = 0;                    // model FLOPs of the op (see the header comment)
  CommKind comm = CommKind::AllReduce;
  CommGroup group = CommGroup::TP;
  double comm_bytes = 0;       // nccl-tests buffer size per rank
  bool overlaps_next = false;  // Comm: runs under the next compute op, joined after it
  // Comm: what the backward pass sends. Conjugate: all-gather <-> reduce-scatter, the others the
  // same (the usual pairs); Same: the same collective again; None: nothing (the forward's
  // conjugate is a local split).
  enum class Backward { Conjugate, Same, None } comm_backward = Backward::Conjugate;
  coll::MoeDispatch dispatch;  // Comm (EP all-to-all): DeepEP's once-per-node dispatch (collective.hpp)
  // GEMM under FP8 precision: false for a plain 16-bit linear outside Transformer Engine's FP8
  // layers (Megatron's output layer), which keeps the 16-bit rate and needs no cast.
  bool fp8_eligible = true;
  // GEMM: a weight gradient (wgrad). Under FP8 it quantises nothing (it reads the columnwise
  // copies its forward and dgrad wrote; the others quantise their A operand, m x k, from 16 bit);
  // zero-bubble schedules may defer it (pipeline_schedule.hpp).
  bool weight_grad = false;
  // The recompute modules (ParallelPlan::recompute_modules bits) whose selective recomputation
  // re-runs this forward op; the attention core is recognised by its class.
  unsigned modules = 0;
  // The CUDA graph scope (ParallelPlan::cuda_graphs, GraphScope bits) that captures this op when
  // the plan captures it; 0 = launched by the host in every plan short of cuda_graphs: full.
  unsigned graph_scope = 0;
  // GEMM, as PyTorch's per-linear models issue it (for recompute: op, torchtitan's op-level
  // checkpointing): the widths n of the separate matmuls this fused op stands for (wq, wk, wv; the
  // gate and up projections), one matmul of width n when empty; `grouped`: the experts' grouped
  // matmul, not a plain one.
  std::vector<int64_t> mm_parts;
  bool grouped = false;
  // The host waits for the GPU before launching this op: a dropless MoE layer's forward reads its
  // routed-token counts back to the CPU (Megatron-Core's all-to-all dispatcher passes the split
  // sizes to the all-to-all as host lists, DeepEP's dispatch waits for its received-token count,
  // Transformer Engine's grouped GEMM takes the per-expert token counts as a host list).
  bool host_sync = false;
};

// One layer, one micro-batch. The backward list starts with the recomputed forward ops
// (recompute = true): with recompute=full every forward op including its collectives (Megatron
// recomputes the TP communication too), with selective the ops of the plan's recompute_modules
// (by default the attention core, the ops of class Attention), with op (torchtitan's op-level
// checkpointing) every op its policy does not keep.
std::vector<Op> layer_forward_ops(const ModelConfig& m, const ParallelPlan& p, int layer);
std::vector<Op> layer_backward_ops(const ModelConfig& m, const ParallelPlan& p, int layer);
// Activation bytes one layer keeps per micro-batch under recompute: op (torchtitan's op-level
// checkpointing): its input and the outputs the policy saves (ops.cpp, walk_op_checkpoint).
double op_checkpoint_saved_bytes(const ModelConfig& m, const ParallelPlan& p, int layer);
// The recomputation layer `layer` gets: the plan's mode, except that full recomputation limited to
// recompute_layers > 0 covers only the first that many layers of each model chunk (None after).
Recompute layer_recompute(const ModelConfig& m, const ParallelPlan& p, int layer);
// Vocabulary-parallel input embedding (first virtual stage).
std::vector<Op> embedding_forward_ops(const ModelConfig& m, const ParallelPlan& p);
std::vector<Op> embedding_backward_ops(const ModelConfig& m, const ParallelPlan& p);
// Final norm, logits GEMM (vocab / t columns per rank) and vocabulary-parallel cross-entropy
// (three TP all-reduces of per-token statistics: max, target logit, sum of exponentials).
std::vector<Op> head_forward_ops(const ModelConfig& m, const ParallelPlan& p);
std::vector<Op> head_backward_ops(const ModelConfig& m, const ParallelPlan& p);
// Multi-token prediction on the last virtual stage, all depths: per depth two norms, the 2h -> h
// projection (column-parallel over tp, with its collectives), one layer like the model's last,
// and the output head again; the backward recomputes the projection and the layer under full
// recomputation (the core attention under selective).
std::vector<Op> mtp_forward_ops(const ModelConfig& m, const ParallelPlan& p);
std::vector<Op> mtp_backward_ops(const ModelConfig& m, const ParallelPlan& p);
double mtp_params_per_rank(const ModelConfig& m, const ParallelPlan& p);
// Megatron's mixed-precision optimizer step, on the most loaded pipeline stage, per parameter of
// this rank's optimizer shard (zero >= 1: / dp) with g = the gradient bytes (4 with
// grad_reduce_fp32, else 2): gradient norm g, Adam 24 + g (fp32 master, m, v read and written,
// gradient read), fp32 master -> 16-bit weight 6 (not with FSDP, which casts at the gather);
// then the gradient buffer is zeroed (g per parameter of the unsharded buffer; sharded with
// zero 2; no op with FSDP, which frees it).
std::vector<Op> optimizer_ops(const ModelConfig& m, const ParallelPlan& p);

// Parameters held by one rank.
double layer_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int layer);
double layer_expert_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int layer);  // routed experts only
double embedding_params_per_rank(const ModelConfig& m, const ParallelPlan& p);                // one of input/output
// Whether the last virtual stage holds an output-layer matrix: untied embeddings, or tied ones
// split over stages (Megatron keeps a copy on the last stage and all-reduces the two gradients).
bool has_output_layer_copy(const ModelConfig& m, const ParallelPlan& p);
// Layer ranges of the pp*vp virtual stages: stage v holds layers [bounds[v], bounds[v+1]),
// honouring first_stage_layers / last_stage_layers.
std::vector<int> virtual_stage_bounds(const ModelConfig& m, const ParallelPlan& p);
// The most layers any virtual stage (model chunk) holds.
int max_layers_per_chunk(const ModelConfig& m, const ParallelPlan& p);
// The virtual stages pipeline rank `rank` holds: c*pp + rank for each of its vp chunks; under
// DualPipe its own stage and the mirror rank's (rank, pp-1-rank).
std::vector<int> rank_virtual_stages(const ParallelPlan& p, int rank);
// All the chunks of pipeline rank `stage` (layers, embedding, output layer, final norm).
double stage_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int stage);
double stage_expert_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int stage);
// Stage `stage`'s parameters one rank holds when they are sharded over data parallelism (ZeRO):
// dense ones over dense_shard_ranks, routed experts over expert_shard_ranks.
double stage_params_sharded(const ModelConfig& m, const ParallelPlan& p, int stage);
// Ranks a dense parameter is sharded over with ZeRO/FSDP: dp*cp (Megatron's data-parallel-with-
// context-parallel group), or shard_size with hybrid sharding; a routed-expert parameter: dp*cp/ep.
int dense_shard_ranks(const ParallelPlan& p);
int expert_shard_ranks(const ParallelPlan& p);
// The activation tensor one pipeline rank sends to the next (SP-split hidden states, 16-bit).
double pipeline_p2p_bytes(const ModelConfig& m, const ParallelPlan& p);

}  // namespace stacksim::workload
