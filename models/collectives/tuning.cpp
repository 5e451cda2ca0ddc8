// Loading collective tuning from models/collectives/tuning/{intra_node,network}.yaml: one entry per
// intra-node generation and per NIC generation, every number with its source (the files' headers
// list the sources). Parsed files are cached per directory; reads hold one lock, because yaml-cpp
// nodes are not safe to read from several threads at once.
#include <cstdlib>
#include <map>
#include <mutex>

#include "config/yaml.hpp"
#include "models/collectives/collective.hpp"
#include "models/hardware/node_spec.hpp"

namespace stacksim::coll {
namespace {

constexpr const char* kFormat = "stacksim-collective-tuning/1";

// A {value, source} pair: the source must be stated.
double sourced(const config::Node& parent, const std::string& key, sim::Dimension dim) {
  const config::Node v = parent[key];
  if (!v.is_map())
    parent.fail(key, "missing or not a {value, source} map",
                "write it as '" + key + ": {value: ..., source: \"where the number comes from\"}'");
  v.check_keys({"value", "source"});
  if (v.string_or("source", "").empty())
    v.fail("source", "missing", "name the measurement, the NCCL source or 'fit: <curve>' the value comes from");
  const double x =
      dim == sim::Dimension::Dimensionless ? v.required_number("value") : v.required_quantity("value", dim);
  return v.non_negative("value", x);
}

void check_format(const config::Node& root) {
  root.require_map();
  if (root.string_or("format", "") != kFormat)
    root.fail("format", "expected '" + std::string(kFormat) + "'",
              "start the file with 'format: " + std::string(kFormat) + "'");
}

struct TuningFiles {
  config::Node intra, network;
};

std::mutex& tuning_mutex() {
  static std::mutex m;
  return m;
}

// Callers hold tuning_mutex().
const TuningFiles& files(const std::string& dir) {
  static std::map<std::string, TuningFiles> cache;
  auto it = cache.find(dir);
  if (it == cache.end()) {
    TuningFiles f{config::Node::load_file(dir + "/intra_node.yaml"), config::Node::load_file(dir + "/network.yaml")};
    check_format(f.intra);
    check_format(f.network);
    f.intra.check_keys({"format", "generations"});
    f.network.check_keys({"format", "step_latency", "generations"});
    it = cache.emplace(dir, std::move(f)).first;
  }
  return it->second;
}

config::Node generation(const config::Node& root, const std::string& key, const std::string& what) {
  const config::Node gens = root["generations"];
  if (!gens.is_map()) root.fail("generations", "missing or not a map", "add a 'generations:' map");
  if (!gens.has(key)) {
    std::string known;
    for (const auto& k : gens.keys()) known += (known.empty() ? "" : ", ") + k;
    gens.fail(key, "no collective tuning for " + what + " '" + key + "'",
              "use one of " + known + " in the hardware file, or add an entry for '" + key + "'");
  }
  return gens[key];
}

}  // namespace

std::string default_tuning_dir() {
  if (const char* env = std::getenv("STACKSIM_TUNING_DIR")) return env;
  return std::string(STACKSIM_SOURCE_DIR) + "/models/collectives/tuning";
}

CommTuning load_tuning(const std::string& dir, const std::string& intra_generation, const std::string& nic_generation,
                       bool in_switch_reduction) {
  const std::lock_guard<std::mutex> lock(tuning_mutex());
  const TuningFiles& f = files(dir);
  using sim::Dimension;
  CommTuning t;
  t.intra_generation = intra_generation;
  t.nic_generation = nic_generation;

  const config::Node g = generation(f.intra, intra_generation, "intra-node generation");
  g.check_keys({"protocols", "nvls", "sm_fraction", "ramp"});
  const config::Node net = generation(f.network, nic_generation, "NIC generation");
  net.check_keys({"efficiency"});
  const config::Node net_steps = f.network["step_latency"];

  const config::Node protos = g["protocols"];
  if (!protos.is_map() || protos.size() == 0)
    g.fail("protocols", "missing or empty", "list the NCCL protocols (LL, Simple) with their numbers");
  t.protocols.clear();
  for (const std::string& name : protos.keys()) {
    const config::Node p = protos[name];
    p.check_keys({"latency", "step_latency", "bus_cap", "efficiency"});
    Protocol x;
    x.name = name;
    x.latency_s = sourced(p, "latency", Dimension::Time);
    x.step_latency_s = sourced(p, "step_latency", Dimension::Time);
    x.bus_cap_Bps = sourced(p, "bus_cap", Dimension::Bandwidth);
    x.efficiency = p.positive("efficiency", sourced(p, "efficiency", Dimension::Dimensionless));
    x.network_step_latency_s = sourced(net_steps, name, Dimension::Time);
    t.protocols.push_back(x);
  }
  const config::Node nvls = g["nvls"];
  nvls.check_keys({"efficiency", "latency"});
  t.nvls_efficiency = in_switch_reduction ? sourced(nvls, "efficiency", Dimension::Dimensionless) : 0.0;
  t.nvls_latency_s = sourced(nvls, "latency", Dimension::Time);
  t.sm_fraction = sourced(g, "sm_fraction", Dimension::Dimensionless);
  if (g.has("ramp")) {
    const config::Node ramp = g["ramp"];
    ramp.check_keys({"start_bytes", "start_fraction", "end_bytes"});
    t.ramp_start_bytes = ramp.positive("start_bytes", sourced(ramp, "start_bytes", Dimension::Bytes));
    t.ramp_end_bytes = sourced(ramp, "end_bytes", Dimension::Bytes);
    t.ramp_start_fraction = ramp.positive("start_fraction", sourced(ramp, "start_fraction", Dimension::Dimensionless));
    if (!(t.ramp_end_bytes > t.ramp_start_bytes) || t.ramp_start_fraction > 1)
      ramp.fail("end_bytes", "the ramp must end above its start and start at a fraction <= 1",
                "e.g. {start_bytes: 8 MiB, start_fraction: 0.65, end_bytes: 1 GiB}");
  }
  t.network_efficiency = net.positive("efficiency", sourced(net, "efficiency", Dimension::Dimensionless));
  return t;
}

CommTuning tuning_for(const hw::NodeSpec& node, const hw::NicSpec& nic) {
  return load_tuning(default_tuning_dir(), node.intra_generation, nic.generation, node.in_switch_reduction);
}

}  // namespace stacksim::coll
