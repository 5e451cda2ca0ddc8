#include "models/serving/step_cost.hpp"

#include "models/serving/expert_balance.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace stacksim::serving {
namespace {

constexpr double kAttentionBlock = 128;         // key rows per flash-attention loop (GpuModel)
constexpr double kAttentionTileOverhead = 1.3;  // per-block fixed cost in loop iterations (GpuModel)
constexpr double kActivationBytes = 2;          // residual stream and collectives stay 16-bit

const char* gemm_efficiency_key(Dtype activations) {
  switch (activations) {
    case Dtype::FP16:
      return "fp16";
    case Dtype::FP8:
    case Dtype::INT8:
    case Dtype::FP4:
      return "fp8";  // ASSUMPTION: 8/4-bit GEMMs reach FP8's measured fraction
    default:
      return "bf16";
  }
}

}  // namespace

const char* step_category_name(StepCategory c) {
  switch (c) {
    case StepCategory::WeightRead:
      return "weight_read";
    case StepCategory::KvRead:
      return "kv_read";
    case StepCategory::GemmCompute:
      return "gemm_compute";
    case StepCategory::AttentionCompute:
      return "attention_compute";
    case StepCategory::Elementwise:
      return "elementwise";
    case StepCategory::TpComm:
      return "tp_comm";
    case StepCategory::EpComm:
      return "ep_comm";
    case StepCategory::PpComm:
      return "pp_comm";
    case StepCategory::Host:
      return "host";
    case StepCategory::SpeculativeDraft:
      return "speculative_draft";
    case StepCategory::PdTransfer:
      return "pd_transfer";
    case StepCategory::Count:
      break;
  }
  return "?";
}

double capped_pairs(double prior, double chunk, double cap) {
  const double end = prior + chunk;
  if (cap <= 0 || end <= cap) return chunk * (prior + chunk / 2);
  if (prior >= cap) return chunk * cap;
  return (cap - prior) * (prior + (cap - prior) / 2) + (end - cap) * cap;
}

double capped_context(double prior, double chunk, double cap) {
  return cap <= 0 ? prior + chunk : std::min(prior + chunk, cap + chunk);
}

StepCostModel::StepCostModel(const ServingConfig& config, const Parallelism& parallel,
                             const workload::ModelConfig& model, const hw::GpuSpec& gpu,
                             std::shared_ptr<const topo::Cluster> cluster, const coll::CommTuning& tuning,
                             int first_rank)
    : config_(config),
      par_(parallel),
      model_(model),
      gpu_(gpu),
      gpu_model_(gpu),
      cluster_(std::move(cluster)),
      tuning_(tuning),
      first_rank_(first_rank) {
  for (int r = 0; r < par_.tp; ++r) tp_ranks_.push_back(first_rank + r);
  for (int r = 0; r < par_.ep; ++r) ep_ranks_.push_back(first_rank + r);
  layers_per_stage_ = (model.layers + par_.pp - 1) / par_.pp;
  for (int l = 0; l < model.layers; ++l) (model.is_moe_layer(l) ? moe_layers_ : dense_layers_)++;
  tensor_flops_ = tensor_peak_flops_per_s(gpu, config.weights_dtype, config.activations_dtype) *
                  gpu.max_efficiency(gemm_efficiency_key(config.activations_dtype)) * config.engine.gemm_efficiency;
  f16_flops_ = tensor_peak_flops_per_s(gpu, Dtype::BF16, Dtype::BF16);
  hbm_Bps_ = gpu.hbm_Bps * gpu.hbm_efficiency;
  kernel_s_ = gpu.kernel_overhead_s;
  w_bytes_ = dtype_bytes(config.weights_dtype);
  a_bytes_ = dtype_bytes(config.activations_dtype);
  // A part kept at another (16-bit) format runs its GEMMs in that format.
  auto rate = [&](Dtype w) {
    const Dtype a = w == config.weights_dtype ? config.activations_dtype : w;
    return tensor_peak_flops_per_s(gpu, w, a) * gpu.max_efficiency(gemm_efficiency_key(a)) *
           config.engine.gemm_efficiency;
  };
  const Dtype attn_w = config.attention_weights_dtype.value_or(config.weights_dtype);
  attn_w_bytes_ = dtype_bytes(attn_w);
  attn_a_bytes_ = attn_w == config.weights_dtype ? a_bytes_ : dtype_bytes(attn_w);
  attn_flops_ = attn_w == config.weights_dtype ? tensor_flops_ : rate(attn_w);
  const Dtype draft_w = config.speculative.draft_weights_dtype.value_or(config.weights_dtype);
  if (config.speculative.draft_tokens > 0 && draft_w != config.weights_dtype) {
    ServingConfig d = config;
    d.weights_dtype = d.activations_dtype = draft_w;
    d.attention_weights_dtype.reset();
    d.speculative = {};
    draft_model_ = std::make_unique<StepCostModel>(d, parallel, model, gpu, cluster_, tuning, first_rank);
  }
  kv_bytes_ = dtype_bytes(config.kv_dtype);
  for (int l = 0; l < model.layers; ++l) {
    const int64_t cap = model.attended_keys_cap(l);
    if (cap <= 0) continue;
    keys_cap_ = static_cast<double>(cap);
    ++capped_layers_;
  }
  if (model.is_mla()) {
    // MLA caches the joint latent and the shared rotary key, whole on every TP rank.
    kv_token_layer_bytes_ = static_cast<double>(model.mla.kv_lora_rank + model.mla.qk_rope_head_dim) * kv_bytes_;
  } else {
    const double kv_heads_gpu = std::max<double>(1.0, std::ceil(static_cast<double>(model.kv_heads) / par_.tp));
    kv_token_layer_bytes_ = 2 * kv_heads_gpu * static_cast<double>(model.head_dim) * kv_bytes_;
  }
}

