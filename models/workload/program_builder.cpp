#include "models/workload/program_builder.hpp"

#include <stdexcept>

#include "models/workload/memory.hpp"
#include "models/workload/ops.hpp"

namespace stacksim::workload {
namespace {

compute::DType gemm_dtype(Precision p) {
  switch (p) {
    case Precision::FP32:
      return compute::DType::FP32;
    case Precision::TF32:
      return compute::DType::TF32;
    case Precision::FP16:
      return compute::DType::FP16;
    case Precision::BF16:
      return compute::DType::BF16;
    case Precision::FP8:
      return compute::DType::FP8;
  }
  return compute::DType::BF16;
}

// Non-GEMM kernels run in 16-bit even in FP8 training (Transformer Engine keeps attention and
// element-wise work in BF16).
compute::DType other_dtype(Precision p) {
  if (p == Precision::FP32 || p == Precision::TF32) return gemm_dtype(p);
  return p == Precision::FP16 ? compute::DType::FP16 : compute::DType::BF16;
}

Group to_group(CommGroup g) {
  switch (g) {
    case CommGroup::TP:
      return Group::TP;
    case CommGroup::CP:
      return Group::CP;
    case CommGroup::EP:
      return Group::EP;
    case CommGroup::DP:
      return Group::DP;
    case CommGroup::PP:
      break;
  }
  throw std::logic_error("pipeline transfers are not layer ops");
}

coll::CollectiveOp to_collective(CommKind k) {
  switch (k) {
    case CommKind::AllReduce:
      return coll::CollectiveOp::AllReduce;
    case CommKind::AllGather:
      return coll::CollectiveOp::AllGather;
    case CommKind::ReduceScatter:
      return coll::CollectiveOp::ReduceScatter;
    case CommKind::AllToAll:
      return coll::CollectiveOp::AllToAll;
    case CommKind::SendRecv:
      return coll::CollectiveOp::SendRecv;
  }
  return coll::CollectiveOp::AllReduce;
}

uint16_t category_of(OpClass c) {
  switch (c) {
    case OpClass::Gemm:
      return kCatGemm;
    case OpClass::Attention:
      return kCatAttention;
    case OpClass::Optimizer:
      return kCatOptimizer;
    default:
      return kCatElementwise;
  }
}

compute::AttentionKernel attention_kernel(AttentionImpl a) {
  switch (a) {
    case AttentionImpl::Flash2:
      return compute::AttentionKernel::Flash2;
    case AttentionImpl::Flash1:
      return compute::AttentionKernel::Flash1;
    default:
      return compute::AttentionKernel::Fused;
  }
}

class Coster {
 public:
  Coster(const ModelConfig& model, const ParallelPlan& plan, const compute::GpuModel& gpu)
      : cuda_graphs_(plan.cuda_graphs),
        gpu_(gpu),
        gemm_(gemm_dtype(plan.precision)),
        other_(other_dtype(plan.precision)),
        kernel_(attention_kernel(model.attention)),
        quantize_bytes_per_element_(plan.fp8_quantize_bytes_per_element(gpu.spec().fp8_gemm_needs_transpose())) {}

  CostedOp cost(const Op& op) const {
    CostedOp c;
    c.name = op.name;
    c.host_sync = op.host_sync;
    if (op.kind == OpKind::Comm) {
      c.kind = CostedOp::Kind::Collective;
      c.group = to_group(op.group);
      c.op = to_collective(op.comm);
      c.bytes = op.comm_bytes;
      c.overlaps_next = op.overlaps_next;
      c.dispatch = op.dispatch;
      return c;
    }
    c.kind = CostedOp::Kind::Compute;
    c.category = category_of(op.cls);
    c.weight_grad = op.weight_grad;
    switch (op.kind) {
      case OpKind::Gemm:
        c.seconds = gpu_.gemm(op.m, op.n, op.k, op.fp8_eligible ? gemm_ : other_, op.batch).seconds;
        // A grouped GEMM is one GEMM per local expert (Transformer Engine's GroupedLinear); a
        // batched one (unfused attention) is a single call.
        c.launches = op.grouped ? static_cast<int>(op.batch) : 1;
        break;
      case OpKind::Attention: {
        const auto& a = op.attention;
        c.seconds = op.backward ? gpu_.attention_backward(a.batch, a.heads, a.kv_heads, a.seq_q, a.seq_kv, a.head_dim,
                                                          a.causal, other_, kernel_, a.window)
                                      .seconds
                                : gpu_.attention_forward(a.batch, a.heads, a.kv_heads, a.seq_q, a.seq_kv, a.head_dim,
                                                         a.causal, other_, kernel_, a.window)
                                      .seconds;
        // FlashAttention's backward is three kernels: the dO.O row sums, the main loop and the
        // dQ conversion from its fp32 accumulator (flash_bwd_launch_template.h).
        c.launches = op.backward ? 3 : 1;
        break;
      }
      case OpKind::MemoryBound:
        // An eager chain launches one kernel per step; each pays the launch floor.
        c.seconds = gpu_.memory_bound(op.bytes, op.flops).seconds + (op.kernels - 1) * gpu_.kernel_overhead_s();
        c.launches = op.kernels;
        break;
      case OpKind::Comm:
        break;
    }
    return c;
  }

