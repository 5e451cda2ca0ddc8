#include "models/collectives/validate_collectives.hpp"

#include "models/collectives/collective.hpp"
#include "models/hardware/node_spec.hpp"
#include "topologies/builders.hpp"

namespace stacksim::coll {
namespace {

const hw::NodeCatalog& nodes() {
  static const hw::NodeCatalog c = hw::NodeCatalog::load_dir(hw::default_hardware_dir());
  return c;
}

std::string node_for(const std::string& gpu) {
  if (gpu.rfind("A100-SXM4-40GB", 0) == 0) return "dgx-a100-40gb";
  if (gpu.rfind("A100", 0) == 0) return "dgx-a100";
  if (gpu.rfind("H100", 0) == 0) return "dgx-h100";
  if (gpu.rfind("H200", 0) == 0) return "dgx-h200";
  if (gpu.rfind("B200", 0) == 0) return "dgx-b200";
  if (gpu.rfind("V100", 0) == 0) return "dgx-2-v100";
  return "";
}

bool has(const YAML::Node& n, const char* k) { return n && n[k] && !n[k].IsNull(); }

}  // namespace

CollectiveCaseResult predict_collective_case(const YAML::Node& c) {
  CollectiveCaseResult r;
  const YAML::Node hw = c["hardware"], op = c["op"], m = c["measured"];
  const std::string gpu = hw["gpu"].as<std::string>();
  const std::string node = node_for(gpu);
  if (node.empty()) { r.error = "no node type for GPU " + gpu; return r; }
  const std::string name = op["name"].as<std::string>();
  CollectiveOp kind;
  if (name == "all_reduce") kind = CollectiveOp::AllReduce;
  else if (name == "all_to_all") kind = CollectiveOp::AllToAll;
  else if (name == "all_gather") kind = CollectiveOp::AllGather;
  else if (name == "reduce_scatter") kind = CollectiveOp::ReduceScatter;
  else { r.error = "unsupported collective " + name; return r; }

  int gpus = has(op, "gpus") ? op["gpus"].as<int>() : has(hw, "num_gpus") ? hw["num_gpus"].as<int>() : 0;
  const int per_node = has(hw, "gpus_per_node") ? hw["gpus_per_node"].as<int>() : 8;
  if (!has(hw, "gpus_per_node")) r.defaults.push_back("hardware.gpus_per_node: the node type's (8)");
  double bytes = has(op, "bytes") ? op["bytes"].as<double>() : 0;
  if (bytes <= 0) {
    bytes = 8.0 * (1ull << 30);
    r.defaults.push_back("op.bytes: 8 GiB (a peak-bandwidth statement)");
  }
  // Per-NIC statements: two nodes, the all-reduce bus bandwidth divided by the NICs per node.
  bool per_nic = false;
  if (has(m, "busbw_GBps")) {
    r.metric = "busbw_GBps";
    r.measured = m["busbw_GBps"].as<double>();
  } else if (has(m, "other") && has(m["other"], "expected_per_nic_GBps_ndr400_low")) {
    r.metric = "per_nic_GBps";
    r.measured = 0.5 * (m["other"]["expected_per_nic_GBps_ndr400_low"].as<double>() +
                        m["other"]["expected_per_nic_GBps_ndr400_high"].as<double>());
    per_nic = true;
    kind = CollectiveOp::AllReduce;
    gpus = 2 * per_node;
    r.defaults.push_back("per-NIC statement: a 2-node ring all-reduce, bus bandwidth / NICs per node");
  } else {
    r.error = "the case publishes no bus bandwidth";
    return r;
  }
  if (gpus <= 0) {
    gpus = 2 * per_node;
    r.defaults.push_back("op.gpus: 2 nodes (multi-node statement without a GPU count)");
  }
  YAML::Node cl;
  cl["node"] = node;
  cl["gpu"] = gpu;
  cl["gpus_per_node"] = std::min(per_node, gpus);
  cl["nodes"] = (gpus + per_node - 1) / per_node;
  const YAML::Node inter = hw["inter_node"];
  if (has(inter, "nic_gbps")) {
    const int gbps = inter["nic_gbps"].as<int>();
    const bool roce = has(inter, "fabric") && inter["fabric"].as<std::string>() != "infiniband";
    cl["nic"] = roce ? (gbps >= 400 ? "roce-400" : "roce-200")
                     : gbps >= 400 ? "cx7-ndr400" : gbps >= 200 ? "cx6-hdr200" : "cx5-edr100";
  }
  if (has(inter, "nics_per_node")) cl["nics_per_node"] = inter["nics_per_node"].as<int>();
  const topo::ClusterConfig cfg = topo::parse_cluster_config(config::Node(cl, "case", "cluster"), nodes());
  const topo::Cluster cluster = topo::build_cluster(cfg);
  const CommTuning tuning = tuning_for(cfg.node, cfg.nic);
  Collective col;
  col.op = kind;
  col.bytes = bytes;
  for (int i = 0; i < gpus; ++i) col.ranks.push_back(i);
  if (per_nic || cfg.nodes > 1) col.algorithm = Algorithm::Ring;  // maintainers measure the network with Ring
  const CollectiveTiming t = time_collective(cluster, tuning, col);
  r.predicted = t.busbw_Bps / 1e9;
  // A multi-node ring puts one channel on each NIC: each carries busbw / (NICs per node).
  if (per_nic) r.predicted = t.busbw_Bps / 1e9 / cfg.node.nics;
  return r;
}

}  // namespace stacksim::coll
