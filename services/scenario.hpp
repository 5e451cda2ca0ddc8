// Scenarios: the YAML a user writes (or a validation case becomes), parsed and checked.
//
//   name: llama3-70b-64xh100
//   hardware: {gpu: H100-SXM5-80GB}        # optional: the GPU in every node (what-if upgrades)
//   cluster: {node: dgx-h100, nodes: 8, fabric: {topology: fat_tree, oversubscription: 1}}
//   model: {...} or {hf_config: path/config.json}
//   parallelism: {tp: 4, pp: 4, dp: 4, micro_batch: 1, global_batch: 128, ...}
//   prices: {gpu_hour_usd: 2.5}           # optional: cost per million tokens (prices.hpp)
//   software: {framework: deepspeed, version: "0.14", year: 2024}  # optional (stack_profile.hpp)
// or, instead of parallelism, a serving deployment (serving:, workload:, slo:; serving_scenario.hpp),
// or, instead of model/parallelism, a collective benchmark:
//   collective: {op: all_reduce, gpus: 8, sizes: {min: 1 KiB, max: 8 GiB, factor: 2}, algorithm: auto}
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "models/collectives/collective.hpp"
#include "models/host/host.hpp"
#include "models/host/resilience.hpp"
#include "models/workload/model_config.hpp"
#include "models/workload/parallel_plan.hpp"
#include "services/prices.hpp"
#include "services/serving_scenario.hpp"
#include "services/stack_profile.hpp"
#include "topologies/builders.hpp"

namespace stacksim::analysis {

enum class WorkloadKind { Training, CollectiveBenchmark, Serving };

// Multipliers on hardware rates, for elasticity studies ("what if only X were 2x faster").
struct ResourceScales {
  double gpu_flops = 1, hbm = 1, nvlink = 1, network = 1, pcie = 1, cpu_loader = 1, storage = 1;
  double host_memory = 1;  // the host CPUs' DRAM bandwidth (an offloaded optimizer's step)
  double host_launch = 1;  // kernel launches per second of the training processes' host threads
};

struct TrainingSetup {
  std::string name;
  std::string origin;  // file (or case) it came from, for messages
  topo::ClusterConfig cluster;
  std::string gpu;  // GPU catalogue name
  workload::ModelConfig model;
  workload::ParallelPlan plan;
  bool recompute_auto = false;  // choose the least recomputation that fits in memory
  ResourceScales scales;
  HostConfig host;                 // data loader and storage (host: section)
  CheckpointConfig checkpoint;     // checkpoint: section
  FailureConfig failures;          // failures: section
  Prices prices;                   // prices: section (cost per million tokens)
  SoftwareStack software;          // software: section (stack_profile.hpp); unset = the reference
  std::vector<std::string> notes;  // defaults applied
};

struct CollectiveBenchSetup {
  std::string name;
  topo::ClusterConfig cluster;
  coll::CollectiveOp op = coll::CollectiveOp::AllReduce;
  coll::Algorithm algorithm = coll::Algorithm::Auto;
  std::vector<int> ranks;
  std::vector<double> sizes_bytes;
};

struct Scenario {
  std::string name;
  std::string file;
  WorkloadKind kind = WorkloadKind::Training;
  TrainingSetup training;
  CollectiveBenchSetup bench;
  ServingSetup serving;  // a serving: section (serving_scenario.hpp)
  YAML::Node yaml;       // after overrides
};

// Loads a scenario file and applies --set overrides (KEY=VALUE, dotted keys).
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);
// One --set override (config::apply_override) with the scenario rule that setting model.preset or
// model.hf_config swaps the model: the file's own architecture keys give way, its training choices
// (kScenarioModelRunKeys) stay. Without it a swap would keep the file's layers, hidden, ... and
// take only the new model's other keys.
void apply_scenario_override(YAML::Node& root, const std::string& assignment, const std::string& origin);
inline const char* const kScenarioModelRunKeys[] = {"seq_len", "attention", "mtp_layers"};
// From an in-memory tree; `origin` names it in error messages; relative paths resolve against
// `base_dir`. `check_plan` false: the plan is parsed but not checked against the model and the
// cluster (plan search replaces it; its other keys are what every searched plan keeps).
Scenario scenario_from_yaml(YAML::Node root, const std::string& origin, const std::string& base_dir = ".",
                            bool check_plan = true);

}  // namespace stacksim::analysis