  // `model_ops`: the list is the model's (layers, embedding, head), which cuda_graphs: full
  // captures whole; the optimizer's is not.
  std::vector<CostedOp> cost_all(const std::vector<Op>& ops, bool model_ops = true) const {
    std::vector<CostedOp> out;
    out.reserve(ops.size());
    std::vector<unsigned> graph;  // the CUDA graph of each costed op (0 = launched by the host)
    for (const Op& op : ops) {
      if (op.kind == OpKind::Comm && op.group == CommGroup::PP) continue;  // the replay sends activations
      const unsigned g = (cuda_graphs_ & kGraphFull) ? (model_ops ? kGraphFull : 0u) : (op.graph_scope & cuda_graphs_);
      if (op.kind == OpKind::Gemm && op.cls == OpClass::Gemm && op.fp8_eligible && !op.weight_grad &&
          gemm_ == compute::DType::FP8) {
        // FP8 GEMMs read FP8 operands: the 16-bit input activation (or output gradient) is
        // quantised first, as the plan's fp8_recipe does it. Weights are quantised once per step
        // and cached across micro-batches, so they are not charged.
        CostedOp cast;
        cast.name = "fp8 quantize";
        cast.category = kCatElementwise;
        cast.seconds =
            gpu_.memory_bound(quantize_bytes_per_element_ * static_cast<double>(op.m) * op.k * op.batch).seconds;
        out.push_back(cast);
        graph.push_back(g);
      }
      out.push_back(cost(op));
      graph.push_back(g);
    }
    // A run of ops captured in one graph is one launch (the graph's), its first op's.
    for (size_t i = 0; i < out.size(); ++i)
      if (graph[i] != 0) out[i].launches = i > 0 && graph[i - 1] == graph[i] ? 0 : 1;
    return out;
  }

