// The time of one engine step of one serving instance, operator by operator on the roofline/HBM
// model (the GPU's calibrated GEMM efficiency, attention efficiency and achievable HBM rate, as
// the training replay uses them), per GPU of the instance:
//   GEMMs        weights read once per step at the weight format, FLOPs at the activation format's
//                tensor rate times the share the best tiling of the shape reaches (the training
//                GEMM model's tile/wave quantisation, compute::GpuModel::gemm_compute_fraction);
//                time = sqrt(compute^2 + memory^2) + the GPU's per-kernel floor (the GEMM model's
//                quadrature rule for imperfect overlap near the ridge)
//   attention    decode: every sequence's KV read at the KV format (grows with context); prefill:
//                causal FLOPs of each chunk against its prior context; MLA reads the latent cache
//   element-wise fused residual-add + norm (x2), rotary, activation: bytes over HBM
//   MoE          router; the busiest EP rank (expert_balance.hpp: expert popularity and sampling,
//                the expected max over ep ranks) sets the step: its rows through its grouped
//                GEMM, the distinct experts they touch (1 - (1 - 1/g)^rows of its g) read once
//   collectives  TP all-reduce (2 per layer), EP dispatch + combine all-to-all, PP send/recv:
//                the collectives model's analytical time on the cluster (NCCL's tuner), memoised
//   host         the engine profile's per-step overhead (CUDA graphs or eager) + per sequence;
//                overlapped engines take max(GPU, host), others GPU + host
// With pp stages a sequence passes every stage in turn, so a step's latency is the sum over the
// stages (the pipeline's throughput comes from pp virtual engines: simulate.cpp). The part that
// depends only on the step's token count is memoised by that count; attention terms are linear in
// a few sums and computed directly, so a step costs O(1) after warm-up.
#pragma once
#include <array>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/collectives/collective.hpp"
#include "models/compute/gpu_model.hpp"
#include "models/serving/serving.hpp"

namespace stacksim::serving {

enum class StepCategory {
  WeightRead,
  KvRead,
  GemmCompute,
  AttentionCompute,
  Elementwise,
  TpComm,
  EpComm,
  PpComm,
  Host,
  SpeculativeDraft,
  PdTransfer,
  Count
};
constexpr size_t kStepCategories = static_cast<size_t>(StepCategory::Count);
const char* step_category_name(StepCategory c);
using CategorySeconds = std::array<double, kStepCategories>;

// What one step computes (sums over the instance's sequences; per instance, not per GPU).
struct StepShape {
  long long decode_seqs = 0;
  long long decode_query_tokens = 0;  // decode_seqs x (1 + draft tokens)
  double decode_context_tokens = 0;   // sum of the decoding sequences' KV lengths
  long long prefill_seqs = 0;
  long long prefill_tokens = 0;       // prompt tokens computed this step
  double prefill_pair_tokens = 0;     // sum over chunks of chunk x (prior + chunk / 2): causal score pairs
  double prefill_context_tokens = 0;  // sum over chunks of (prior + chunk): KV read by the chunks
  long long logits_tokens = 0;        // tokens that go through the LM head (decodes, last chunks)
  // With dp attention ranks: the most tokens (the longest prompt chunk) one sequence brings, since
  // a sequence lives on one rank; the busiest rank runs max(ceil(tokens / dp), this).
  long long largest_item_tokens = 0;
  double largest_prefill_pairs = 0;  // the largest chunk's share of prefill_pair_tokens
  // The same three sums with each query's keys capped at StepCostModel::attended_keys_cap() (a
  // sliding window, or sparse attention's top-k); equal to them when the model has no cap.
  double decode_attended_tokens = 0;
  double prefill_attended_pairs = 0;
  double prefill_attended_context = 0;
  // The part of the prefill sums from chunks whose whole context is within the engine's
  // sparse_prefill_dense_max_tokens (run as dense MHA by an engine with a sparse kernel).
  long long short_prefill_tokens = 0;
  double short_prefill_pairs = 0;
  double short_prefill_context = 0;
};

// Score pairs of a prompt chunk of `chunk` tokens after `prior` cached ones, each query attending
// at most `cap` keys (0 = all earlier ones), and the keys the chunk reads.
double capped_pairs(double prior, double chunk, double cap);
double capped_context(double prior, double chunk, double cap);

struct StepCost {
  double seconds = 0;
  double gpu_seconds = 0;
  CategorySeconds by_category{};
};

class StepCostModel {
 public:
  // `first_rank`: the instance's first GPU in `cluster` (its GPUs are consecutive, tp fastest).
  StepCostModel(const ServingConfig& config, const Parallelism& parallel, const workload::ModelConfig& model,
                const hw::GpuSpec& gpu, std::shared_ptr<const topo::Cluster> cluster, const coll::CommTuning& tuning,
                int first_rank);
  StepCost cost(const StepShape& shape);
  // Bytes of KV cache one token takes on each GPU (its layers, its share of the KV heads).
  double kv_bytes_per_token_per_gpu() const {
    return (kv_token_layer_bytes_ + model_.indexer_key_bytes()) * layers_per_stage_;
  }
  // Keys one query attends at most in the model's capped layers (0 = none capped).
  double attended_keys_cap() const { return keys_cap_; }
  // Estimated seconds of a point-to-point copy of `bytes` from this instance's GPU to `dst_rank`.
  double transfer_seconds(int dst_rank, double bytes) const;

 private:
  struct Gemm {
    double seconds;
    bool memory_bound;
  };
  Gemm gemm(double m, double n, double k, double weight_bytes_per_elem) const;
  // The same at another format's tensor rate and activation width (16-bit attention projections).
  Gemm gemm_at(double m, double n, double k, double weight_bytes_per_elem, double flops_per_s, double a_bytes) const;
  Gemm lm_head(double rows);
  const CategorySeconds& token_part(long long tokens, long long rank_tokens);
  double collective_s(coll::CollectiveOp op, const std::vector<int>& ranks, double bytes,
                      const coll::MoeDispatch& dispatch = {});
  void attention(const StepShape& s, CategorySeconds& out) const;

  ServingConfig config_;
  Parallelism par_;
  workload::ModelConfig model_;
  hw::GpuSpec gpu_;
  compute::GpuModel gpu_model_;  // the training replay's shape-aware GEMM tiling
  std::shared_ptr<const topo::Cluster> cluster_;
  coll::CommTuning tuning_;
  int first_rank_ = 0;
  std::vector<int> tp_ranks_, ep_ranks_;
  int layers_per_stage_ = 0, moe_layers_ = 0, dense_layers_ = 0;
  double tensor_flops_ = 0, f16_flops_ = 0, hbm_Bps_ = 0, kernel_s_ = 0;
  double w_bytes_ = 2, a_bytes_ = 2, kv_bytes_ = 2;
  double attn_w_bytes_ = 2, attn_a_bytes_ = 2, attn_flops_ = 0;  // attention projections' format
  std::unique_ptr<StepCostModel> draft_model_;                   // an MTP module kept at another format
  double kv_token_layer_bytes_ = 0;
  double keys_cap_ = 0;
  double capped_layers_ = 0;
  std::unordered_map<uint64_t, CategorySeconds> memo_;  // by (rank tokens, tokens)
  std::map<std::tuple<int, double, size_t>, double> coll_memo_;
  std::unordered_map<long long, Gemm> lm_head_memo_;  // by row count
};

}  // namespace stacksim::serving