StepCostModel::Gemm StepCostModel::gemm(double m, double n, double k, double weight_bytes_per_elem) const {
  return gemm_at(m, n, k, weight_bytes_per_elem, tensor_flops_, a_bytes_);
}

StepCostModel::Gemm StepCostModel::gemm_at(double m, double n, double k, double weight_bytes_per_elem,
                                           double flops_per_s, double a_bytes) const {
  const double compute_s = 2 * m * n * k / (flops_per_s * gpu_model_.gemm_compute_fraction(m, n, k, a_bytes));
  const double bytes = n * k * weight_bytes_per_elem + m * k * a_bytes + m * n * kActivationBytes;
  const double memory_s = bytes / hbm_Bps_;
  return {std::sqrt(compute_s * compute_s + memory_s * memory_s) + kernel_s_, memory_s >= compute_s};
}

// The LM head (16-bit weights, vocabulary split over tp) for `rows` tokens, memoised by the row
// count: it runs every step, and its tiling search need not.
StepCostModel::Gemm StepCostModel::lm_head(double rows) {
  auto [it, fresh] = lm_head_memo_.try_emplace(static_cast<long long>(rows));
  if (fresh)
    it->second = gemm(rows, static_cast<double>(model_.vocab) / par_.tp, static_cast<double>(model_.hidden), 2);
  return it->second;
}

double StepCostModel::collective_s(coll::CollectiveOp op, const std::vector<int>& ranks, double bytes,
                                   const coll::MoeDispatch& dispatch) {
  if (ranks.size() < 2 || bytes <= 0) return 0;
  const auto key = std::make_tuple(static_cast<int>(op), bytes, ranks.size());
  auto it = coll_memo_.find(key);
  if (it != coll_memo_.end()) return it->second;
  coll::Collective c;
  c.op = op;
  c.ranks = ranks;
  c.bytes = bytes;
  c.dispatch = dispatch;
  const double s = coll::estimate_seconds(*cluster_, tuning_, c);
  coll_memo_.emplace(key, s);
  return s;
}

double StepCostModel::transfer_seconds(int dst_rank, double bytes) const {
  if (bytes <= 0 || dst_rank == first_rank_) return 0;
  coll::Collective c;
  c.op = coll::CollectiveOp::SendRecv;
  c.ranks = {first_rank_, dst_rank};
  c.peer = dst_rank;
  c.bytes = bytes;
  return coll::estimate_seconds(*cluster_, tuning_, c);
}

