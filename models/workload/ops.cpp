#include "models/workload/ops.hpp"

#include <algorithm>

#include "models/workload/ops_primitives.hpp"

namespace stacksim::workload {
namespace {

using namespace ops_detail;  // models/workload/ops_primitives.hpp

void emit_block_forward(std::vector<Op>& out, const Block& b, const ParallelPlan& p) {
  out.insert(out.end(), b.pre.begin(), b.pre.end());
  if (p.sp() && b.entry) {
    Op gather = comm("tp all-gather " + b.what, CommKind::AllGather, CommGroup::TP, gathered_bytes(b, b.entry_bytes));
    gather.overlaps_next = pipelined_with_gemm(p, b.inner, true);
    gather.graph_scope = b.graph;
    out.push_back(gather);
  }
  const bool exit_pipelined = p.tp > 1 && b.exit && pipelined_with_gemm(p, b.inner, false);
  out.insert(out.end(), b.inner.begin(), b.inner.end() - (exit_pipelined ? 1 : 0));
  if (p.tp > 1 && b.exit) {
    Op reduce = p.sp() ? comm("tp reduce-scatter " + b.what, CommKind::ReduceScatter, CommGroup::TP, b.exit_bytes)
                       : comm("tp all-reduce " + b.what, CommKind::AllReduce, CommGroup::TP, b.exit_bytes);
    reduce.overlaps_next = exit_pipelined;
    reduce.graph_scope = b.graph;
    out.push_back(reduce);
    if (exit_pipelined) out.push_back(b.inner.back());
  }
  out.insert(out.end(), b.post.begin(), b.post.end());
}

void emit_forward(std::vector<Op>& out, const Block& b, const ParallelPlan& p) {
  const size_t first = out.size();
  emit_block_forward(out, b, p);
  for (size_t i = first; i < out.size(); ++i) out[i].modules |= b.modules;
}

// Backward of single ops, appended in reverse order of `fwd`.
void emit_backward_ops(std::vector<Op>& out, const std::vector<Op>& fwd) {
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
    Op f = *it;
    f.host_sync = false;  // a backward reuses what its forward read back
    switch (f.kind) {
      case OpKind::Gemm: {
        Op dgrad = gemm(f.name + " dgrad", f.m, f.k, f.n, f.batch);
        Op wgrad = gemm(f.name + " wgrad", f.k, f.n, f.m, f.batch);
        dgrad.backward = wgrad.backward = true;
        dgrad.cls = wgrad.cls = f.cls;
        dgrad.fp8_eligible = wgrad.fp8_eligible = f.fp8_eligible;
        dgrad.grouped = wgrad.grouped = f.grouped;
        dgrad.graph_scope = wgrad.graph_scope = f.graph_scope;
        wgrad.weight_grad = true;
        out.push_back(dgrad);
        out.push_back(wgrad);
        break;
      }
      case OpKind::Attention: {
        Op b = f;
        b.name = f.name + " backward";
        b.backward = true;
        b.flops = 2.0 * f.flops;
        out.push_back(b);
        break;
      }
      case OpKind::MemoryBound: {
        Op b = f;
        b.name = f.name + " backward";
        b.bytes = f.backward_bytes_factor * f.bytes;
        b.flops = 2.0 * f.flops;
        b.backward = true;
        out.push_back(b);
        break;
      }
      case OpKind::Comm: {
        Op b = f;
        b.backward = true;
        if (f.comm_backward == Op::Backward::None) break;
        if (f.group == CommGroup::CP && f.comm == CommKind::AllGather) {
          // K/V to the context-parallel ranks again before the attention backward (emitted just
          // before), the dK/dV partials home: with p2p both around the ring under the attention
          // backward, with all_gather gathered before it and reduce-scattered after it.
          const auto at = !out.empty() && out.back().kind == OpKind::Attention ? out.end() - 1 : out.end();
          Op dkv = b;
          b.name = "cp k/v exchange (backward)";
          dkv.comm = CommKind::ReduceScatter;
          dkv.name = "cp dk/dv reduce-scatter";
          if (f.overlaps_next) {
            out.insert(out.insert(at, dkv), b);
          } else {
            out.insert(at, b);
            out.push_back(dkv);
          }
          break;
        }
        if (f.comm_backward == Op::Backward::Same) {
          b.name = f.name + " (backward)";
        } else if (f.comm == CommKind::AllGather) {
          b.comm = CommKind::ReduceScatter;
          b.name = f.name + " (backward: reduce-scatter)";
        } else if (f.comm == CommKind::ReduceScatter) {
          b.comm = CommKind::AllGather;
          b.name = f.name + " (backward: all-gather)";
        } else {
          b.name = f.name + " (backward)";  // all-reduce of statistics, all-to-all, send/recv
        }
        out.push_back(b);
        break;
      }
    }
  }
}

void emit_backward(std::vector<Op>& out, const Block& b, const ParallelPlan& p) {
  emit_backward_ops(out, b.post);
  if (p.sp() && b.exit) {
    Op gather = comm("tp all-gather " + b.what + " (output grad)", CommKind::AllGather, CommGroup::TP,
                     gathered_bytes(b, b.exit_bytes));
    gather.overlaps_next = pipelined_with_gemm(p, b.inner, false);  // under the exit GEMM's dgrad
    gather.graph_scope = b.graph;
    out.push_back(gather);
  }
  std::vector<Op> inner;
  emit_backward_ops(inner, b.inner);
  if (p.tp > 1 && b.entry) {
    Op regather = comm("tp all-gather " + b.what + " (wgrad input)", CommKind::AllGather, CommGroup::TP,
                       gathered_bytes(b, b.entry_bytes));
    Op input_grad =
        p.sp() ? comm("tp reduce-scatter " + b.what + " (input grad)", CommKind::ReduceScatter, CommGroup::TP,
                      b.entry_bytes)
               : comm("tp all-reduce " + b.what + " (input grad)", CommKind::AllReduce, CommGroup::TP, b.entry_bytes);
    regather.graph_scope = input_grad.graph_scope = b.graph;
    const bool regathers = p.sp() && b.regather_for_wgrad;
    // The entry GEMM's dgrad and wgrad close the block's backward (emit_backward_ops reverses).
    const size_t n = inner.size();
    const bool entry_gemm = n >= 2 && inner[n - 1].kind == OpKind::Gemm && inner[n - 2].kind == OpKind::Gemm;
    if (p.async_tp_backward && entry_gemm) {
      regather.overlaps_next = input_grad.overlaps_next = true;
      if (regathers) inner.insert(inner.end() - 2, regather);  // under the dgrad GEMM
      inner.insert(inner.end() - 1, input_grad);               // under the wgrad GEMM
    } else {
      if (regathers) inner.insert(inner.begin(), regather);
      inner.push_back(input_grad);
    }
  }
  out.insert(out.end(), inner.begin(), inner.end());
  emit_backward_ops(out, b.pre);
}

Op dropout_residual(const Dims& d) { return memory("dropout + residual", OpClass::Elementwise, 7.0 * d.Tn * d.h); }

Block attention_block(const ModelConfig& m, const ParallelPlan& p, const Dims& d, int layer) {
  Block b;
  b.what = "(attention)";
  b.entry = b.exit = true;
  b.entry_bytes = b.exit_bytes = kAct * d.T * d.h;
  // (MLA's down-projections take the hidden states Megatron gathers itself, in 16 bit.)
  b.fp8_gathers = p.precision == Precision::FP8 && !m.is_mla();
  b.pre.push_back(norm_op("input norm", m, p, static_cast<double>(d.Tn) * d.h));
  b.pre.back().modules = kRecomputeLayernorm;
  const int64_t heads = m.heads / d.t;
  const int64_t kv_heads = std::max<int64_t>(1, m.kv_heads / d.t);
  const int64_t q = heads * m.head_dim, k = kv_heads * m.head_dim, v = kv_heads * m.v_head_dim();
  if (m.is_mla()) {
    const MlaConfig& a = m.mla;
    if (a.q_lora_rank > 0) {
      b.inner.push_back(gemm("q down projection", d.T, a.q_lora_rank, d.h));
      b.inner.push_back(norm_op("q latent norm", m, p, static_cast<double>(d.T) * a.q_lora_rank));
      b.inner.push_back(gemm("q up projection", d.T, q, a.q_lora_rank));
      b.inner.back().modules = kRecomputeMlaUpProj;
    } else {
      b.inner.push_back(gemm("q projection", d.T, q, d.h));
    }
    b.inner.push_back(gemm("kv down projection", d.T, a.kv_lora_rank + a.qk_rope_head_dim, d.h));
    b.inner.push_back(norm_op("kv latent norm", m, p, static_cast<double>(d.T) * a.kv_lora_rank));
    b.inner.push_back(gemm("kv up projection", d.T, heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank));
    b.inner.back().modules = kRecomputeMlaUpProj;
    b.inner.push_back(rotary_op(p, static_cast<double>(d.T) * (heads + 1) * a.qk_rope_head_dim));
    b.inner.back().modules = kRecomputeMlaUpProj;
  } else {
    b.inner.push_back(gemm("qkv projection", d.T, q + k + v, d.h));
    b.inner.back().mm_parts = {q, k, v};
    b.inner.push_back(rotary_op(p, static_cast<double>(d.T) * (q + k)));
  }
  if (m.is_sparse_attention()) {
    // DSA's lightning indexer (DeepSeek-V3.2 report, section 2.1), whole on every TP rank: per-head
    // queries from the query latent, one shared key and per-head weights from the hidden states;
    // then every query scores every earlier key (the causal half on average) and keeps the top-k.
    const SparseAttentionConfig& x = m.sparse;
    const int64_t q_in = m.is_mla() && m.mla.q_lora_rank > 0 ? m.mla.q_lora_rank : d.h;
    b.inner.push_back(gemm("indexer q projection", d.T, x.index_heads * x.index_head_dim, q_in));
    b.inner.push_back(gemm("indexer k and head weights", d.T, x.index_head_dim + x.index_heads, d.h));
    Op logits = gemm("indexer logits", d.T, std::max<int64_t>(1, m.seq_len / 2), x.index_head_dim, x.index_heads);
    logits.cls = OpClass::Attention;
    b.inner.push_back(logits);
  }
  // Ulysses: the sequence shards of Q, K and V all-to-all into whole sequences of heads/cp heads
  // (K/V groups fewer than cp are replicated), the output back after the attention.
  const bool ulysses = p.cp > 1 && p.cp_comm == CpComm::AllToAll;
  if (ulysses) {
    b.inner.push_back(comm("cp all-to-all q/k/v (Ulysses)", CommKind::AllToAll, CommGroup::CP,
                           kAct * static_cast<double>(d.T) * (q + k + v)));
  } else if (p.cp > 1) {
    Op kv = comm("cp k/v exchange", CommKind::AllGather, CommGroup::CP,
                 kAct * static_cast<double>(p.micro_batch) * m.seq_len * (k + v));
    kv.overlaps_next = p.cp_comm == CpComm::P2P;  // the ring runs under the attention
    b.inner.push_back(kv);
  }
  // (Unfused attention with a window is refused by the model check.)
  const AttentionShape sh{p.micro_batch,
                          ulysses ? heads / p.cp : heads,
                          ulysses ? std::max<int64_t>(1, kv_heads / p.cp) : kv_heads,
                          ulysses ? m.seq_len : m.seq_len / p.cp,
                          m.seq_len,
                          m.head_dim,
                          m.v_head_dim(),
                          true,
                          m.attended_keys_cap(layer)};
  if (m.attention == AttentionImpl::Unfused) {
    // Megatron's unfused core attention on b*(a/t) heads: scores over the full s x s (masked, not
    // skipped), softmax and dropout as memory-bound passes over the 16-bit scores (+ a 1-byte mask).
    const int64_t bh = sh.batch * sh.heads;
    const double scores = static_cast<double>(bh) * sh.seq_q * sh.seq_kv;
    Op qk = gemm("attention scores (QK^T)", sh.seq_q, sh.seq_kv, sh.head_dim, bh);
    Op sm = memory("scale-mask-softmax", OpClass::Attention, 2.0 * kAct * scores);
    Op dr = memory("attention dropout", OpClass::Attention, (2.0 * kAct + 1.0) * scores);
    Op pv = gemm("attention values (PV)", sh.seq_q, sh.v_head_dim, sh.seq_kv, bh);
    qk.cls = pv.cls = OpClass::Attention;
    for (const Op& o : {qk, sm, dr, pv}) b.inner.push_back(o);
  } else {
    Op a;
    a.name = "attention";
    a.kind = OpKind::Attention;
    a.cls = OpClass::Attention;
    a.attention = sh;
    // Model FLOPs count every key a query may attend (the whole context, its window or top-k).
    const int64_t keys = sh.window > 0 ? std::min(sh.window, sh.seq_kv) : sh.seq_kv;
    a.flops = 2.0 * sh.batch * sh.heads * sh.seq_q * keys * (sh.head_dim + sh.v_head_dim);
    b.inner.push_back(a);
  }
  if (ulysses)
    b.inner.push_back(comm("cp all-to-all output (Ulysses)", CommKind::AllToAll, CommGroup::CP,
                           kAct * static_cast<double>(d.T) * heads * m.v_head_dim()));
  b.inner.push_back(gemm("attention output projection", d.T, d.h, heads * m.v_head_dim()));
  b.post.push_back(dropout_residual(d));
  capture(b, kGraphAttn);
  return b;
}

Block dense_mlp_block(const ModelConfig& m, const ParallelPlan& p, const Dims& d, bool with_norm,
                      const std::string& what, int64_t ffn) {
  Block b;
  b.what = what;
  b.entry = b.exit = true;
  b.entry_bytes = b.exit_bytes = kAct * d.T * d.h;
  b.fp8_gathers = p.precision == Precision::FP8;
  b.modules = what == "(mlp)" ? kRecomputeMlp : kRecomputeSharedExperts;
  if (with_norm) {
    b.pre.push_back(norm_op("post-attention norm", m, p, static_cast<double>(d.Tn) * d.h));
    b.pre.back().modules = kRecomputeLayernorm;
  }
  const bool gated = m.mlp == Mlp::SwiGlu;
  const int64_t f = ffn / d.t;
  const std::string prefix = what == "(mlp)" ? "mlp" : "shared expert";
  b.inner.push_back(gemm(prefix + (gated ? " fc1 (gate+up)" : " fc1"), d.T, gated ? 2 * f : f, d.h));
  if (gated) b.inner.back().mm_parts = {f, f};
  b.inner.push_back(activation_op(prefix + (gated ? " swiglu" : " gelu"), gated, p, static_cast<double>(d.T) * f));
  b.inner.push_back(gemm(prefix + " fc2", d.T, d.h, f));
  return b;
}

// Routed experts (Megatron-Core's all-to-all token dispatcher): route the local tokens, permute,
// all-to-all over EP, gather over TP, expert GEMMs, and back.
std::vector<Block> moe_blocks(const ModelConfig& m, const ParallelPlan& p, const Dims& d) {
  const MoeConfig& e = m.moe;
  const bool gated = m.mlp == Mlp::SwiGlu;
  Block b;
  b.what = "(experts)";
  // Experts split over tp gather the tp ranks' routed tokens at entry and reduce-scatter them at
  // exit; whole experts (etp 1, parallel folding) take this rank's own sequence-parallel tokens.
  const bool folded = p.experts_folded();
  b.entry = b.exit = !folded;
  b.regather_for_wgrad = false;
  b.entry_bytes = b.exit_bytes = kAct * d.T * d.h * e.top_k;
  b.modules = kRecomputeMoe;
  b.pre.push_back(norm_op("post-attention norm", m, p, static_cast<double>(d.Tn) * d.h));
  b.pre.back().modules = kRecomputeLayernorm;
  b.pre.back().graph_scope = kGraphMoeRouter;
  b.pre.push_back(gemm("router", d.Tn, e.experts, d.h));
  b.pre.back().graph_scope = kGraphMoeRouter;
  b.pre.push_back(memory("top-k routing + permute", OpClass::Elementwise, 4.0 * d.Tn * d.h * e.top_k));
  b.pre.back().graph_scope = kGraphMoePreprocess;
  const double dispatch_bytes = kAct * d.Tn * d.h * e.top_k;
  auto ep_all_to_all = [&](const std::string& name) {
    Op a2a = comm(name, CommKind::AllToAll, CommGroup::EP, dispatch_bytes);
    if (p.ep_dispatch == EpDispatch::DeepEP) a2a.dispatch = {e.top_k, e.groups, e.groups_per_token};
    return a2a;
  };
  // Dropless routing has data-dependent token counts, which the host reads before it can launch
  // the dispatch (or, without expert parallelism, the grouped GEMM); a capacity factor pads every
  // expert to a static size (GShard) and needs no read-back.
  const bool dropless = e.capacity_factor <= 0;
  if (p.ep > 1) {
    b.pre.push_back(ep_all_to_all("ep all-to-all dispatch"));
    b.pre.back().host_sync = dropless;
  }
  // This rank's E/ep experts receive, on average, the EP group's ep * T * top_k token copies
  // spread over E experts: T * top_k, times the busiest rank's load factor.
  const int local = std::max(1, e.experts / p.ep);
  const int64_t f = e.expert_ffn_hidden / p.expert_tp();
  const int64_t tokens = folded ? d.Tn : d.T;
  const int64_t m_each = std::max<int64_t>(1, static_cast<int64_t>(tokens * e.top_k * e.load_factor() / local));
  // The all-to-all dispatcher's "permutation 2": tokens arrive grouped by source rank, and with
  // several local experts they are re-sorted by expert before the grouped GEMM and back before
  // the combine (Megatron-Core's sort_chunks_by_idxs): a read and a write of every received copy.
  // DeepEP's receive-side permute is the routing permute above.
  const bool sort_by_expert = p.ep > 1 && local > 1 && p.ep_dispatch == EpDispatch::AllToAll;
  const auto reorder = [&](const std::string& name) {
    Op o = memory(name, OpClass::Elementwise, 2.0 * kAct * static_cast<double>(m_each) * local * d.h);
    o.backward_bytes_factor = 1.0;  // its backward puts the gradients back in order: the same copy
    return o;
  };
  if (sort_by_expert) b.pre.push_back(reorder("sort tokens by local expert"));
  b.inner.push_back(gemm(gated ? "expert fc1 (gate+up)" : "expert fc1", m_each, gated ? 2 * f : f, d.h, local));
  b.inner.back().grouped = true;
  b.inner.back().host_sync = dropless && p.ep == 1;
  b.inner.push_back(
      activation_op(gated ? "expert swiglu" : "expert gelu", gated, p, static_cast<double>(m_each) * local * f));
  b.inner.back().modules = kRecomputeMoeAct;
  b.inner.push_back(gemm("expert fc2", m_each, d.h, f, local));
  b.inner.back().grouped = true;
  if (sort_by_expert) b.post.push_back(reorder("restore tokens by source rank"));
  if (p.ep > 1) b.post.push_back(ep_all_to_all("ep all-to-all combine"));
  b.post.push_back(memory("unpermute + weighted sum", OpClass::Elementwise, (2.0 * e.top_k + 2.0) * d.Tn * d.h));
  std::vector<Block> blocks{b};
  if (e.shared_experts > 0) {
    // Megatron-Core's moe_router graph takes the shared experts when they are not overlapped.
    blocks.push_back(dense_mlp_block(m, p, d, false, "(shared experts)", e.expert_ffn_hidden * e.shared_experts));
    capture(blocks.back(), kGraphMoeRouter);
  }
  blocks.back().post.push_back(dropout_residual(d));  // eager: after the dispatch's host read-back
  return blocks;
}

std::vector<Block> layer_blocks(const ModelConfig& m, const ParallelPlan& p, int layer) {
  const Dims d = dims(m, p);
  std::vector<Block> blocks{attention_block(m, p, d, layer)};
  if (m.is_moe_layer(layer)) {
    const std::vector<Block> moe = moe_blocks(m, p, d);
    blocks.insert(blocks.end(), moe.begin(), moe.end());
  } else {
    blocks.push_back(dense_mlp_block(m, p, d, true, "(mlp)", m.ffn_hidden));
    blocks.back().post.push_back(dropout_residual(d));
    capture(blocks.back(), kGraphMlp);
  }
  return blocks;
}

Block embedding_block(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  Block b;
  b.what = "(embedding)";
  b.exit = true;
  b.exit_bytes = kAct * d.T * d.h;
  b.inner.push_back(memory("embedding lookup", OpClass::Embedding, 4.0 * d.T * d.h));
  return b;
}

Block head_block(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  Block b;
  b.what = "(logits)";
  b.entry = true;
  b.entry_bytes = kAct * d.T * d.h;
  b.pre.push_back(norm_op("final norm", m, p, static_cast<double>(d.Tn) * d.h));
  // Megatron-Core's output layer is its own ColumnParallelLinear, not a Transformer Engine
  // layer: it runs in 16 bit under an FP8 recipe (so does MPT's tied head, a plain F.linear).
  Op logits = gemm("logits", d.T, (m.vocab + d.t - 1) / d.t, d.h);  // Megatron pads the vocabulary
  logits.fp8_eligible = false;
  b.inner.push_back(logits);
  // Fused (Megatron's vocab-parallel cross-entropy): ~12 B per logit forward, twice that backward.
  // Eager PyTorch (torchtitan, HF) upcasts the 16-bit logits (read 2, write 4) and runs
  // log_softmax's three passes over fp32 (3 reads + 1 write: 16 B), then backward the softmax
  // gradient (16 B), the nll gradient (4 B) and the cast back (6 B): 22 + 26 B, as the kernels
  // timed on an H100 show (calibration/measurements/*-step-profile.txt: cunn_SoftMaxForward and
  // cunn_SoftMaxBackward each ~2.2 ms over 412M logits).
  Op ce = memory("cross-entropy", OpClass::Loss, (p.kernels == Kernels::Eager ? 22.0 : 12.0) * d.T * m.vocab / d.t);
  if (p.kernels == Kernels::Eager) ce.backward_bytes_factor = 26.0 / 22.0;
  b.inner.push_back(ce);
  if (p.tp > 1)
    for (const char* stat : {"max", "target logit", "sum-exp"}) {
      Op reduce = comm(std::string("tp all-reduce (cross-entropy ") + stat + ")", CommKind::AllReduce, CommGroup::TP,
                       4.0 * d.T);
      reduce.comm_backward = Op::Backward::None;  // the softmax gradient (softmax - one-hot) needs none
      b.inner.push_back(reduce);
    }
  return b;
}

// Under selective recomputation: the ops of the plan's modules; core_attn (Korthikanti et al.
// 2022's selective recomputation) is the attention core, the ops of class Attention.
bool selectively_recomputed(const Op& o, const ParallelPlan& p) {
  return (o.modules & p.recompute_modules) != 0 ||
         ((p.recompute_modules & kRecomputeCoreAttn) && o.cls == OpClass::Attention);
}

// torchtitan's op-level selective checkpointing (recompute: op; its activation_checkpoint mode
// "selective" with selective_ac_option "op"): PyTorch keeps the outputs of the ops on the policy's
// save list and recomputes every other forward op of the layer from the layer's input. Saved: the
// attention core (SDPA; a context-parallel ring runs inside it), the reduce-scatters, and each
// plain 16-bit matmul (aten.mm) but every second one, counted in forward order from the layer's
// start (a fused op counts as the matmuls it stands for: wq, wk, wv; w1, w3). Not on the list, so
// recomputed: FP8 linears (torch._scaled_mm), the experts' grouped matmuls, norms, rotary,
// activations, residuals, the other collectives.
//
// walk_op_checkpoint walks a layer's forward ops as that policy sees them: fn(op, kept) for each
// op, a fused plain matmul split into the matmuls it stands for (copies of width n each).
template <class Fn>
void walk_op_checkpoint(const std::vector<Op>& fwd, const ParallelPlan& p, Fn fn) {
  int mm_count = 0;
  for (const Op& o : fwd) {
    const bool plain_mm = o.kind == OpKind::Gemm && o.cls == OpClass::Gemm && !o.grouped &&
                          !(p.precision == Precision::FP8 && o.fp8_eligible);
    if (!plain_mm) {
      const bool kept = o.kind == OpKind::Attention ||
                        (o.kind == OpKind::Comm && (o.comm == CommKind::ReduceScatter || o.group == CommGroup::CP));
      fn(o, kept);
      continue;
    }
    for (int64_t n : o.mm_parts.empty() ? std::vector<int64_t>{o.n} : o.mm_parts) {
      Op part = o;
      part.n = n;
      part.flops = 2.0 * part.m * part.n * part.k * part.batch;
      part.mm_parts.clear();
      fn(part, ++mm_count % 2 != 0);
    }
  }
}

// The forward ops re-run before a layer's backward under recomputation `rc`.
std::vector<Op> recomputed_ops(const std::vector<Op>& fwd, Recompute rc, const ParallelPlan& p) {
  std::vector<Op> out;
  if (rc == Recompute::Op)
    walk_op_checkpoint(fwd, p, [&](const Op& o, bool kept) {
      if (!kept) out.push_back(o);
    });
  else if (rc != Recompute::None)
    for (const Op& o : fwd)
      if (rc == Recompute::Full || selectively_recomputed(o, p)) out.push_back(o);
  for (Op& o : out) {
    o.recompute = true;
    o.name = "recompute " + o.name;
  }
  return out;
}

std::vector<Op> forward_of(const std::vector<Block>& blocks, const ParallelPlan& p) {
  std::vector<Op> out;
  for (const Block& b : blocks) emit_forward(out, b, p);
  return out;
}

std::vector<Op> backward_of(const std::vector<Block>& blocks, const ParallelPlan& p) {
  std::vector<Op> out;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) emit_backward(out, *it, p);
  return out;
}

}  // namespace