 private:
  unsigned cuda_graphs_;
  const compute::GpuModel& gpu_;
  compute::DType gemm_, other_;
  compute::AttentionKernel kernel_;
  double quantize_bytes_per_element_;
};

}  // namespace

StepProgram build_step_program(const ModelConfig& model, const ParallelPlan& plan, const compute::GpuModel& gpu,
                               bool with_layers) {
  const Coster coster(model, plan, gpu);
  // One FSDP element-wise pass of `bytes_per_param` over `params` parameters (the replay runs
  // them only where it replays FSDP).
  auto fsdp_pass_s = [&](double bytes_per_param, double params) {
    return plan.zero >= 3 && bytes_per_param > 0 && params > 0 ? gpu.memory_bound(bytes_per_param * params).seconds
                                                               : 0.0;
  };
  StepProgram p;
  p.pp = plan.pp;
  p.vp = plan.vp;
  p.tp = plan.tp;
  p.cp = plan.cp;
  p.dp = plan.dp;
  p.ep = plan.ep;
  p.experts_folded = plan.experts_folded();
  p.micro_batches = plan.num_micro_batches();
  p.schedule = plan.schedule == Schedule::GPipe ? ScheduleKind::GPipe
               : plan.dualpipe()                ? ScheduleKind::DualPipe
                                                : ScheduleKind::OneFOneB;
  p.pair_forward_backward = plan.ep_overlap;
  p.offload_activations = plan.offload_activations;
  p.zero = plan.zero;
  p.overlap_grad_reduce = plan.overlap_grad_reduce;
  p.overlap_param_gather = plan.overlap_param_gather;
  // DualPipe waits for its previous chunk's sends before each chunk (dualpipe.py's
  // _commit_and_wait_comm), as blocking sends do.
  p.blocking_p2p = plan.dualpipe() || !(plan.overlap_p2p_comm && plan.interleaved());
  p.dp_bucket_bytes = plan.dp_bucket_bytes;
  p.shard_size = plan.shard_size;
  p.fsdp_gathers_per_layer = plan.fsdp_gathers_per_layer;

  // Identical layers share one costed program (costing is the expensive part for big models).
  // Kinds: dense or MoE, times recomputed or not (full recomputation of some layers per chunk),
  // times windowed (or sparse) attention or not.
  std::vector<LayerProgram> by_kind(8);
  std::vector<bool> costed(8, false);
  if (with_layers) p.layers.reserve(model.layers);
  for (int l = 0; l < (with_layers ? model.layers : 0); ++l) {
    const int kind = (model.is_moe_layer(l) ? 1 : 0) + 2 * (layer_recompute(model, plan, l) == plan.recompute ? 0 : 1) +
                     4 * (model.attended_keys_cap(l) > 0 ? 1 : 0);
    if (!costed[kind]) {
      LayerProgram& lp = by_kind[kind];
      lp.forward = coster.cost_all(layer_forward_ops(model, plan, l));
      lp.backward = coster.cost_all(layer_backward_ops(model, plan, l));
      const double params = layer_params_per_rank(model, plan, l);
      // Routed experts have a data-parallel group of their own once expert parallelism is carved
      // out of data parallelism (or folded over tensor parallelism).
      const double experts = plan.ep > 1 || plan.experts_folded() ? layer_expert_params_per_rank(model, plan, l) : 0.0;
      lp.param_bytes = 2.0 * (params - experts);                         // 16-bit weights gathered by ZeRO/FSDP
      lp.grad_bytes = plan.grad_bytes_per_param() * (params - experts);  // reduced over data parallelism
      lp.expert_param_bytes = 2.0 * experts;
      lp.expert_grad_bytes = plan.grad_bytes_per_param() * experts;
      lp.fsdp_grad_prep_s = fsdp_pass_s(plan.fsdp_grad_prep_bytes_per_param(), params);
      lp.fsdp_gather_copy_s = fsdp_pass_s(plan.fsdp_gather_copy_bytes_per_param(), params);
      if (plan.offload_activations) lp.offload_bytes = activation_bytes_per_layer(model, plan, l);
      costed[kind] = true;
    }
    p.layers.push_back(by_kind[kind]);
  }
  if (plan.uneven_layout()) p.vstage_begin = virtual_stage_bounds(model, plan);
  p.pre_forward = coster.cost_all(embedding_forward_ops(model, plan));
  p.post_backward = coster.cost_all(embedding_backward_ops(model, plan));
  std::vector<Op> post_forward = head_forward_ops(model, plan), pre_backward = mtp_backward_ops(model, plan);
  const std::vector<Op> mtp_forward = mtp_forward_ops(model, plan), head_backward = head_backward_ops(model, plan);
  post_forward.insert(post_forward.end(), mtp_forward.begin(), mtp_forward.end());
  pre_backward.insert(pre_backward.end(), head_backward.begin(), head_backward.end());
  p.post_forward = coster.cost_all(post_forward);
  p.pre_backward = coster.cost_all(pre_backward);
  const double embedding_params = embedding_params_per_rank(model, plan);
  p.embedding_param_bytes = 2.0 * embedding_params;
  p.embedding_grad_bytes = plan.grad_bytes_per_param() * embedding_params;
  // The output layer (untied, or Megatron's last-stage copy of tied embeddings) and final norm.
  const double head_params = (has_output_layer_copy(model, plan) ? embedding_params : 0.0) + model.norm_params() +
                             mtp_params_per_rank(model, plan);
  p.head_grad_bytes = plan.grad_bytes_per_param() * head_params;
  p.embedding_fsdp_grad_prep_s = fsdp_pass_s(plan.fsdp_grad_prep_bytes_per_param(), embedding_params);
  p.head_fsdp_grad_prep_s = fsdp_pass_s(plan.fsdp_grad_prep_bytes_per_param(), head_params);
  p.optimizer = coster.cost_all(optimizer_ops(model, plan), false);
  p.p2p_bytes = pipeline_p2p_bytes(model, plan);
  if (plan.p2p_scatter_gather && plan.tp > 1 && !plan.sp()) {
    p.p2p_gather_bytes = p.p2p_bytes;
    p.p2p_bytes /= plan.tp;
  }
  return p;
}

double host_launches_per_rank(const StepProgram& p) {
  const auto count = [&](const std::vector<CostedOp>& ops) {
    double n = 0;
    for (const CostedOp& o : ops)
      if (o.kind == CostedOp::Kind::Compute || (o.bytes > 0 && group_size(p, o.group) >= 2)) n += o.launches;
    return n;
  };
  double per_micro_batch =
      count(p.pre_forward) + count(p.post_forward) + count(p.pre_backward) + count(p.post_backward);
  for (const LayerProgram& l : p.layers) per_micro_batch += count(l.forward) + count(l.backward);
  return (per_micro_batch * p.micro_batches) / p.pp + count(p.optimizer);
}

}  // namespace stacksim::workload