// Everything in a step that depends only on its token count: GEMMs, element-wise kernels and the
// collectives of every layer of every stage, plus the pipeline transfers.
const CategorySeconds& StepCostModel::token_part(long long tokens, long long rank_tokens) {
  const uint64_t key = static_cast<uint64_t>(rank_tokens) << 32 | static_cast<uint64_t>(tokens);
  auto [it, fresh] = memo_.try_emplace(key);
  CategorySeconds& c = it->second;
  if (!fresh) return c;
  c.fill(0);
  if (tokens == 0) return c;
  const workload::ModelConfig& m = model_;
  const double tp = par_.tp, dp = par_.dp;
  const double t_rank = static_cast<double>(rank_tokens);  // tokens of the busiest dp rank
  const double h = static_cast<double>(m.hidden);
  // A GEMM's seconds go to weight reads or to compute, whichever bounds it.
  auto gemm_category = [](const Gemm& g) {
    return static_cast<size_t>(g.memory_bound ? StepCategory::WeightRead : StepCategory::GemmCompute);
  };
  auto add_gemm = [&](double count, double mm, double n, double k, double wbytes) {
    const Gemm g = gemm(mm, n, k, wbytes);
    c[gemm_category(g)] += count * g.seconds;
  };
  const double layers = static_cast<double>(m.layers);
  // Attention projections: attention_gemm_params / hidden is the summed output width (q, k, v, o).
  const double attn_width = m.attention_gemm_params() / h / tp;
  const Gemm attn = gemm_at(t_rank, attn_width, h, attn_w_bytes_, attn_flops_, attn_a_bytes_);
  c[gemm_category(attn)] += layers * attn.seconds;
  // ...run as separate launches, each with its floor: the fused QKV and the output GEMM (attention
  // runs between them); MLA's fused q/kv down-projection, q up-projection, the absorbed k and v
  // up-projections (two batched GEMMs) and the output GEMM, with the two latent RMSNorms between
  // (TensorRT-LLM tech blog 1's MLA module list, Modules 1-8).
  const bool q_lora = m.is_mla() && m.mla.q_lora_rank > 0;
  const double attn_launches = m.is_mla() ? (q_lora ? 5 : 4) : 2;
  const double latent_norms = m.is_mla() ? (q_lora ? 2 : 1) : 0;
  c[gemm_category(attn)] += layers * (attn_launches - 1) * kernel_s_;
  c[static_cast<size_t>(StepCategory::Elementwise)] += layers * latent_norms * kernel_s_;
  // Dense MLPs (every non-MoE layer).
  const double ffn_gpu = static_cast<double>(m.ffn_hidden) / tp;
  add_gemm(dense_layers_, t_rank, (m.mlp_gemms() - 1) * ffn_gpu, h, w_bytes_);
  add_gemm(dense_layers_, t_rank, h, ffn_gpu, w_bytes_);
  // Element-wise: two fused add+norm, rotary on q/k, the activation; 16-bit reads and writes.
  const double ew_bytes_per_token =
      (8 * h + 3 * ffn_gpu + 2 * static_cast<double>(m.q_width() + m.kv_width()) / tp) * kActivationBytes;
  c[static_cast<size_t>(StepCategory::Elementwise)] +=
      layers * (t_rank * ew_bytes_per_token / hbm_Bps_ + 3 * kernel_s_);
  // TP all-reduce after attention and after each dense MLP (or MoE layer without EP).
  const double ar_bytes = t_rank * h * kActivationBytes;
  const double ar_s = collective_s(coll::CollectiveOp::AllReduce, tp_ranks_, ar_bytes);
  c[static_cast<size_t>(StepCategory::TpComm)] += (layers + dense_layers_) * ar_s;
  if (moe_layers_ > 0) {
    const auto& moe = m.moe;
    const double e_ffn = static_cast<double>(moe.expert_ffn_hidden);
    add_gemm(moe_layers_, t_rank, static_cast<double>(moe.experts), h, 2);  // router, 16-bit
    if (moe.shared_experts > 0) {
      const double sh = moe.shared_experts * e_ffn / tp;
      add_gemm(moe_layers_, t_rank, (m.mlp_gemms() - 1) * sh, h, w_bytes_);
      add_gemm(moe_layers_, t_rank, h, sh, w_bytes_);
    }
    // Routed experts: split over ep ranks, each expert's FFN over the remaining etp GPUs.
    const double ep = par_.ep;
    const double etp = par_.ep > 1 ? std::max(1.0, tp * dp / ep) : tp;
    const double tokens_seen = par_.ep > 1 ? static_cast<double>(tokens) : t_rank;
    const double copies = tokens_seen * moe.top_k;
    const double experts_gpu = moe.experts / ep;
    // The busiest EP rank's routed rows set the step (expert_balance.hpp); one rank holding a slice
    // of every expert (ep 1) has no spread. Its distinct experts (whose weights it reads) follow
    // from its rows: 1 - (1 - 1/experts_gpu)^rows of them.
    const double busiest = busiest_expert_rank_factor(moe.experts, par_.ep, copies, config_.expert_load_balancer);
    const double rows = copies / ep * busiest;
    const double active = experts_gpu * (1 - std::pow(1 - 1.0 / std::max(1.0, experts_gpu), rows));
    const double expert_params_gpu = m.expert_params() / etp;
    // Each active expert's grouped-GEMM slice: its share of the rows against its FFN width.
    const double expert_fraction = gpu_model_.gemm_compute_fraction(std::max(1.0, rows / std::max(1.0, active)),
                                                                    (m.mlp_gemms() - 1) * e_ffn / etp, h, a_bytes_);
    const double compute_s = 2 * rows * expert_params_gpu / (tensor_flops_ * expert_fraction);
    const double memory_s =
        (active * expert_params_gpu * w_bytes_ + rows * h * (a_bytes_ + kActivationBytes)) / hbm_Bps_;
    const double expert_s = std::sqrt(compute_s * compute_s + memory_s * memory_s) + 2 * kernel_s_;
    c[static_cast<size_t>(memory_s >= compute_s ? StepCategory::WeightRead : StepCategory::GemmCompute)] +=
        moe_layers_ * expert_s;
    // Token copies written in expert order and read back by the weighted sum (the gather into the
    // grouped GEMM and its scatter are fused into its prologue and epilogue).
    c[static_cast<size_t>(StepCategory::Elementwise)] +=
        moe_layers_ * (rows * h * 2 * kActivationBytes / hbm_Bps_ + 2 * kernel_s_);
    if (par_.ep > 1) {
      coll::MoeDispatch d;
      d.top_k = moe.top_k;
      d.groups = moe.groups;
      d.groups_per_token = moe.groups_per_token;
      // The busiest rank receives `busiest` x the mean: the all-to-all ends when it has.
      const double dispatch_bytes = t_rank * moe.top_k * h * std::min(a_bytes_, kActivationBytes) * busiest;
      const double combine_bytes = t_rank * moe.top_k * h * kActivationBytes * busiest;
      c[static_cast<size_t>(StepCategory::EpComm)] +=
          moe_layers_ * (collective_s(coll::CollectiveOp::AllToAll, ep_ranks_, dispatch_bytes, d) +
                         collective_s(coll::CollectiveOp::AllToAll, ep_ranks_, combine_bytes, d));
    } else {
      c[static_cast<size_t>(StepCategory::TpComm)] += moe_layers_ * ar_s;
    }
  }
  if (par_.pp > 1) {
    const int next = first_rank_ + par_.tp * par_.dp;
    coll::Collective p2p;
    p2p.op = coll::CollectiveOp::SendRecv;
    p2p.ranks = {first_rank_, next};
    p2p.peer = next;
    p2p.bytes = t_rank * h * kActivationBytes;
    c[static_cast<size_t>(StepCategory::PpComm)] += (par_.pp - 1) * coll::estimate_seconds(*cluster_, tuning_, p2p);
  }
  return c;
}