// torch.autocast over fp32 weights (ParallelPlan::autocast): every forward casts the weights it
// uses to 16-bit (read 4 B, write 2 B per parameter), and the backward's 16-bit weight gradients are
// cast into the fp32 .grad (read 2, write 4), read-modify-written (+ 4 + 4) after the first of the
// step's micro-batches. {} without autocast or weights.
namespace {
std::vector<Op> autocast_weight_casts(const ParallelPlan& p, double params) {
  if (!p.autocast || params <= 0) return {};
  return {memory("autocast: 16-bit weight copies", OpClass::Elementwise, 6.0 * params)};
}
std::vector<Op> autocast_grad_accumulation(const ParallelPlan& p, double params) {
  if (!p.autocast || params <= 0) return {};
  const double m = p.num_micro_batches();
  return {memory("autocast: fp32 gradient accumulation", OpClass::Elementwise, (6.0 + 8.0 * (m - 1.0) / m) * params)};
}
}  // namespace

std::vector<Op> layer_forward_ops(const ModelConfig& m, const ParallelPlan& p, int layer) {
  std::vector<Op> out = autocast_weight_casts(p, layer_params_per_rank(m, p, layer));
  const std::vector<Op> fwd = forward_of(layer_blocks(m, p, layer), p);
  out.insert(out.end(), fwd.begin(), fwd.end());
  return out;
}

