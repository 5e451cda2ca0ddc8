// LLM inference serving, request by request (issue 35): the public API of stacksim_serving.
//
// A deployment (ServingConfig: engine profile, number formats, parallelism, scheduler limits, KV
// cache, speculative decoding, disaggregated prefill/decode) serves a request stream (Workload) on
// a GPU and cluster (ServingHardware). The simulator runs iteration-level continuous batching as
// vLLM/SGLang/TensorRT-LLM do: each engine step is one mixed batch of prefill chunks and decodes,
// timed per operator by the roofline/HBM GPU model (step_cost.hpp), with a paged KV-cache
// allocator (kv_cache.hpp) that admits requests when blocks are free and preempts (recompute) when
// decodes run out. Request-level metrics stream into bounded-memory estimators (metrics.hpp).
// Deterministic bit for bit: no threads, no wall clock, counter-based random draws.
//
// Errors in the inputs (weights that do not fit, a KV cache of zero blocks, bad workload fields)
// are config::InputError with the key (serving.<key>) and the fix: the CLI's exit 2.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/gpu_spec.hpp"
#include "models/serving/dtype.hpp"
#include "models/serving/engine_profile.hpp"
#include "models/serving/request_workload.hpp"
#include "models/workload/model_config.hpp"
#include "topologies/builders.hpp"

namespace stacksim::serving {

// GPUs of one model instance: tp x pp x dp of them. dp > 1 is data-parallel attention inside the
// instance (SGLang's --enable-dp-attention): each dp rank batches its own sequences through
// attention and the dense layers, and the MoE layers' experts are split over ep ranks of the
// tp x dp GPUs of a stage. ep must divide tp x dp (1 = experts split over tp like dense layers).
struct Parallelism {
  int tp = 1, pp = 1, ep = 1, dp = 1;
  int gpus() const { return tp * pp * dp; }
};

struct SpeculativeConfig {
  int draft_tokens = 0;        // k tokens proposed per step (0 = off)
  double acceptance_rate = 0;  // a: each drafted token accepted with probability a (given the previous)
  // Cost of one draft forward pass over the target's decode step at the same batch, for a separate
  // small draft model (its size ratio). 0 = an MTP module or EAGLE head: one transformer layer of
  // the target plus its LM head, timed by the same operator model.
  double draft_cost_ratio = 0;
  // Weight format of an MTP module (unset: the target's). NVIDIA's NVFP4 DeepSeek-R1 checkpoint
  // leaves the MTP layer unquantized (hf_quant_config.json exclude_modules "model.layers.61*").
  std::optional<Dtype> draft_weights_dtype;
  // Expected tokens emitted per sequence per step: (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023).
  double tokens_per_step() const;
};

// One pool of identical instances (a disaggregated deployment's prefill or decode side).
struct PoolConfig {
  int replicas = 1;
  Parallelism parallel;
};

struct DisaggregationConfig {
  bool enabled = false;
  PoolConfig prefill, decode;  // each instance's KV goes prefill -> decode over the cluster's links
};

struct ServingConfig {
  std::string origin;  // file or case the config came from, named in error messages
  EngineProfile engine;
  Dtype weights_dtype = Dtype::BF16;
  Dtype activations_dtype = Dtype::BF16;
  Dtype kv_dtype = Dtype::BF16;
  Parallelism parallel;  // per instance (aggregated serving)
  int replicas = 1;      // instances behind the load balancer (the validation set's dp)
  // Scheduler limits, per instance (per dp rank for max_num_seqs with dp attention).
  int max_num_seqs = 256;
  long long max_num_batched_tokens = 8192;
  int block_size_tokens = 16;
  // HBM share the engine may use (weights, activation workspace, KV cache): vLLM's
  // gpu_memory_utilization, SGLang's mem_fraction_static; of what remains after weights and
  // workspace, kv_free_memory_fraction goes to the KV cache (TensorRT-LLM's
  // kv_cache_free_gpu_mem_fraction; 1 for the others).
  double gpu_memory_utilization = 0.9;
  double kv_free_memory_fraction = 1.0;
  bool chunked_prefill = true;
  double prefix_cache_hit_rate = 0;  // share of each prompt found in the prefix cache (0..1)
  bool cuda_graphs = true;
  // Experts placed by measured load, hot ones replicated (DeepSeek's EPLB, TensorRT-LLM's
  // moe_config.load_balancer): the EP ranks' loads nearly even (expert_balance.hpp).
  bool expert_load_balancer = false;
  // Weight format of the attention projections (unset: weights_dtype): ModelOpt's DeepSeek FP4
  // recipe quantizes the MLPs and experts and leaves MLA at 16 bits.
  std::optional<Dtype> attention_weights_dtype;
  SpeculativeConfig speculative;
  DisaggregationConfig disaggregated;
};

// A config holding the engine's defaults (max_num_seqs, batched tokens, block size, memory
// fractions, chunked prefill) for the caller to override.
ServingConfig config_for_engine(const EngineProfile& engine);

struct ServingHardware {
  hw::GpuSpec gpu;              // scaled copies allowed (elasticity)
  topo::ClusterConfig cluster;  // must hold at least one instance (each pool's one instance when disaggregated)
};

// Per-metric latency limits. `stat` is mean, p50, p90, p95 or p99; limit 0 = no limit.
struct SloLimit {
  double limit = 0;
  std::string stat = "p99";
};
struct Slo {
  SloLimit ttft_ms, tpot_ms, e2e_latency_s;
  bool empty() const { return ttft_ms.limit <= 0 && tpot_ms.limit <= 0 && e2e_latency_s.limit <= 0; }
};

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0;
  double get(const std::string& stat) const;  // mean, p50, p90, p95, p99; std::invalid_argument otherwise
};