void StepCostModel::attention(const StepShape& s, CategorySeconds& out) const {
  const workload::ModelConfig& m = model_;
  const double tp = par_.tp, dp = par_.dp;
  const double heads_gpu = std::ceil(static_cast<double>(m.heads) / tp);
  const double eff_peak = f16_flops_ * gpu_.attention_forward_efficiency * config_.engine.attention_efficiency;
  auto add = [&](double layers, double flops, double bytes, double blocks_visited, double peak) {
    if (layers <= 0 || (flops <= 0 && bytes <= 0)) return;
    const double plateau = blocks_visited / (blocks_visited + kAttentionTileOverhead);
    const double compute_s = flops / (peak * std::max(plateau, 0.05));
    const double memory_s = bytes / hbm_Bps_;
    const double t = layers * (std::sqrt(compute_s * compute_s + memory_s * memory_s) + kernel_s_);
    out[static_cast<size_t>(memory_s >= compute_s ? StepCategory::KvRead : StepCategory::AttentionCompute)] += t;
  };
  const double full_layers = m.layers - capped_layers_;
  // Score + value FLOPs per (query, key) pair and head: MLA's absorbed decode works in the latent.
  const double latent_dims = static_cast<double>(2 * m.mla.kv_lora_rank) + static_cast<double>(m.mla.qk_rope_head_dim);
  const double qk_pv_dims = m.is_mla() ? latent_dims : static_cast<double>(m.head_dim + m.v_head_dim());
  // The sparse-attention indexer scores every cached key in FP8 (DeepGEMM's MQA logits kernels),
  // with its heads whole on every GPU, and reads the indexer keys.
  const double index_dims = static_cast<double>(m.sparse.index_heads * m.sparse.index_head_dim);
  const double index_peak = m.is_sparse_attention() ? 2 * eff_peak : 0;
  if (s.decode_seqs > 0) {
    const double q_per_seq = static_cast<double>(s.decode_query_tokens) / static_cast<double>(s.decode_seqs);
    // The busiest rank holds ceil(seqs / dp) of the sequences (a sequence lives on one rank).
    const double rank_share = std::ceil(static_cast<double>(s.decode_seqs) / dp) / static_cast<double>(s.decode_seqs);
    auto decode = [&](double layers, double context_sum) {
      const double ctx = context_sum * rank_share;
      add(layers, 2 * heads_gpu * qk_pv_dims * ctx * q_per_seq, ctx * kv_token_layer_bytes_,
          std::max(1.0, context_sum / static_cast<double>(s.decode_seqs) / kAttentionBlock), eff_peak);
    };
    decode(full_layers, s.decode_context_tokens);
    decode(capped_layers_, s.decode_attended_tokens);
    if (m.is_sparse_attention()) {
      const double ctx = s.decode_context_tokens * rank_share;
      add(m.layers, 2 * index_dims * ctx * q_per_seq, ctx * m.indexer_key_bytes(),
          std::max(1.0, s.decode_context_tokens / static_cast<double>(s.decode_seqs) / kAttentionBlock), index_peak);
    }
  }
  if (s.prefill_tokens > 0) {
    const double share = std::max(1.0 / dp, s.largest_prefill_pairs / std::max(1.0, s.prefill_pair_tokens));
    const double tokens = static_cast<double>(s.prefill_tokens);
    // `n` prompt tokens with `pairs` score pairs over `key_rows` cached rows read.
    auto prefill = [&](double layers, double heads, double dims, double n, double pairs, double key_rows) {
      if (n <= 0 || pairs <= 0) return;
      const double bytes = key_rows * share * kv_token_layer_bytes_ + n * share * heads * dims * kActivationBytes;
      add(layers, 2 * heads * dims * pairs * share, bytes, std::max(1.0, pairs / n / kAttentionBlock), eff_peak);
    };
    // MLA prefill runs unabsorbed, with per-head K and V; a tile of queries shares its keys, so a
    // chunk reads its context once (a window's keys: the window's).
    const double dims = static_cast<double>(m.head_dim + m.v_head_dim());
    if (!m.is_sparse_attention()) {
      prefill(full_layers, heads_gpu, dims, tokens, s.prefill_pair_tokens, s.prefill_context_tokens);
      prefill(capped_layers_, heads_gpu, dims, tokens, s.prefill_attended_pairs, s.prefill_attended_context);
    } else if (m.is_mla() && config_.engine.sparse_prefill_latent) {
      // The engine's sparse kernel attends in the latent form with its head tile's padding; each
      // query's top-k differ, so every (query, key) pair gathers its latent row (once for all heads).
      // Chunks whose context is within the engine's dense limit run dense MHA (within top-k, the
      // capped pairs are all of their pairs).
      const double heads = std::max<double>(heads_gpu, config_.engine.sparse_prefill_min_heads);
      const double sparse_pairs = s.prefill_attended_pairs - s.short_prefill_pairs;
      const double short_tokens = static_cast<double>(s.short_prefill_tokens);
      prefill(m.layers, heads, latent_dims, tokens - short_tokens, sparse_pairs, sparse_pairs);
      prefill(m.layers, heads_gpu, dims, short_tokens, s.short_prefill_pairs, s.short_prefill_context);
    } else {
      // Otherwise the top-k is applied as a mask on dense attention (the V3.2 report's "masked MHA
      // mode" for short prefill): every causal pair is computed.
      prefill(m.layers, heads_gpu, dims, tokens, s.prefill_pair_tokens, s.prefill_context_tokens);
    }
    if (m.is_sparse_attention())
      add(m.layers, 2 * index_dims * s.prefill_pair_tokens * share,
          s.prefill_context_tokens * share * m.indexer_key_bytes(),
          std::max(1.0, s.prefill_pair_tokens / tokens / kAttentionBlock), index_peak);
  }
}