double op_checkpoint_saved_bytes(const ModelConfig& m, const ParallelPlan& p, int layer) {
  const Dims d = dims(m, p);
  double bytes = kAct * d.Tn * d.h;  // the layer's input, the checkpoint's own
  walk_op_checkpoint(layer_forward_ops(m, p, layer), p, [&](const Op& o, bool kept) {
    if (!kept) return;
    if (o.kind == OpKind::Gemm) bytes += kAct * static_cast<double>(o.m) * o.n * o.batch;
    if (o.kind == OpKind::Comm && o.comm == CommKind::ReduceScatter) bytes += o.comm_bytes / p.tp;  // its output
    if (o.kind == OpKind::Attention) {  // its output and fp32 row statistics (log-sum-exp)
      const AttentionShape& a = o.attention;
      bytes += static_cast<double>(a.batch) * a.heads * a.seq_q * (kAct * a.v_head_dim + 4.0);
    }
  });
  return bytes;
}

std::vector<Op> layer_backward_ops(const ModelConfig& m, const ParallelPlan& p, int layer) {
  const std::vector<Block> blocks = layer_blocks(m, p, layer);
  std::vector<Op> out = recomputed_ops(forward_of(blocks, p), layer_recompute(m, p, layer), p);
  const std::vector<Op> bwd = backward_of(blocks, p);
  out.insert(out.end(), bwd.begin(), bwd.end());
  const std::vector<Op> acc = autocast_grad_accumulation(p, layer_params_per_rank(m, p, layer));
  out.insert(out.end(), acc.begin(), acc.end());
  return out;
}

