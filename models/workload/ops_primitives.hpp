// The primitives the op lists are built from (internal to models/workload: ops.cpp and the files
// beside it): per-rank dimensions, one GEMM / memory-bound / collective op, element-wise ops by
// kernel implementation, and a tensor-parallel block with its entry and exit collectives.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "models/workload/ops.hpp"

namespace stacksim::workload::ops_detail {

constexpr double kAct = 2.0;  // bytes per 16-bit element

struct Dims {
  int64_t T;   // tokens of the micro-batch on this rank (sequence split by cp)
  int64_t Tn;  // tokens a norm/dropout sees (further split by tp with sequence parallelism)
  int64_t h, t;
};

inline Dims dims(const ModelConfig& m, const ParallelPlan& p) {
  Dims d;
  d.T = static_cast<int64_t>(p.micro_batch) * m.seq_len / p.cp;
  d.Tn = p.sp() ? d.T / p.tp : d.T;
  d.h = m.hidden;
  d.t = p.tp;
  return d;
}

inline Op gemm(const std::string& name, int64_t M, int64_t N, int64_t K, int64_t batch = 1) {
  Op o;
  o.name = name;
  o.kind = OpKind::Gemm;
  o.cls = OpClass::Gemm;
  o.m = M;
  o.n = N;
  o.k = K;
  o.batch = batch;
  o.flops = 2.0 * M * N * K * batch;
  return o;
}

inline Op memory(const std::string& name, OpClass cls, double bytes) {
  Op o;
  o.name = name;
  o.kind = OpKind::MemoryBound;
  o.cls = cls;
  o.bytes = bytes;
  return o;
}

// Element-wise ops by kernel implementation (ParallelPlan::kernels). HBM bytes per element of
// the 16-bit tensor (forward; the backward moves twice as much) and kernel launches:
//   fused: norm 4 (read, write), rotary 4, SwiGLU 6 (gate and up read, one write), GELU 4.
//   (The backward of each: twice the bytes, one gradient kernel per forward launch.)
//   eager RMSNorm 36: up-cast to fp32 (2+4), square (4+4), mean (4), scale (4+4), down-cast (4+2),
//     weight multiply (2+2); 8 launches with the epsilon add and rsqrt on the row statistics.
//   eager rotary 20: up-cast (2+4), fp32 complex product (4+4), down-cast (4+2); 3 launches each
//     for q and k.
//   eager SwiGLU 10: SiLU (2+2), multiply (4+2); 2 launches. LayerNorm and GELU: one kernel either way.
inline Op norm_op(const std::string& name, const ModelConfig& m, const ParallelPlan& p, double elements) {
  const bool eager = p.kernels == Kernels::Eager && m.norm == Norm::RmsNorm;
  Op o = memory(name, OpClass::Norm, (eager ? 36.0 : 4.0) * elements);
  o.kernels = eager ? 8 : 1;
  return o;
}

inline Op rotary_op(const ParallelPlan& p, double elements) {
  const bool eager = p.kernels == Kernels::Eager;
  Op o = memory("rotary embedding", OpClass::Elementwise, (eager ? 20.0 : 4.0) * elements);
  o.kernels = eager ? 6 : 1;
  return o;
}

inline Op activation_op(const std::string& name, bool gated, const ParallelPlan& p, double elements) {
  const bool eager = gated && p.kernels == Kernels::Eager;
  Op o = memory(name, OpClass::Elementwise, (gated ? (eager ? 10.0 : 6.0) : 4.0) * elements);
  o.kernels = eager ? 2 : 1;
  return o;
}

inline Op comm(const std::string& name, CommKind kind, CommGroup g, double bytes) {
  Op o;
  o.name = name;
  o.kind = OpKind::Comm;
  o.comm = kind;
  o.group = g;
  o.comm_bytes = bytes;
  return o;
}

// A tensor-parallel region: `pre` ops, the TP entry (column-parallel input), the `inner` ops, the
// TP exit (row-parallel output), `post` ops. Entry and exit exist only when t > 1 and are
// optional (the embedding has only an exit, the logits only an entry).
struct Block {
  std::string what;
  std::vector<Op> pre, inner, post;
  bool entry = false, exit = false;
  double entry_bytes = 0, exit_bytes = 0;  // the full (gathered) activation, 16-bit
  // FP8 training gathers quantised tensors: Transformer Engine's column-parallel layers quantise
  // their input before the sequence-parallel all-gather (the norm writes it in FP8), again for the
  // weight gradient's re-gather, and its row-parallel layers quantise the output gradient before
  // gathering it (gather_along_first_dim with a quantizer; userbuffers' FP8 buffers); torchao's
  // Float8ColwiseParallel likewise. Reduce-scatters stay 16-bit (GEMM outputs).
  bool fp8_gathers = false;
  // With SP, Megatron's column-parallel linear keeps only its sequence shard and gathers the input
  // again for the weight gradient; the MoE dispatcher keeps its gathered tokens instead.
  bool regather_for_wgrad = true;
  unsigned modules = 0;  // recompute modules covering every op the block emits (with its collectives)
  unsigned graph = 0;    // the CUDA graph scope of its TP entry/exit collectives (capture() below)
};

// Puts every op of `b` and its TP collectives in CUDA graph scope `scope`.
inline void capture(Block& b, unsigned scope) {
  b.graph = scope;
  for (auto* ops : {&b.pre, &b.inner, &b.post})
    for (Op& o : *ops) o.graph_scope = scope;
}

// With tp_comm_overlap (userbuffers), a sequence-parallel collective runs pipelined with the GEMM
// that consumes (all-gather) or produces (reduce-scatter) it: modelled as the collective running
// under that GEMM, joined after it.
inline bool pipelined_with_gemm(const ParallelPlan& p, const std::vector<Op>& inner, bool at_front) {
  return p.tp_comm_overlap && p.sp() && !inner.empty() &&
         (at_front ? inner.front() : inner.back()).kind == OpKind::Gemm;
}

// Bytes of an all-gather of `bytes16` (its 16-bit size) in block `b`.
inline double gathered_bytes(const Block& b, double bytes16) { return b.fp8_gathers ? bytes16 / kAct : bytes16; }

}  // namespace stacksim::workload::ops_detail