StepCost StepCostModel::cost(const StepShape& s) {
  StepCost r;
  const long long tokens = s.decode_query_tokens + s.prefill_tokens;
  // With dp attention ranks, each rank decodes its own sequences (an even share) and the new
  // prompts are dealt round-robin, longest first (TensorRT-LLM tech blog 10, "ADP Balance
  // Strategy": the baseline scheduler); the rank that gets the largest chunk still runs its decodes,
  // and every rank waits for it at the MoE all-to-all.
  const long long dp = par_.dp;
  const long long rank_prefill =
      std::max((s.prefill_tokens + dp - 1) / dp, std::min(s.prefill_tokens, s.largest_item_tokens));
  const long long rank_tokens =
      std::min(tokens, std::max((s.decode_query_tokens + dp - 1) / dp + rank_prefill, s.largest_item_tokens));
  r.by_category = token_part(tokens, rank_tokens);
  attention(s, r.by_category);
  // LM head (16-bit weights, vocabulary split over tp) and sampling over the logits.
  if (s.logits_tokens > 0) {
    const double vocab_gpu = static_cast<double>(model_.vocab) / par_.tp;
    const double rows = std::ceil(static_cast<double>(s.logits_tokens) / par_.dp);  // spread over the ranks
    const Gemm g = lm_head(rows);
    r.by_category[static_cast<size_t>(g.memory_bound ? StepCategory::WeightRead : StepCategory::GemmCompute)] +=
        g.seconds;
    r.by_category[static_cast<size_t>(StepCategory::Elementwise)] +=
        rows * vocab_gpu * 4 * 2 / hbm_Bps_ + 2 * kernel_s_;
  }
  // Speculative decoding: k draft passes over the decoding sequences before the verification.
  const SpeculativeConfig& spec = config_.speculative;
  if (spec.draft_tokens > 0 && s.decode_seqs > 0) {
    const CategorySeconds& d = token_part(s.decode_seqs, (s.decode_seqs + par_.dp - 1) / par_.dp);
    const double target_s = std::accumulate(d.begin(), d.end(), 0.0);
    double draft_s = spec.draft_cost_ratio * target_s;
    if (spec.draft_cost_ratio <= 0) {  // MTP / EAGLE: one layer of the target and the LM head
      // A module kept at another format is timed as a layer of the model at that format.
      double layer_s = target_s;
      if (draft_model_) {
        const CategorySeconds& dd = draft_model_->token_part(s.decode_seqs, (s.decode_seqs + par_.dp - 1) / par_.dp);
        layer_s = std::accumulate(dd.begin(), dd.end(), 0.0);
      }
      const double rows = std::ceil(static_cast<double>(s.decode_seqs) / par_.dp);
      draft_s = layer_s / model_.layers + lm_head(rows).seconds;
    }
    r.by_category[static_cast<size_t>(StepCategory::SpeculativeDraft)] += spec.draft_tokens * draft_s;
  }
  r.gpu_seconds = std::accumulate(r.by_category.begin(), r.by_category.end(), 0.0);
  const EngineProfile& e = config_.engine;
  // Each attention-DP rank runs its own executor loop over its own share of the sequences.
  const long long rank_seqs = (s.decode_seqs + s.prefill_seqs + par_.dp - 1) / par_.dp;
  const double host_s = (config_.cuda_graphs ? e.step_overhead_cuda_graph_s : e.step_overhead_s) +
                        e.per_sequence_overhead_s * static_cast<double>(rank_seqs);
  // One executor loop per rank serves the pp micro-batches in flight in turn, so a micro-batch
  // comes round again no sooner than pp host steps; an overlapping engine hides its host work
  // behind the GPU pass, a serial one adds it.
  const double pass_s = r.gpu_seconds + (e.host_overlapped ? 0.0 : host_s);
  const double exposed_host_s = std::max(pass_s, par_.pp * host_s) - r.gpu_seconds;
  r.by_category[static_cast<size_t>(StepCategory::Host)] += exposed_host_s;
  r.seconds = r.gpu_seconds + exposed_host_s;
  return r;
}

}  // namespace stacksim::serving