std::vector<Op> embedding_forward_ops(const ModelConfig& m, const ParallelPlan& p) {
  return forward_of({embedding_block(m, p)}, p);
}

std::vector<Op> embedding_backward_ops(const ModelConfig& m, const ParallelPlan& p) {
  std::vector<Op> out = backward_of({embedding_block(m, p)}, p);
  // The backward of a lookup is a scatter-add into the embedding gradient (read the output
  // gradient, read-modify-write the gradient rows): 6 B per element, not the generic 2x.
  for (Op& o : out)
    if (o.kind == OpKind::MemoryBound) {
      o.name = "embedding gradient";
      o.bytes = 6.0 * dims(m, p).T * m.hidden;
    }
  return out;
}

// The output layer's weight (the embedding's, when tied) is cast and its gradient accumulated under
// autocast like a layer's; the input lookup runs in fp32 (autocast leaves embedding() alone).
std::vector<Op> head_forward_ops(const ModelConfig& m, const ParallelPlan& p) {
  std::vector<Op> out = autocast_weight_casts(p, embedding_params_per_rank(m, p));
  const std::vector<Op> fwd = forward_of({head_block(m, p)}, p);
  out.insert(out.end(), fwd.begin(), fwd.end());
  return out;
}

std::vector<Op> head_backward_ops(const ModelConfig& m, const ParallelPlan& p) {
  std::vector<Op> out = backward_of({head_block(m, p)}, p);
  const std::vector<Op> acc = autocast_grad_accumulation(p, embedding_params_per_rank(m, p));
  out.insert(out.end(), acc.begin(), acc.end());
  return out;
}

