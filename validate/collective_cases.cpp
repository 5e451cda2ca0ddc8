// Collective validation cases: the global default policy is documented in the header.
#include "validate/collective_cases.hpp"
#include "validate/hardware_notes.hpp"

#include "config/cases_file.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "config/yaml.hpp"
#include "models/collectives/collective.hpp"
#include "models/collectives/plan.hpp"
#include "models/hardware/node_spec.hpp"
#include "topologies/builders.hpp"

namespace stacksim::coll {
namespace {

std::string node_for(const std::string& gpu) {
  try {
    return hw::node_type_for_gpu(gpu);
  } catch (const std::runtime_error&) {
    return "";
  }
}

using config::has;

}  // namespace

namespace {

// nccl-tests' operation names (all_reduce_perf, ...), underscored or run together; nullptr if none.
const CollectiveOp* collective_op_of(const std::string& name) {
  static const std::map<std::string, CollectiveOp> kOps = {{"all_reduce", CollectiveOp::AllReduce},
                                                           {"allreduce", CollectiveOp::AllReduce},
                                                           {"all_gather", CollectiveOp::AllGather},
                                                           {"allgather", CollectiveOp::AllGather},
                                                           {"reduce_scatter", CollectiveOp::ReduceScatter},
                                                           {"reducescatter", CollectiveOp::ReduceScatter},
                                                           {"all_to_all", CollectiveOp::AllToAll},
                                                           {"alltoall", CollectiveOp::AllToAll},
                                                           {"broadcast", CollectiveOp::Broadcast},
                                                           {"reduce", CollectiveOp::Broadcast},
                                                           {"sendrecv", CollectiveOp::SendRecv},
                                                           {"send_recv", CollectiveOp::SendRecv}};
  const auto known = kOps.find(name);
  return known == kOps.end() ? nullptr : &known->second;
}

// Where a case's collective runs: GPUs per node (a rack's, where the stated count is a tray's),
// the GPU count and message size, with the defaults taken for what the case leaves out.
struct CaseLayout {
  std::string node;
  int node_gpus = 0, per_node = 0, tray_gpus = 0, gpus = 0;
  double bytes = 0;
  bool partitions = false;  // the case describes NVLink partitions of a rack
  std::string described;    // system and notes, lower case
};

bool read_layout(const YAML::Node& c, const std::string& node, CaseLayout& l, CollectiveCaseResult& r) {
  const YAML::Node hw = c["hardware"], op = c["op"];
  l.node = node;
  l.node_gpus = hw::bundled_nodes().node(node).gpus_per_node;
  l.per_node = has(hw, "gpus_per_node") ? hw["gpus_per_node"].as<int>() : l.node_gpus;
  if (!has(hw, "gpus_per_node"))
    r.defaults.push_back("hardware.gpus_per_node: the node type's " + std::to_string(l.node_gpus));
  if (l.per_node < 1) {
    r.error = "hardware.gpus_per_node must be at least 1, got " + std::to_string(l.per_node);
    return false;
  }
  // As for training cases: on a rack-scale NVLink node (NVL72) fewer GPUs per node are a tray's,
  // unless the case describes NVLink partitions: then each is an NVLink domain of its own and the
  // partitions talk over the fabric.
  l.described = config::lowercase((has(hw, "system") ? hw["system"].as<std::string>() : "") + " " +
                                  (has(c, "notes") ? c["notes"].as<std::string>() : ""));
  l.partitions = l.described.find("nvl partition") != std::string::npos ||
                 l.described.find("nvlink partition") != std::string::npos;
  if (l.node_gpus > 16 && l.per_node < l.node_gpus && l.partitions) {
    r.defaults.push_back("hardware.gpus_per_node: " + std::to_string(l.per_node) +
                         " GPUs per NVLink partition (the case describes partitions: separate NVLink domains "
                         "joined over the fabric)");
  } else if (l.node_gpus > 16 && l.per_node < l.node_gpus) {
    r.defaults.push_back("hardware.gpus_per_node: " + std::to_string(l.per_node) + " GPUs per tray, in one " +
                         std::to_string(l.node_gpus) + "-GPU NVLink rack");
    l.tray_gpus = l.per_node;
    l.per_node = l.node_gpus;
  }
  l.gpus = has(op, "gpus") ? op["gpus"].as<int>() : has(hw, "num_gpus") ? hw["num_gpus"].as<int>() : 0;
  if (l.gpus <= 0) {
    l.gpus = 2 * l.per_node;
    r.defaults.push_back("op.gpus: 2 nodes (a multi-node statement without a GPU count)");
  }
  l.bytes = has(op, "bytes") ? op["bytes"].as<double>() : 0;
  if (l.bytes <= 0) {
    l.bytes = 8.0 * (1ull << 30);
    r.defaults.push_back("op.bytes: 8 GiB (a peak-bandwidth statement)");
  }
  return true;
}

// The measured figure: bus bandwidth, or an all-to-all's per-NIC range (its middle). False when
// the case publishes neither; `per_nic` says which.
bool read_measured(const YAML::Node& m, CollectiveOp kind, CollectiveCaseResult& r, bool& per_nic) {
  per_nic = false;
  if (has(m, "busbw_GBps")) {
    r.metric = "busbw_GBps";
    r.measured = m["busbw_GBps"].as<double>();
    return true;
  }
  if (kind == CollectiveOp::AllToAll && has(m, "other") && has(m["other"], "expected_per_nic_GBps_ndr400_low") &&
      has(m["other"], "expected_per_nic_GBps_ndr400_high")) {
    r.metric = "per_nic_GBps";
    r.measured = 0.5 * (m["other"]["expected_per_nic_GBps_ndr400_low"].as<double>() +
                        m["other"]["expected_per_nic_GBps_ndr400_high"].as<double>());
    per_nic = true;
    r.defaults.push_back(
        "per-NIC statement: network bytes per GPU S(n-g)/n over the all-to-all time; "
        "measured = middle of the stated range");
    return true;
  }
  r.error = "the case publishes no bus bandwidth";
  return false;
}

// The cluster section the case describes: node, GPUs, NIC rate and count.
YAML::Node case_cluster(const YAML::Node& hw, const std::string& gpu, const CaseLayout& l, CollectiveCaseResult& r) {
  YAML::Node cl;
  cl["node"] = l.node;
  cl["gpu"] = gpu;
  cl["gpus_per_node"] = std::min(l.per_node, l.gpus);
  cl["nodes"] = (l.gpus + l.per_node - 1) / l.per_node;
  const YAML::Node inter = hw["inter_node"];
  if (has(inter, "nic_gbps")) {
    const int gbps = inter["nic_gbps"].as<int>();
    const hw::NicSpec& nic =
        hw::bundled_nodes().nic_for(has(inter, "fabric") ? inter["fabric"].as<std::string>() : "", gbps);
    if (const std::string note = validate::nic_rate_note(nic, gbps); !note.empty()) r.defaults.push_back(note);
    cl["nic"] = nic.name;
  } else {
    r.defaults.push_back("hardware.inter_node: the node type's NICs");
  }
  if (has(inter, "nics_per_node") && l.tray_gpus > 0) {
    // A tray's NIC count beside a tray's GPU count (as for training cases).
    const auto rack =
        validate::rack_nics_from_tray(inter["nics_per_node"].as<int>(), l.tray_gpus, std::min(l.per_node, l.gpus));
    cl["nics_per_node"] = rack.nics;
    r.defaults.push_back(rack.note);
  } else if (has(inter, "nics_per_node")) {
    cl["nics_per_node"] = inter["nics_per_node"].as<int>();
  } else if (l.partitions && l.per_node < l.node_gpus) {
    // A partition keeps its GPUs' own NICs (the rack's per-GPU share), not the whole rack's.
    const hw::NodeSpec& spec = hw::bundled_nodes().node(l.node);
    cl["nics_per_node"] = std::max(1, spec.nics * l.per_node / l.node_gpus);
  }
  return cl;
}

// The algorithm a multi-node all-reduce runs (with the default's note), or what a named one means.
void choose_algorithm(const YAML::Node& c, const CaseLayout& l, const topo::ClusterConfig& cfg,
                      const topo::Cluster& cluster, const CommTuning& tuning, Collective& col,
                      CollectiveCaseResult& r) {
  const YAML::Node hw = c["hardware"], op = c["op"];
  if (col.op == CollectiveOp::AllReduce && cfg.nodes > 1) {
    // NCCL's large-message choice across nodes: NVLSTree across 8-GPU NVSwitch boxes that reduce
    // in-switch (Hopper and later: four sources measure 2-node busbw above a ring's NIC limit),
    // else Ring (also across NVL72 racks, where the measured busbw stays below a ring's).
    // A run that turned NVLS off (NCCL_NVLS_ENABLE=0, in the case's notes) has no in-switch
    // algorithm to choose.
    const bool nvls_off = l.described.find("nccl_nvls_enable=0") != std::string::npos;
    const bool rack_domains = cfg.node.gpus_per_node > 16;
    const bool nvls_tree_possible = tuning.nvls_efficiency > 0 && !rack_domains &&
                                    detail::nvls_tree_capable(cluster, detail::ranks_by_node(cluster, col.ranks));
    const bool nvls_tree = !nvls_off && nvls_tree_possible;
    // Without in-switch reduction, a measurement of a stated GPU count with no algorithm named runs
    // NCCL's own choice (the tuner model: Tree where it is faster, e.g. on 2 nodes, where a tree's
    // bus bandwidth exceeds the NIC rate); a statement without a count is a network peak (Ring).
    const bool counted = has(op, "gpus") || has(hw, "num_gpus");
    const bool tuner = !nvls_tree && counted && !has(op, "algorithm") && !rack_domains;
    col.algorithm = nvls_tree ? Algorithm::InSwitchTree : tuner ? Algorithm::Auto : Algorithm::Ring;
    r.defaults.push_back(nvls_tree ? "op.algorithm: NVLSTree (multi-node, in-switch reduction in every node)"
                         : tuner   ? "op.algorithm: NCCL's choice (Auto; no in-switch reduction, none named)"
                         : nvls_off && nvls_tree_possible ? "op.algorithm: Ring (multi-node; the notes: NVLS disabled)"
                         : rack_domains                   ? "op.algorithm: Ring (across NVLink racks)"
                                                          : "op.algorithm: Ring (multi-node network measurement)");
  } else if (has(op, "algorithm")) {
    r.defaults.push_back("op.algorithm '" + op["algorithm"].as<std::string>() + "': NCCL's default (Auto)");
  }
}

// sendrecv_perf: every rank sends the buffer to the next rank and receives from the previous
// one, all at once. On a switched node and a rail fabric the pairs share no link, so the
// slowest pair sets the time: a pair inside a node, and one across nodes.
double sendrecv_seconds(const topo::Cluster& cluster, const topo::ClusterConfig& cfg, const CommTuning& tuning,
                        int gpus, double bytes) {
  const auto pair_s = [&](int from, int to) {
    Collective pair;
    pair.op = CollectiveOp::SendRecv;
    pair.ranks = {from, to};
    pair.peer = to;
    pair.bytes = bytes;
    return time_collective(cluster, tuning, pair).seconds;
  };
  const int g = cfg.node.gpus_per_node;
  double seconds = 0;
  if (std::min(g, gpus) >= 2) seconds = pair_s(0, 1);
  if (cfg.nodes > 1) seconds = std::max(seconds, pair_s(g - 1, g));
  return seconds;
}

}  // namespace

CollectiveCaseResult predict_collective_case(const YAML::Node& c) {
  CollectiveCaseResult r;
  const YAML::Node hw = c["hardware"], op = c["op"];
  const std::string gpu = has(hw, "gpu") ? hw["gpu"].as<std::string>() : "";
  const std::string node = node_for(gpu);
  if (node.empty()) {
    r.error = "no node type for GPU '" + gpu + "'";
    return r;
  }
  const std::string name = has(op, "name") ? config::lowercase(op["name"].as<std::string>()) : "";
  const CollectiveOp* known = collective_op_of(name);
  if (!known) {
    r.error = name.empty()
                  ? std::string("op.name is null")
                  : "unsupported collective '" + name +
                        "' (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce or sendrecv)";
    return r;
  }
  const CollectiveOp kind = *known;
  // NCCL's ring reduce pipelines the same chunks over the same ring as its broadcast, the other
  // way round (and both count bus bandwidth as the algorithm bandwidth).
  if (name == "reduce") r.defaults.push_back("reduce: timed as its mirror, a ring broadcast");
  CaseLayout l;
  bool per_nic = false;
  if (!read_layout(c, node, l, r) || !read_measured(c["measured"], kind, r, per_nic)) return r;

  const YAML::Node cl = case_cluster(hw, gpu, l, r);
  const topo::ClusterConfig cfg = topo::parse_cluster_config(config::Node(cl, "case", "cluster"), hw::bundled_nodes());
  const topo::Cluster cluster = topo::build_cluster(cfg);
  const CommTuning tuning = tuning_for(cfg.node, cfg.nic);

  Collective col;
  col.op = kind;
  col.bytes = l.bytes;
  for (int i = 0; i < l.gpus; ++i) col.ranks.push_back(i);
  choose_algorithm(c, l, cfg, cluster, tuning, col, r);
  if (kind == CollectiveOp::SendRecv) {
    if (l.gpus < 2) {
      r.error = "sendrecv needs at least 2 GPUs";
      return r;
    }
    r.defaults.push_back("sendrecv: a ring of simultaneous pairs, timed by its slowest pair");
    r.predicted = l.bytes / sendrecv_seconds(cluster, cfg, tuning, l.gpus, l.bytes) / 1e9;
    return r;
  }
  const CollectiveTiming t = time_collective(cluster, tuning, col);
  if (per_nic) {
    const int g = cfg.node.gpus_per_node;
    r.predicted = l.bytes * double(l.gpus - g) / l.gpus / t.seconds / 1e9;
  } else {
    r.predicted = t.busbw_Bps / 1e9;
  }
  return r;
}

CollectiveValidation validate_collective_cases(const std::string& cases_path) {
  const config::Node cases = config::load_validation_cases(cases_path);
  CollectiveValidation v;
  struct Acc {
    size_t n = 0;
    double sum = 0, max = 0;
    void add(double e) {
      ++n;
      sum += std::fabs(e);
      max = std::max(max, std::fabs(e));
    }
    ErrorSummary summary() const { return {n, n ? sum / n : 0.0, max}; }
  };
  Acc all;
  std::map<std::string, Acc> by_source;
  for (size_t i = 0; i < cases.size(); ++i) {
    const YAML::Node c = cases.at(i).yaml();
    if (!c["kind"] || c["kind"].as<std::string>() != "collective") continue;
    CollectiveCaseOutcome o;
    o.id = c["id"] ? c["id"].as<std::string>() : "";
    o.kind = "collective";
    o.source = c["source"] && c["source"]["key"] ? c["source"]["key"].as<std::string>() : "";
    try {
      o.result = predict_collective_case(c);
    } catch (const std::exception& e) {
      o.result.error = e.what();
    }
    if (o.result.error.empty() && !(o.result.measured > 0)) o.result.error = "no positive measured value";
    if (o.result.error.empty()) {
      o.error_pct = 100.0 * (o.result.predicted - o.result.measured) / o.result.measured;
      all.add(o.error_pct);
      by_source[o.source].add(o.error_pct);
    } else {
      ++v.errors;
    }
    v.cases.push_back(std::move(o));
  }
  v.overall = all.summary();
  for (const auto& [k, a] : by_source) v.by_source[k] = a.summary();
  return v;
}

}  // namespace stacksim::coll
