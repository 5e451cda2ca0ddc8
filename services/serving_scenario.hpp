// Serving scenarios: a `serving:` section instead of `parallelism:` (same cluster:, hardware:,
// model:, prices:), with the request stream in `workload:` and latency limits in `slo:`.
//
//   serving:
//     engine: vllm                  # models/serving/engines (stacksim catalog engines)
//     engine_version: "0.8"        # optional: the newest profile entry not newer than it
//     weights_dtype: fp8            # bf16 fp16 fp8 int8 fp4 int4; activations_dtype, kv_cache_dtype
//     tp: 8                         # pp, ep, dp (dp = data-parallel attention inside the instance)
//     replicas: 1                   # instances behind the load balancer
//     max_num_seqs: 256             # scheduler limits (engine defaults when left out)
//     max_num_batched_tokens: 8192
//     kv_block_size: 16
//     gpu_memory_utilization: 0.9   # HBM share the engine may use; kv_free_memory_fraction
//     chunked_prefill: true
//     prefix_cache_hit_rate: 0.3    # share of each prompt found in the prefix cache
//     cuda_graphs: true
//     speculative: {draft_tokens: 3, acceptance_rate: 0.7}
//     disaggregated: {prefill: {replicas: 2, tp: 4}, decode: {replicas: 1, tp: 8}}
//   workload:
//     mode: poisson                 # offline concurrency poisson gamma fixed_batch trace
//     rate_per_s: 4                 # poisson/gamma; concurrency: N; batch_size: N; gamma_shape
//     requests: 2000
//     seed: 0
//     input: 1024                   # or {dist: uniform|normal|fixed|histogram, ...}
//     output: {dist: normal, mean: 256, stdev: 64}
//     dataset: sharegpt             # lengths from models/workload/serving_datasets.yaml
//     trace: traces/day1.csv        # mode: trace (CSV or JSONL: arrival_s, input_tokens, output_tokens)
//   slo:
//     ttft_ms: {p99: 2000}          # or a bare number (p99); tpot_ms, e2e_latency_s
//     tpot_ms: {p99: 100}
#pragma once
#include <string>
#include <vector>

#include "config/yaml.hpp"
#include "models/serving/serving.hpp"
#include "models/workload/model_config.hpp"
#include "services/prices.hpp"
#include "topologies/builders.hpp"

namespace stacksim::analysis {

struct ServingSetup {
  std::string name;
  std::string origin;  // file (or case) it came from, for messages
  topo::ClusterConfig cluster;
  std::string gpu;  // GPU catalogue name
  workload::ModelConfig model;
  serving::ServingConfig config;
  serving::Workload workload;
  serving::Slo slo;
  Prices prices;
  std::string dataset;  // the dataset the lengths came from ("" = given)
  // Multipliers on hardware rates (compare --elasticity): gpu_flops, hbm, nvlink, network.
  double scale_gpu_flops = 1, scale_hbm = 1, scale_nvlink = 1, scale_network = 1, scale_host = 1;
  std::vector<std::string> notes;  // defaults applied
  int gpus_used() const;           // GPUs of every instance (both pools when disaggregated)
};

// The keys a serving scenario may have at the top level besides the shared ones.
inline const char* const kServingTopKeys[] = {"serving", "workload", "slo"};

// Parses the serving part of a scenario (`top` is the whole file; `cluster` already parsed).
ServingSetup parse_serving_scenario(const config::Node& top, const topo::ClusterConfig& cluster,
                                    const std::string& base_dir);

// The hardware a setup runs on, its scales applied.
serving::ServingHardware serving_hardware(const ServingSetup& s);

}  // namespace stacksim::analysis
