#include "services/scenario.hpp"

#include <cmath>
#include <filesystem>

#include "config/schema.hpp"
#include "config/yaml.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"

namespace stacksim::analysis {
namespace {

// storage: the job's storage target per node, read by the data loaders and written by checkpoints
// (`--set storage.read_GBps=20` asks what faster storage buys). A bare number is GB/s, as the key
// says. It replaces the node type's local NVMe figures, and a host or checkpoint bandwidth given
// as well (the run says so in a note).
constexpr double kMinStorageRead_Bps = 1e6;  // slower reads outrun the engine's horizon

struct StorageTarget {
  double read_Bps = 0, write_Bps = 0;  // 0 = not given
};

StorageTarget parse_storage(const config::Node& n) {
  StorageTarget st;
  if (n.is_null()) return st;
  n.require_map();
  n.check_keys(config::scenario_keys("storage"));
  if (n.has("read_GBps")) {
    st.read_Bps = n.positive("read_GBps", n.required_quantity("read_GBps", sim::Dimension::Bandwidth, 1e9));
    if (st.read_Bps < kMinStorageRead_Bps)
      n.fail("read_GBps", "is below 1 MB/s", "use the storage's read bandwidth per node in GB/s, e.g. 20");
  }
  if (n.has("write_GBps"))
    st.write_Bps = n.positive("write_GBps", n.required_quantity("write_GBps", sim::Dimension::Bandwidth, 1e9));
  return st;
}

coll::CollectiveOp parse_op(const config::Node& n) {
  const std::string s = n.as_string();
  static const std::vector<std::pair<std::string, coll::CollectiveOp>> ops = {
      {"all_reduce", coll::CollectiveOp::AllReduce}, {"reduce_scatter", coll::CollectiveOp::ReduceScatter},
      {"all_gather", coll::CollectiveOp::AllGather}, {"all_to_all", coll::CollectiveOp::AllToAll},
      {"broadcast", coll::CollectiveOp::Broadcast},  {"send_recv", coll::CollectiveOp::SendRecv}};
  std::vector<std::string> names;
  for (const auto& [name, op] : ops) {
    if (name == s) return op;
    names.push_back(name);
  }
  const std::string near = config::nearest(s, names);
  n.fail("", "unknown collective '" + s + "'",
         near.empty() ? "use one of all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv"
                      : "did you mean '" + near + "'?");
}

coll::Algorithm parse_algorithm(const config::Node& n) {
  const std::string s = n.as_string();
  if (s == "auto") return coll::Algorithm::Auto;
  if (s == "ring") return coll::Algorithm::Ring;
  if (s == "tree") return coll::Algorithm::Tree;
  if (s == "hierarchical") return coll::Algorithm::Hierarchical;
  if (s == "nvls" || s == "in_switch") return coll::Algorithm::InSwitch;
  if (s == "nvls_tree") return coll::Algorithm::InSwitchTree;
  n.fail("", "unknown algorithm '" + s + "'", "use auto, ring, tree, hierarchical, nvls or nvls_tree");
}

CollectiveBenchSetup parse_bench(const config::Node& c, const topo::ClusterConfig& cluster, int cluster_gpus) {
  c.check_keys(config::scenario_keys("collective"));
  CollectiveBenchSetup b;
  b.cluster = cluster;
  b.op = parse_op(c["op"]);
  if (c.has("algorithm")) b.algorithm = parse_algorithm(c["algorithm"]);
  if (c.has("ranks")) {
    const config::Node r = c["ranks"];
    if (!r.is_sequence()) r.fail("", "expected a list of GPU ranks", "write e.g. ranks: [0, 1, 2, 3]");
    for (size_t i = 0; i < r.size(); ++i) {
      const long long v = r.at(i).as_int();
      if (v < 0 || v >= cluster_gpus)
        r.at(i).fail("",
                     "GPU " + std::to_string(v) + " does not exist (the cluster has " + std::to_string(cluster_gpus) +
                         " GPUs: 0.." + std::to_string(cluster_gpus - 1) + ")",
                     "name GPUs that exist, or add nodes");
      b.ranks.push_back(static_cast<int>(v));
    }
  } else {
    const long long n = c.has("gpus") ? c.required_int("gpus") : cluster_gpus;
    if (n < 2 || n > cluster_gpus)
      c.fail("gpus", "needs between 2 and " + std::to_string(cluster_gpus) + " GPUs, got " + std::to_string(n),
             "use at most the cluster's GPU count, or add nodes");
    for (int i = 0; i < n; ++i) b.ranks.push_back(i);
  }
  if (b.ranks.size() < 2) c.fail("ranks", "a collective needs at least 2 GPUs", "list two or more ranks");
  const config::Node sizes = c["sizes"];
  if (sizes.is_null()) {
    for (double s = 1024; s <= 8.0 * (1ull << 30); s *= 2) b.sizes_bytes.push_back(s);
  } else if (sizes.is_sequence()) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      try {
        b.sizes_bytes.push_back(sim::parse_quantity(sizes.at(i).as_string(), sim::Dimension::Bytes, 1.0));
      } catch (const std::invalid_argument& e) {
        sizes.at(i).fail("", e.what(), "write a size such as '1 MiB'");
      }
      if (!(b.sizes_bytes.back() > 0)) sizes.at(i).fail("", "sizes must be positive", "use a size above 0");
    }
  } else {
    sizes.check_keys(config::scenario_keys("collective.sizes"));
    const double lo = sizes.positive("min", sizes.required_quantity("min", sim::Dimension::Bytes, 1.0));
    const double hi = sizes.positive("max", sizes.required_quantity("max", sim::Dimension::Bytes, 1.0));
    const double f = sizes.optional_number("factor").value_or(2.0);
    if (!(f > 1.0)) sizes.fail("factor", "must be greater than 1", "use e.g. factor: 2");
    if (hi < lo) sizes.fail("max", "is smaller than min", "swap them");
    for (double s = lo; s <= hi * (1 + 1e-12); s *= f) b.sizes_bytes.push_back(std::round(s));
  }
  // A named algorithm the cluster cannot run (NVLS without an in-switch-reducing NVSwitch, a tree
  // inside one node) is an input error, found before any size runs.
  if (b.algorithm != coll::Algorithm::Auto) {
    coll::Collective probe;
    probe.op = b.op;
    probe.ranks = b.ranks;
    probe.bytes = b.sizes_bytes.front();
    probe.algorithm = b.algorithm;
    if (probe.op == coll::CollectiveOp::SendRecv) probe.peer = b.ranks.back();
    try {
      coll::estimate_seconds(topo::build_cluster(cluster), coll::tuning_for(cluster.node, cluster.nic), probe);
    } catch (const std::invalid_argument& e) {
      c.fail("algorithm", e.what(), "use auto, or an algorithm this cluster and group can run");
    }
  }
  return b;
}

}  // namespace

