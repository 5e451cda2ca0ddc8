// The ops one rank runs for one transformer layer and one micro-batch (Megatron-LM's layer:
// norm, QKV, attention, output projection, residual; norm, MLP, residual), with shapes already
// divided by tensor parallelism (and by context parallelism for the sequence, by sequence
// parallelism for norms and dropouts), plus the collectives the layer needs.
// Element-wise bytes count what each kernel reads and writes in 16-bit (norms also fp32 stats).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/workload/model_config.hpp"
#include "models/workload/parallel_plan.hpp"

namespace stacksim::workload {

enum class OpKind { Gemm, Attention, MemoryBound, Comm };
enum class OpClass { Gemm, Attention, Elementwise, Norm, Embedding, Loss, Optimizer };
enum class CommKind { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };
enum class CommGroup { TP, CP, EP, DP, PP };

struct AttentionShape {
  int64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = true;
};

struct Op {
  std::string name;
  OpKind kind = OpKind::MemoryBound;
  OpClass cls = OpClass::Elementwise;
  bool backward = false;
  bool recompute = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;  // GEMM: C[m,n] = A[m,k] B[k,n], `batch` of them
  AttentionShape attention;
  double bytes = 0;       // MemoryBound: HBM bytes read + written
  double flops = 0;       // model FLOPs of the op (GEMM 2mnk*batch; attention as computed)
  CommKind comm = CommKind::AllReduce;
  CommGroup group = CommGroup::TP;
  double comm_bytes = 0;  // nccl-tests buffer size per rank
};

std::vector<Op> layer_forward_ops(const ModelConfig& m, const ParallelPlan& p, int layer);
std::vector<Op> layer_backward_ops(const ModelConfig& m, const ParallelPlan& p, int layer);  // with recompute
std::vector<Op> embedding_forward_ops(const ModelConfig& m, const ParallelPlan& p);
std::vector<Op> embedding_backward_ops(const ModelConfig& m, const ParallelPlan& p);
std::vector<Op> head_forward_ops(const ModelConfig& m, const ParallelPlan& p);   // final norm, logits, loss
std::vector<Op> head_backward_ops(const ModelConfig& m, const ParallelPlan& p);
// Adam with fp32 master weights, moments and 16-bit gradients: 28 bytes read+written per local
// parameter (master, m, v read and written: 24; gradient read 2; 16-bit weight written 2).
std::vector<Op> optimizer_ops(const ModelConfig& m, const ParallelPlan& p);

double layer_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int layer);
double embedding_params_per_rank(const ModelConfig& m, const ParallelPlan& p);  // one of input/output
double pipeline_p2p_bytes(const ModelConfig& m, const ParallelPlan& p);
double stage_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int stage);  // max over chunks' sum

// Model FLOPs of one step (no recomputation), Megatron/NeMo/llm-foundry convention: 6 x (GEMM
// parameters touched per token) x tokens + 12 x layers x seq x (q width) x tokens for attention
// (scores and values, forward + backward, without the causal halving), logits included.
double model_flops_per_step(const ModelConfig& m, const ParallelPlan& p);
// Plus the recomputed forward work (full: every layer's forward; selective: attention core).
double hardware_flops_per_step(const ModelConfig& m, const ParallelPlan& p);
// Narayanan et al. SC'21: 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) (includes full recomputation).
double megatron_sc21_flops(double B, double s, double l, double h, double V);

}  // namespace stacksim::workload