namespace {
// One multi-token-prediction depth (Megatron-Core's MultiTokenPredictionLayer): the two norms, the
// 2h -> h projection eh_proj (column-parallel: with sequence parallelism its input is gathered
// over the sequence first; its output is gathered over the hidden dimension, then split back to
// the sequence shards, whose backward is a gather), a layer like the last, the output head.
std::vector<Block> mtp_depth_blocks(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  Block in;
  in.what = "(mtp projection)";
  in.pre.push_back(norm_op("mtp hidden norm", m, p, static_cast<double>(d.Tn) * d.h));
  in.pre.push_back(norm_op("mtp embedding norm", m, p, static_cast<double>(d.Tn) * d.h));
  in.entry = true;
  in.entry_bytes = kAct * d.T * 2.0 * d.h;
  in.inner.push_back(gemm("mtp projection", d.T, d.h / d.t, 2 * d.h));
  if (p.tp > 1) {
    Op gather = comm("tp all-gather (mtp projection output)", CommKind::AllGather, CommGroup::TP, kAct * d.T * d.h);
    gather.comm_backward = p.sp() ? Op::Backward::Same : Op::Backward::None;
    in.post.push_back(gather);
  }
  std::vector<Block> blocks{in};
  for (const Block& b : layer_blocks(m, p, m.layers - 1)) blocks.push_back(b);
  blocks.push_back(head_block(m, p));
  return blocks;
}
}  // namespace

