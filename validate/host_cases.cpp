#include "validate/host_cases.hpp"

#include <stdexcept>

#include "models/collectives/collective.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/host/host.hpp"
#include "validate/training_cases.hpp"

namespace stacksim::analysis {

namespace {

// The PyTorch DataLoader run's CPU usage (percent of the node's logical CPUs) and step time of
// another case of the same job and source: the loader's CPU-seconds per sample.
double sibling_cpu_seconds_per_sample(const YAML::Node& c, const std::vector<YAML::Node>& all, int logical_cpus,
                                      std::string& sibling_id) {
  const std::string id = get<std::string>(c, "id");
  for (const YAML::Node& s : all) {
    if (!has(s, "id") || get<std::string>(s, "id") == id || !has(s, "kind") ||
        get<std::string>(s, "kind") != "dataloader")
      continue;
    if (!has(s, "source") || s["source"]["key"].as<std::string>() != c["source"]["key"].as<std::string>()) continue;
    if (s["op"]["workload"].as<std::string>() != c["op"]["workload"].as<std::string>()) continue;
    const YAML::Node other = s["measured"]["other"];
    if (!has(other, "cpu_usage_pct_pytorch_dataloader") || !has(s["measured"], "step_time_s")) continue;
    sibling_id = get<std::string>(s, "id");
    const double busy_cpus = get<double>(other, "cpu_usage_pct_pytorch_dataloader") / 100 * logical_cpus;
    return busy_cpus * get<double>(s["measured"], "step_time_s") / get<double>(s["op"], "global_batch");
  }
  throw std::runtime_error("no other run of the same job publishes the loader's CPU usage and step time");
}

// One node of the case GPU's node type (with `gpus` GPUs in use when > 0), from the catalogue.
topo::ClusterConfig one_node(const YAML::Node& c, int gpus) {
  YAML::Node cluster;
  cluster["node"] = node_type_for_gpu(get<std::string>(c["hardware"], "gpu"));
  cluster["nodes"] = 1;
  if (gpus > 0) cluster["gpus_per_node"] = gpus;
  return topo::parse_cluster_config(config::Node(cluster, get<std::string>(c, "id"), "cluster"), hw::bundled_nodes());
}

// How many directions a peer copy's published figure counts: 2 when the case's text says
// bidirectional, 1 when it says one way. Unstated: 2 when the figure is above what one direction of
// the pair's route carries at its line rate (a one-way copy cannot exceed it: the figure counts
// both directions, as nvbandwidth's bidirectional tests do, and the default says so); else refused
// (the two readings differ by 2x).
int peer_copy_directions(const YAML::Node& c, const std::string& op, double one_direction_line_Bps, CaseOutcome& out) {
  const std::string notes = lowercase(notes_of(c));
  if (notes.find("unidirectional") != std::string::npos || notes.find("one way") != std::string::npos) return 1;
  if (notes.find("bidirectional") != std::string::npos) return 2;
  if (has(c["measured"], "bandwidth_GBps") &&
      get<double>(c["measured"], "bandwidth_GBps") * 1e9 > one_direction_line_Bps) {
    out.defaults.push_back("directions: both (unstated; the figure is above one direction's line rate)");
    return 2;
  }
  throw std::runtime_error("peer copy (" + op +
                           "): the published figure's direction count (one way or both) is not "
                           "stated, the figure is within one direction's line rate, and the two differ by 2x");
}

// A GPU-to-GPU copy by SM loads over the node's GPU links: each direction at the per-GPU link rate
// times the fraction SM-driven NVLink traffic reaches (NCCL's Simple protocol efficiency of that
// link generation, models/collectives/tuning/intra_node.yaml), times the directions counted.
// Without NVLink (PCIe servers), over the PCIe route at the pinned copy ratio.
void predict_peer_copy(const YAML::Node& c, const std::string& op, CaseOutcome& out) {
  const topo::ClusterConfig cc = one_node(c, 0);
  if (cc.node.intra_bandwidth_Bps <= 0) {
    // No NVLink: the copy engine's peer copy over the PCIe route between the first two GPUs (their
    // switch, or the CPUs between two switches), at the pinned copy ratio.
    const topo::Cluster cluster = topo::build_cluster(cc);
    const double route_Bps = cluster.gpu_route(0, 1).bottleneck_Bps;
    const int directions = peer_copy_directions(c, op, route_Bps, out);
    out.defaults.push_back(std::string(directions == 2 ? "both directions at once" : "one direction") +
                           " over PCIe (no NVLink) at the pinned copy ratio");
    out.predicted = directions * route_Bps * kPinnedCopyEfficiency / 1e9;
    return;
  }
  const coll::CommTuning tuning = coll::tuning_for(cc.node, cc.nic);
  double efficiency = 0;
  for (const coll::Protocol& p : tuning.protocols)
    if (p.name == "Simple") efficiency = p.efficiency;
  if (efficiency <= 0) throw std::runtime_error("no Simple protocol tuning for " + cc.node.intra_generation);
  // Direct links (a mesh, bridged pairs) give a pair of GPUs only the link between them.
  const double pair_Bps = cc.node.direct_links() ? cc.node.intra_bandwidth_Bps / (cc.node.nvlink_group_size - 1)
                                                 : cc.node.intra_bandwidth_Bps;
  const int directions = peer_copy_directions(c, op, pair_Bps, out);
  out.defaults.push_back(std::string(directions == 2 ? "both directions at once" : "one direction") +
                         " at the NVLink rate x NCCL Simple's efficiency of " + cc.node.intra_generation);
  if (cc.node.direct_links()) out.defaults.push_back("the one direct link between the pair of GPUs");
  out.predicted = directions * pair_Bps * efficiency / 1e9;
}

// Loader workers per GPU when a case states none: StreamPETR's published training configs
// (workers_per_gpu=4), the usual mmdetection3d setting.
constexpr int kDefaultLoaderWorkersPerGpu = 4;

}  // namespace

// A CPU-bound PyTorch DataLoader feeding the GPU step, on the engine host pipeline:
//   GPU step        the DALI run of the same job and GPU count (its loader decodes on the GPU and
//                   keeps 1.5-5.4 % of the CPUs busy, so its step is the GPU side);
//   CPU per sample  the other GPU count's PyTorch run: CPU usage x logical CPUs x step / samples
//                   (leave-one-out: a case's own step time never enters its prediction);
//   workers         the policy above; the node's cores and PCIe from the catalogue.
void predict_dataloader_case(const YAML::Node& c, const std::vector<YAML::Node>& all, CaseOutcome& out) {
  out.metric = "step_time_s";
  const YAML::Node meas = c["measured"], op = c["op"];
  if (!has(meas, "step_time_s")) throw std::runtime_error("the case publishes no step time");
  out.measured = get<double>(meas, "step_time_s");
  if (!has(meas["other"], "step_time_ms_dali"))
    throw std::runtime_error("the case publishes no GPU-side (DALI) step time of the same job");
  const double gpu_step_s = get<double>(meas["other"], "step_time_ms_dali") / 1000;
  const int gpus = positive<int>(op, "gpus");

  const topo::ClusterConfig cc = one_node(c, gpus);  // loaders run for the GPUs in use only
  const hw::NodeSpec& node = cc.node;
  const int logical_cpus = node.cpu_sockets * node.cores_per_socket * node.threads_per_core;

  HostConfig h;
  h.enabled = true;
  std::string sibling;
  h.cpu_seconds_per_sample = sibling_cpu_seconds_per_sample(c, all, logical_cpus, sibling);
  h.loader_workers = kDefaultLoaderWorkersPerGpu;
  out.defaults.push_back("loader workers per GPU: " + std::to_string(h.loader_workers) + " (StreamPETR configs)");
  out.defaults.push_back("GPU step: the DALI run's " + std::to_string(gpu_step_s) + " s");
  out.defaults.push_back("CPU s per sample from " + sibling + ": " + std::to_string(h.cpu_seconds_per_sample));
  out.predicted = simulate_host_pipeline(h, cc, get<double>(op, "batch_per_gpu"), gpu_step_s).step_s;
}

void predict_host_copy_case(const YAML::Node& c, CaseOutcome& out) {
  const std::string op = has(c["op"], "name") ? get<std::string>(c["op"], "name") : "";
  out.metric = "bandwidth_GBps";
  if (!has(c["measured"], "bandwidth_GBps")) throw std::runtime_error("the case publishes no bandwidth");
  out.measured = get<double>(c["measured"], "bandwidth_GBps");
  if (op.rfind("d2d", 0) == 0) {
    predict_peer_copy(c, op, out);
    return;
  }
  if (op != "h2d" && op != "d2h") throw std::runtime_error("unknown copy " + op + " (h2d, d2h or d2d_copy)");
  const topo::ClusterConfig cc = one_node(c, 0);
  out.defaults.push_back("pinned host buffers (nvbandwidth's copy-engine tests allocate them)");
  out.predicted = cc.node.pcie_bandwidth_Bps * kPinnedCopyEfficiency / 1e9;
}

}  // namespace stacksim::analysis