// Per-GPU memory of one instance (of the decode pool when disaggregated).
struct MemoryPlan {
  double hbm_bytes = 0;
  double weights_bytes = 0;          // per GPU, at the weight dtype (embeddings 16-bit)
  double workspace_bytes = 0;        // activations of the largest step + CUDA graph pools
  double kv_bytes = 0;               // given to the KV cache
  double kv_bytes_per_token = 0;     // per GPU: layers_on_gpu x kv_heads_on_gpu x head_dim x 2 x dtype
  long long kv_blocks = 0;           // per instance (per dp rank with dp attention)
  long long kv_capacity_tokens = 0;  // kv_blocks x block size
};

struct SimOptions {
  bool record_requests = false;  // keep every request's times (ServingResult::requests)
  bool record_steps = false;     // keep engine steps for a trace (bounded by max_recorded_steps)
  long long max_recorded_steps = 200000;
  double metrics_warmup_s = 0;  // requests arriving before this are left out of the metrics
};

struct RequestRecord {
  long long id = 0;
  int instance = 0;
  double arrival_s = 0, first_token_s = 0, finish_s = 0;
  long long input_tokens = 0, output_tokens = 0;
  int preemptions = 0;
};

struct StepRecord {
  int instance = 0;
  bool prefill_pool = false;  // disaggregated: a prefill instance's step
  double start_s = 0, seconds = 0;
  int decode_seqs = 0, prefill_seqs = 0;
  long long prefill_tokens = 0;
  double kv_utilization = 0;
};

struct ServingResult {
  Percentiles ttft_ms, tpot_ms, e2e_latency_s;
  Percentiles queueing_s;  // arrival to first scheduled
  double output_tokens_per_s = 0, total_tokens_per_s = 0, requests_per_s = 0;
  double goodput_requests_per_s =
      0;                  // completed requests meeting every limit of the Slo given (= requests_per_s without one)
  double duration_s = 0;  // first arrival to last completion
  long long completed_requests = 0, input_tokens = 0, output_tokens = 0;
  long long preemptions = 0;
  long long steps = 0;
  double mean_running_seqs = 0;                                    // decodes per step, time-weighted
  double kv_utilization_mean = 0, kv_utilization_max = 0;          // used blocks / blocks, time-weighted
  std::vector<std::pair<double, double>> kv_utilization_timeline;  // (time s, utilisation), <= 512 points
  MemoryPlan memory;
  int gpus = 0;
  // Engine-step time by category (summed over the steps of every instance, seconds): weight_read,
  // kv_read, gemm_compute, attention_compute, elementwise, tp_comm, ep_comm, pp_comm, host,
  // speculative_draft, pd_transfer; and its shares.
  std::map<std::string, double> step_seconds;
  std::string bottleneck;         // in plain words ("KV-cache reads from HBM", "KV capacity: preemption", ...)
  std::string bottleneck_detail;  // one sentence with the numbers behind it
  std::vector<std::string> notes;
  std::vector<RequestRecord> requests;   // when SimOptions::record_requests
  std::vector<StepRecord> step_records;  // when SimOptions::record_steps
};

// Runs the workload to completion. `slo` only feeds goodput.
ServingResult simulate_serving(const ServingConfig& config, const Workload& workload,
                               const workload::ModelConfig& model, const ServingHardware& hardware, const Slo& slo = {},
                               const SimOptions& options = {});

// Memory of one instance; config::InputError (serving.weights_dtype / tp / gpu_memory_utilization)
// when the weights and workspace do not fit or the KV cache gets zero blocks.
MemoryPlan plan_memory(const ServingConfig& config, const workload::ModelConfig& model, const hw::GpuSpec& gpu);

bool meets_slo(const ServingResult& r, const Slo& slo);

struct RateSearchResult {
  bool feasible = false;      // some rate meets the SLO
  double max_rate_per_s = 0;  // highest request rate found meeting it (within the tolerance)
  ServingResult at_max_rate;  // the run at that rate (throughput = what MLPerf Server reports)
  std::string verdict;        // plain words, e.g. why no rate meets it
  int evaluations = 0;
};
// Bisection on the arrival rate of `workload` (Poisson unless it is Gamma) for the highest rate
// whose run meets every limit of `slo`. config::InputError (serving.slo) when the SLO is empty.
RateSearchResult max_rate_under_slo(const ServingConfig& config, const Workload& workload,
                                    const workload::ModelConfig& model, const ServingHardware& hardware, const Slo& slo,
                                    const SimOptions& options = {}, double relative_tolerance = 0.02);

// Cost per million output tokens (or all tokens) at `gpu_hour_usd` per GPU of the deployment.
double usd_per_million_tokens(const ServingResult& r, double gpu_hour_usd, bool output_tokens_only = true);

}  // namespace stacksim::serving