std::vector<Op> mtp_forward_ops(const ModelConfig& m, const ParallelPlan& p) {
  std::vector<Op> out;
  const std::vector<Op> depth = forward_of(mtp_depth_blocks(m, p), p);
  for (int k = 0; k < m.mtp_layers; ++k) out.insert(out.end(), depth.begin(), depth.end());
  return out;
}

// Each depth's backward, last depth first. Megatron-Core checkpoints the projection and the layer
// of every depth under full recomputation (whatever recompute_num_layers says) and recomputes
// them right before that depth's backward; selective recomputation re-runs the core attention.
std::vector<Op> mtp_backward_ops(const ModelConfig& m, const ParallelPlan& p) {
  std::vector<Block> blocks = mtp_depth_blocks(m, p);
  const std::vector<Block> checkpointed(blocks.begin(), blocks.end() - 1);  // not the head
  std::vector<Op> depth = recomputed_ops(forward_of(checkpointed, p), p.recompute, p);
  const std::vector<Op> bwd = backward_of(blocks, p);
  depth.insert(depth.end(), bwd.begin(), bwd.end());
  std::vector<Op> out;
  for (int k = 0; k < m.mtp_layers; ++k) out.insert(out.end(), depth.begin(), depth.end());
  return out;
}

double mtp_params_per_rank(const ModelConfig& m, const ParallelPlan& p) {
  return m.mtp_layers * (layer_params_per_rank(m, p, m.layers - 1) + 2.0 * m.norm_params() +
                         2.0 * static_cast<double>(m.hidden) * m.hidden / p.tp);
}