Scenario scenario_from_yaml(YAML::Node root, const std::string& origin, const std::string& base_dir, bool check_plan) {
  const config::Node top(root, origin, "");
  config::check_scenario(top);  // keys, types and ranges from the schema (config/schema.hpp)
  Scenario s;
  s.file = origin;
  s.yaml = root;
  s.name = top.string_or("name", std::filesystem::path(origin).stem().string());

  if (!top.has("cluster"))
    top.fail("cluster", "missing", "add a 'cluster:' section, e.g. cluster: {node: dgx-h100, nodes: 8}");
  // hardware.gpu is the what-if knob of the GPU in every node; it wins over cluster.gpu.
  const config::Node hw = top["hardware"];
  hw.check_keys(config::scenario_keys("hardware"));
  YAML::Node cluster_yaml = YAML::Clone(root["cluster"]);
  if (hw.has("gpu")) cluster_yaml["gpu"] = hw.required_string("gpu");
  const config::Node cluster_node(cluster_yaml, origin, "cluster");
  topo::ClusterConfig cc = topo::parse_cluster_config(cluster_node, hw::bundled_nodes());
  const StorageTarget storage = parse_storage(top["storage"]);
  if (storage.read_Bps > 0) cc.node.storage_read_Bps = storage.read_Bps;
  if (storage.write_Bps > 0) cc.node.storage_write_Bps = storage.write_Bps;
  try {
    cc.gpu = hw::bundled_gpus().get(cc.gpu).name;  // the profile's own name; unknown -> InputError with the nearest
  } catch (const config::InputError& e) {
    (hw.has("gpu") ? hw : cluster_node).fail("gpu", e.reason(), e.fix());  // where the name was written
  }
  const std::string gpu_name = cc.gpu;

  if (top.has("collective")) {
    if (top.has("model") || top.has("parallelism"))
      top.fail("collective", "a scenario is either a training job or a collective benchmark",
               "remove 'collective' or 'model'/'parallelism'");
    s.kind = WorkloadKind::CollectiveBenchmark;
    s.bench = parse_bench(top["collective"], cc, cc.num_gpus());
    s.bench.name = s.name;
    return s;
  }
  if (top.has("serving")) {
    for (const char* k : {"parallelism", "host", "storage", "checkpoint", "failures"})
      if (top.has(k))
        top.fail(k, "a serving scenario has no training key '" + std::string(k) + "'",
                 "remove it (a scenario is either a training job, with parallelism:, or a serving deployment, with "
                 "serving:)");
    s.kind = WorkloadKind::Serving;
    s.serving = parse_serving_scenario(top, cc, base_dir);
    s.serving.name = s.name;
    return s;
  }
  for (const char* k : {"workload", "slo"})
    if (top.has(k))
      top.fail(k, "only a serving scenario has '" + std::string(k) + "'", "add a 'serving:' section, or remove it");
  if (!top.has("model")) top.fail("model", "missing", "add a 'model:' section (or 'collective:' for a benchmark)");
  if (!top.has("parallelism"))
    top.fail("parallelism", "missing",
             "add a 'parallelism:' section with tp, pp, dp, ... (or 'serving:' for an inference deployment)");
  s.kind = WorkloadKind::Training;
  TrainingSetup& t = s.training;
  t.name = s.name;
  t.origin = origin;
  t.cluster = cc;
  t.gpu = gpu_name;
  t.model = workload::parse_model(top["model"], base_dir);
  t.host = parse_host(top["host"]);
  t.checkpoint = parse_checkpoint(top["checkpoint"], cc.node);
  if (storage.read_Bps > 0 && t.host.storage_read_Bps > 0) {
    t.host.storage_read_Bps = 0;  // the node's, now the storage section's
    t.notes.push_back("storage.read_GBps replaces host.storage_read_bandwidth");
  }
  if (storage.write_Bps > 0 && t.checkpoint.write_Bps_per_node > 0) {
    t.checkpoint.write_Bps_per_node = 0;
    t.notes.push_back("storage.write_GBps replaces checkpoint.write_bandwidth");
  }
  t.failures = parse_failures(top["failures"], t.checkpoint);
  t.prices = parse_prices(top["prices"]);
  t.software = parse_software(top["software"]);
  // recompute: auto is resolved at run time (the least recomputation that fits in memory). The
  // tree is edited in place so that every other key keeps its line for error messages; it parses
  // as selective, whose recompute_modules (if any) are the ones auto tries.
  // The caller's tree (YAML nodes share their data) gets its "auto" back however parsing ends: a
  // scenario built from it again must still resolve auto (the case policy parses its trial plans
  // and then runs the one that fits).
  YAML::Node plan_yaml = root["parallelism"];
  struct RestoreAuto {
    YAML::Node plan;
    bool active = false;
    ~RestoreAuto() {
      if (active) plan["recompute"] = "auto";
    }
  } restore{plan_yaml};
  if (plan_yaml.IsMap() && plan_yaml["recompute"] && plan_yaml["recompute"].IsScalar() &&
      plan_yaml["recompute"].as<std::string>() == "auto") {
    t.recompute_auto = true;
    plan_yaml["recompute"] = "selective";
    restore.active = true;
  }
  const config::Node plan_node(plan_yaml, origin, "parallelism");
  t.plan = workload::parse_plan(plan_node);
  if (check_plan) workload::check_plan(t.model, t.plan, cc.num_gpus(), plan_node);
  if (t.plan.precision == workload::Precision::FP8 && hw::bundled_gpus().get(gpu_name).peak("fp8") <= 0)
    plan_node.fail("precision", gpu_name + " has no FP8 tensor cores (no fp8 peak in its profile)",
                   "use precision: bf16 (or fp16) on this GPU");
  if (t.plan.precision == workload::Precision::FP8 && t.plan.fp8_recipe == workload::Fp8Recipe::Mxfp8 &&
      !hw::bundled_gpus().get(gpu_name).supports_mxfp8())
    plan_node.fail(
        "fp8_recipe",
        "mxfp8 needs Blackwell tensor cores; " + gpu_name + " is " + hw::bundled_gpus().get(gpu_name).architecture,
        "use fp8_recipe: delayed or current on this GPU");
  return s;
}

void apply_scenario_override(YAML::Node& root, const std::string& assignment, const std::string& origin) {
  std::string key = assignment.substr(0, assignment.find('='));
  key.erase(0, key.find_first_not_of(' '));
  key.erase(key.find_last_not_of(' ') + 1);
  if ((key == "model.preset" || key == "model.hf_config") && root.IsMap() && root["model"] && root["model"].IsMap()) {
    YAML::Node kept(YAML::NodeType::Map);
    for (const char* k : kScenarioModelRunKeys)
      if (root["model"][k]) kept[k] = root["model"][k];
    root["model"] = kept;
  }
  config::apply_override(root, assignment, origin);
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  const config::Node file = config::Node::load_file(path);
  YAML::Node root = file.yaml();
  for (const auto& o : overrides) apply_scenario_override(root, o, "--set " + o);
  const std::string base = std::filesystem::path(path).parent_path().string();
  try {
    return scenario_from_yaml(root, path, base.empty() ? "." : base);
  } catch (const config::InputError& e) {
    config::rethrow_for_overrides(e, overrides, "--set");
  }
}

}  // namespace stacksim::analysis
