#include "models/workload/ops.hpp"

#include <algorithm>

namespace stacksim::workload {
namespace {

constexpr double kAct = 2.0;  // bytes per 16-bit element

struct Dims {
  int64_t T;      // tokens of the micro-batch on this rank (sequence split by cp)
  int64_t Tn;     // tokens a norm/dropout sees (further split by tp with sequence parallelism)
  int64_t h, t;
};

Dims dims(const ModelConfig& m, const ParallelPlan& p) {
  Dims d;
  d.T = static_cast<int64_t>(p.micro_batch) * m.seq_len / p.cp;
  d.Tn = p.sp() ? d.T / p.tp : d.T;
  d.h = m.hidden;
  d.t = p.tp;
  return d;
}

Op gemm(const std::string& name, int64_t M, int64_t N, int64_t K, int64_t batch = 1) {
  Op o;
  o.name = name;
  o.kind = OpKind::Gemm;
  o.cls = OpClass::Gemm;
  o.m = M; o.n = N; o.k = K; o.batch = batch;
  o.flops = 2.0 * M * N * K * batch;
  return o;
}

Op memory(const std::string& name, OpClass cls, double bytes) {
  Op o;
  o.name = name;
  o.kind = OpKind::MemoryBound;
  o.cls = cls;
  o.bytes = bytes;
  return o;
}

Op comm(const std::string& name, CommKind kind, CommGroup g, double bytes) {
  Op o;
  o.name = name;
  o.kind = OpKind::Comm;
  o.comm = kind;
  o.group = g;
  o.comm_bytes = bytes;
  return o;
}

// The TP collective before a column-parallel block (forward): all-gather with SP, nothing without.
void tp_enter(std::vector<Op>& ops, const ModelConfig& m, const ParallelPlan& p, const Dims& d, const char* what) {
  if (p.sp()) ops.push_back(comm(std::string("tp all-gather ") + what, CommKind::AllGather, CommGroup::TP, d.T * d.h * kAct));
}
// After a row-parallel block: reduce-scatter with SP, all-reduce without.
void tp_exit(std::vector<Op>& ops, const ModelConfig& m, const ParallelPlan& p, const Dims& d, const char* what) {
  if (p.tp <= 1) return;
  ops.push_back(p.sp() ? comm(std::string("tp reduce-scatter ") + what, CommKind::ReduceScatter, CommGroup::TP, d.T * d.h * kAct)
                       : comm(std::string("tp all-reduce ") + what, CommKind::AllReduce, CommGroup::TP, d.T * d.h * kAct));
}

AttentionShape attention_shape(const ModelConfig& m, const ParallelPlan& p) {
  AttentionShape a;
  a.batch = p.micro_batch;
  a.heads = m.heads / p.tp;
  a.kv_heads = std::max<int64_t>(1, m.kv_heads / p.tp);
  a.seq_q = m.seq_len / p.cp;
  a.seq_kv = m.seq_len;
  a.head_dim = m.head_dim;
  a.causal = true;
  return a;
}

std::vector<Op> attention_block_forward(const ModelConfig& m, const ParallelPlan& p, const Dims& d) {
  std::vector<Op> ops;
  const int64_t q = m.q_width() / d.t, kv = std::max<int64_t>(m.head_dim, m.kv_width() / d.t);
  ops.push_back(memory("input norm", OpClass::Norm, 4.0 * d.Tn * d.h));
  tp_enter(ops, m, p, d, "(attention)");
  ops.push_back(gemm("qkv projection", d.T, q + 2 * kv, d.h));
  ops.push_back(memory("rotary embedding", OpClass::Elementwise, 2.0 * kAct * d.T * (q + kv)));
  if (p.cp > 1)  // ring attention: the K/V blocks of the other cp ranks
    ops.push_back(comm("cp k/v exchange", CommKind::AllGather, CommGroup::CP,
                       2.0 * kAct * p.micro_batch * m.seq_len * kv));
  const AttentionShape sh = attention_shape(m, p);
  if (m.attention == AttentionImpl::Unfused) {
    // Megatron's unfused core attention on b*(a/t) heads: scores over the full s x s (masked, not
    // skipped), softmax and dropout as memory-bound passes over the 16-bit scores (+ a 1-byte mask).
    const int64_t bh = sh.batch * sh.heads;
    const double scores = static_cast<double>(bh) * sh.seq_q * sh.seq_kv;
    Op qk = gemm("attention scores (QK^T)", sh.seq_q, sh.seq_kv, m.head_dim, bh);
    Op sm = memory("scale-mask-softmax", OpClass::Attention, 2.0 * kAct * scores);
    Op dr = memory("attention dropout", OpClass::Attention, (2.0 * kAct + 1.0) * scores);
    Op pv = gemm("attention values (PV)", sh.seq_q, m.head_dim, sh.seq_kv, bh);
    qk.cls = pv.cls = OpClass::Attention;
    for (const Op& o : {qk, sm, dr, pv}) ops.push_back(o);
  } else {
    Op a;
    a.name = "attention";
    a.kind = OpKind::Attention;
    a.cls = OpClass::Attention;
    a.attention = sh;
    a.flops = 4.0 * sh.batch * sh.heads * sh.seq_q * sh.seq_kv * m.head_dim * 0.5;
    ops.push_back(a);
  }
  ops.push_back(gemm("attention output projection", d.T, d.h, q));
  tp_exit(ops, m, p, d, "(attention)");
  ops.push_back(memory("dropout + residual", OpClass::Elementwise, 3.5 * kAct * d.Tn * d.h));
  return ops;
}

std::vector<Op> mlp_block_forward(const ModelConfig& m, const ParallelPlan& p, const Dims& d, int layer) {
  std::vector<Op> ops;
  ops.push_back(memory("post-attention norm", OpClass::Norm, 4.0 * d.Tn * d.h));
  const bool gated = m.mlp == Mlp::SwiGlu;
  if (m.is_moe_layer(layer)) {
    const auto& e = m.moe;
    ops.push_back(gemm("router", d.Tn, e.experts, d.h));
    ops.push_back(memory("top-k routing + permute", OpClass::Elementwise, 4.0 * kAct * d.Tn * d.h * e.top_k));
    const double dispatch = kAct * d.Tn * d.h * e.top_k;
    if (p.ep > 1) ops.push_back(comm("ep all-to-all dispatch", CommKind::AllToAll, CommGroup::EP, dispatch));
    tp_enter(ops, m, p, d, "(experts)");
    // This rank's experts receive T * top_k token copies on average (the EP group's ep * T * top_k
    // spread over E experts, E / ep of them local), times the busiest rank's imbalance.
    const int local = std::max(1, e.experts / p.ep);
    const int64_t f = e.expert_ffn_hidden / d.t;
    const int64_t m_each = std::max<int64_t>(1, static_cast<int64_t>(d.T * e.top_k * e.imbalance / local));
    ops.push_back(gemm("expert fc1", m_each, gated ? 2 * f : f, d.h, local));
    ops.push_back(memory("expert activation", OpClass::Elementwise, (gated ? 3.0 : 2.0) * kAct * m_each * local * f));
    ops.push_back(gemm("expert fc2", m_each, d.h, f, local));
    tp_exit(ops, m, p, d, "(experts)");
    if (p.ep > 1) ops.push_back(comm("ep all-to-all combine", CommKind::AllToAll, CommGroup::EP, dispatch));
    ops.push_back(memory("unpermute + weighted sum", OpClass::Elementwise, 3.0 * kAct * d.Tn * d.h * e.top_k));
    if (e.shared_experts > 0) {
      const int64_t fs = e.expert_ffn_hidden * e.shared_experts / d.t;
      ops.push_back(gemm("shared expert fc1", d.T, gated ? 2 * fs : fs, d.h));
      ops.push_back(gemm("shared expert fc2", d.T, d.h, fs));
    }
  } else {
    tp_enter(ops, m, p, d, "(mlp)");
    const int64_t f = m.ffn_hidden / d.t;
    ops.push_back(gemm("mlp fc1", d.T, gated ? 2 * f : f, d.h));
    ops.push_back(memory(gated ? "swiglu" : "gelu", OpClass::Elementwise, (gated ? 3.0 : 2.0) * kAct * d.T * f));
    ops.push_back(gemm("mlp fc2", d.T, d.h, f));
    tp_exit(ops, m, p, d, "(mlp)");
  }
  ops.push_back(memory("dropout + residual", OpClass::Elementwise, 3.5 * kAct * d.Tn * d.h));
  return ops;
}

// The backward of a forward op list, in reverse order: GEMMs become dgrad + wgrad, attention its
// backward kernel, element-wise ops twice their bytes; TP collectives mirror (all-reduce stays an
// all-reduce; SP's all-gather <-> reduce-scatter, plus the all-gather of the input for wgrad).
std::vector<Op> backward_of(const std::vector<Op>& fwd) {
  std::vector<Op> out;
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
    const Op& f = *it;
    switch (f.kind) {
      case OpKind::Gemm: {
        Op dgrad = gemm(f.name + " dgrad", f.m, f.k, f.n, f.batch);
        Op wgrad = gemm(f.name + " wgrad", f.k, f.n, f.m, f.batch);
        dgrad.backward = wgrad.backward = true;
        dgrad.cls = wgrad.cls = f.cls;
        out.push_back(dgrad);
        out.push_back(wgrad);
        break;
      }
      case OpKind::Attention: {
        Op b = f;
        b.name = "attention backward";
        b.backward = true;
        b.flops = 2.0 * f.flops;  // model FLOPs: backward = 2x forward
        out.push_back(b);
        break;
      }
      case OpKind::MemoryBound: {
        Op b = f;
        b.name = f.name + " backward";
        b.bytes = 2.0 * f.bytes;
        b.backward = true;
        out.push_back(b);
        break;
      }
      case OpKind::Comm: {
        Op b = f;
        b.backward = true;
        if (f.group == CommGroup::TP && f.comm == CommKind::AllGather) {
          b.comm = CommKind::ReduceScatter;
          b.name = "tp reduce-scatter (backward)";
          Op ag = f;
          ag.backward = true;
          ag.name = "tp all-gather (wgrad input)";
          out.push_back(ag);
        } else if (f.group == CommGroup::TP && f.comm == CommKind::ReduceScatter) {
          b.comm = CommKind::AllGather;
          b.name = "tp all-gather (backward)";
        } else if (f.group == CommGroup::CP) {
          b.comm = CommKind::ReduceScatter;  // dK/dV back to their owners
          b.name = "cp dk/dv exchange";
        } else {
          b.name = f.name + " (backward)";
        }
        out.push_back(b);
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<Op> layer_forward_ops(const ModelConfig& m, const ParallelPlan& p, int layer) {
  const Dims d = dims(m, p);
  std::vector<Op> ops = attention_block_forward(m, p, d);
  const std::vector<Op> mlp = mlp_block_forward(m, p, d, layer);
  ops.insert(ops.end(), mlp.begin(), mlp.end());
  return ops;
}

std::vector<Op> layer_backward_ops(const ModelConfig& m, const ParallelPlan& p, int layer) {
  std::vector<Op> out;
  const std::vector<Op> fwd = layer_forward_ops(m, p, layer);
  if (p.recompute == Recompute::Full) {
    for (Op o : fwd) {
      o.recompute = true;
      o.name = "recompute " + o.name;
      out.push_back(o);
    }
  } else if (p.recompute == Recompute::Selective) {
    // Selective recomputation (Korthikanti et al. 2022): the core attention only.
    for (Op o : fwd)
      if (o.cls == OpClass::Attention) {
        o.recompute = true;
        o.name = "recompute " + o.name;
        out.push_back(o);
      }
  }
  const std::vector<Op> bwd = backward_of(fwd);
  out.insert(out.end(), bwd.begin(), bwd.end());
  return out;
}

std::vector<Op> embedding_forward_ops(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  std::vector<Op> ops{memory("embedding lookup", OpClass::Embedding, 2.0 * kAct * d.T * d.h)};
  tp_exit(ops, m, p, d, "(embedding)");
  return ops;
}

std::vector<Op> embedding_backward_ops(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  return {memory("embedding gradient", OpClass::Embedding, 3.0 * kAct * d.T * d.h)};
}

std::vector<Op> head_forward_ops(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  std::vector<Op> ops{memory("final norm", OpClass::Norm, 4.0 * d.Tn * d.h)};
  tp_enter(ops, m, p, d, "(logits)");
  ops.push_back(gemm("logits", d.T, m.vocab / d.t, d.h));
  ops.push_back(memory("cross-entropy", OpClass::Loss, 3.0 * 4.0 * d.T * m.vocab / d.t));
  return ops;
}

std::vector<Op> head_backward_ops(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  std::vector<Op> ops{memory("cross-entropy backward", OpClass::Loss, 2.0 * 4.0 * d.T * m.vocab / d.t)};
  Op dg = gemm("logits dgrad", d.T, d.h, m.vocab / d.t), wg = gemm("logits wgrad", d.h, m.vocab / d.t, d.T);
  dg.backward = wg.backward = true;
  ops.push_back(dg);
  ops.push_back(wg);
  if (p.tp > 1)
    ops.push_back(p.sp() ? comm("tp reduce-scatter (logits backward)", CommKind::ReduceScatter, CommGroup::TP, d.T * d.h * kAct)
                         : comm("tp all-reduce (logits backward)", CommKind::AllReduce, CommGroup::TP, d.T * d.h * kAct));
  ops.push_back(memory("final norm backward", OpClass::Norm, 8.0 * d.Tn * d.h));
  return ops;
}

double layer_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int layer) {
  double dense = m.attention_params() / p.tp + 2.0 * m.hidden;
  if (m.is_moe_layer(layer)) {
    const auto& e = m.moe;
    dense += m.expert_params() * (static_cast<double>(e.experts) / p.ep + e.shared_experts) / p.tp +
             static_cast<double>(m.hidden) * e.experts;
  } else {
    dense += m.dense_mlp_params() / p.tp;
  }
  return dense;
}

double embedding_params_per_rank(const ModelConfig& m, const ParallelPlan& p) {
  return static_cast<double>(m.vocab) * m.hidden / p.tp;
}

double pipeline_p2p_bytes(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  return kAct * d.Tn * d.h;  // Megatron sends the (sequence-parallel-split) hidden states
}

double stage_params_per_rank(const ModelConfig& m, const ParallelPlan& p, int stage) {
  const int V = p.pp * p.vp;
  const int per = m.layers / V;
  double params = 0;
  for (int c = 0; c < p.vp; ++c) {
    const int vs = c * p.pp + stage;
    for (int l = vs * per; l < (vs + 1) * per && l < m.layers; ++l) params += layer_params_per_rank(m, p, l);
    if (vs == 0) params += embedding_params_per_rank(m, p);
    if (vs == V - 1 && (!m.tied_embeddings || V > 1)) params += embedding_params_per_rank(m, p);
  }
  return params;
}

std::vector<Op> optimizer_ops(const ModelConfig& m, const ParallelPlan& p) {
  double local = stage_params_per_rank(m, p, 0);
  for (int s = 1; s < p.pp; ++s) local = std::max(local, stage_params_per_rank(m, p, s));
  if (p.zero >= 1) local /= p.dp;
  Op o = memory("adam step", OpClass::Optimizer, 28.0 * local);
  return {o};
}

double model_flops_per_step(const ModelConfig& m, const ParallelPlan& p) {
  const double tokens = static_cast<double>(p.global_batch) * m.seq_len;
  double gemm_params = static_cast<double>(m.vocab) * m.hidden;  // logits
  for (int l = 0; l < m.layers; ++l) {
    gemm_params += m.attention_params();
    if (m.is_moe_layer(l))
      gemm_params += m.expert_params() * (m.moe.top_k + m.moe.shared_experts) + static_cast<double>(m.hidden) * m.moe.experts;
    else
      gemm_params += m.dense_mlp_params();
  }
  const double attention = 12.0 * m.layers * static_cast<double>(m.seq_len) * m.q_width() * tokens;
  return 6.0 * gemm_params * tokens + attention;
}

double hardware_flops_per_step(const ModelConfig& m, const ParallelPlan& p) {
  const double model = model_flops_per_step(m, p);
  const double tokens = static_cast<double>(p.global_batch) * m.seq_len;
  const double attention_fwd = 4.0 * m.layers * static_cast<double>(m.seq_len) * m.q_width() * tokens;
  if (p.recompute == Recompute::Full) {
    const double logits_fwd = 2.0 * m.vocab * m.hidden * tokens;
    return model + (model - 3 * logits_fwd) / 3.0;
  }
  if (p.recompute == Recompute::Selective) return model + attention_fwd;
  return model;
}

double megatron_sc21_flops(double B, double s, double l, double h, double V) {
  return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

}  // namespace stacksim::workload