double pipeline_p2p_bytes(const ModelConfig& m, const ParallelPlan& p) {
  const Dims d = dims(m, p);
  return kAct * d.Tn * d.h;  // Megatron sends the (sequence-parallel-split) hidden states
}

bool has_output_layer_copy(const ModelConfig& m, const ParallelPlan& p) {
  return !m.tied_embeddings || p.pp * p.vp > 1;
}

double stage_params_sharded(const ModelConfig& m, const ParallelPlan& p, int stage) {
  const double all = stage_params_per_rank(m, p, stage), experts = stage_expert_params_per_rank(m, p, stage);
  return (all - experts) / dense_shard_ranks(p) + experts / expert_shard_ranks(p);
}

std::vector<Op> optimizer_ops(const ModelConfig& m, const ParallelPlan& p) {
  // The most loaded stage's parameters, sharded or not.
  const auto most = [&](bool sharded) {
    double v = 0;
    for (int s = 0; s < p.pp; ++s)
      v = std::max(v, sharded ? stage_params_sharded(m, p, s) : stage_params_per_rank(m, p, s));
    return v;
  };
  const double local = most(p.zero >= 1);
  // Megatron's mixed-precision step on this rank's shard: the gradient norm for clipping (read
  // the gradients), Adam (read master weights, m, v and gradients, write master, m, v: 24 B, or
  // 16 with bf16 moments, + the gradient), the 16-bit weights from the fp32 masters (read 4, write 2; FSDP casts at the
  // gather instead); then the whole gradient buffer is zeroed for the next step (sharded only
  // from ZeRO-2 on; FSDP frees it). Under autocast Adam updates the fp32 weights themselves: the
  // same 24 B, with no 16-bit copy to refresh.
  const double g = p.grad_bytes_per_param();
  if (p.offload_optimizer) {
    // ZeRO-Offload: the step runs on the host (the replay's host phase); the GPU casts its
    // gradient shard to fp32 for the copy and zeroes the gradient buffer.
    return {memory("gradient shard to fp32 (for the host copy)", OpClass::Optimizer, (g + 4.0) * local),
            memory("zero gradients", OpClass::Optimizer, g * most(p.zero >= 2))};
  }
  const bool fsdp = p.zero >= 3;
  const bool copy16 = !fsdp && !p.autocast;
  std::vector<Op> ops{memory("gradient norm + adam step" + std::string(copy16 ? " + 16-bit weights" : ""),
                             OpClass::Optimizer,
                             (g + 2.0 * p.adam_state_bytes_per_param() + g + (copy16 ? 6.0 : 0.0)) * local)};
  if (!fsdp) ops.push_back(memory("zero gradients", OpClass::Optimizer, g * most(p.zero >= 2)));
  return ops;
}

}  // namespace stacksim::workload
