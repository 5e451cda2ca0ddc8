#include "models/hardware/node_spec.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "config/yaml.hpp"

namespace stacksim::hw {
namespace {

using sim::Dimension;

std::vector<std::string> yaml_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

NicSpec parse_nic(const config::Node& n) {
  n.require_map();
  n.check_keys({"name", "bandwidth", "latency", "fabric", "generation", "sources", "notes"});
  NicSpec s;
  s.name = n.required_string("name");
  s.bandwidth_Bps = n.positive("bandwidth", n.required_quantity("bandwidth", Dimension::Bandwidth));
  s.latency_s = n.non_negative("latency", n.optional_quantity("latency", Dimension::Time).value_or(0));
  s.fabric = n.required_string("fabric");
  if (s.fabric != "infiniband" && s.fabric != "roce" && s.fabric != "ethernet")
    n.fail("fabric", "unknown fabric '" + s.fabric + "'", "use infiniband, roce or ethernet");
  s.generation = n.required_string("generation");
  return s;
}

NodeSpec parse_node(const config::Node& n) {
  n.require_map();
  n.check_keys({"name", "gpu", "gpus_per_node", "intra_node", "pcie", "cpu", "host_memory", "nics",
                "storage", "sources", "notes"});
  NodeSpec s;
  s.file = n.file();
  s.name = n.required_string("name");
  s.gpu = n.required_string("gpu");
  s.gpus_per_node = static_cast<int>(n.positive("gpus_per_node", n.required_int("gpus_per_node")));
  const config::Node in = n["intra_node"];
  in.check_keys({"type", "bandwidth", "latency", "generation", "in_switch_reduction"});
  s.intra_type = in.required_string("type");
  if (s.intra_type != "nvswitch" && s.intra_type != "pcie")
    in.fail("type", "unknown intra-node fabric '" + s.intra_type + "'", "use nvswitch or pcie");
  if (s.intra_type == "nvswitch")
    s.intra_bandwidth_Bps = in.positive("bandwidth", in.required_quantity("bandwidth", Dimension::Bandwidth));
  s.intra_latency_s = in.non_negative("latency", in.optional_quantity("latency", Dimension::Time).value_or(0));
  s.intra_generation = in.required_string("generation");
  s.in_switch_reduction = in.bool_or("in_switch_reduction", false);
  const config::Node pc = n["pcie"];
  pc.check_keys({"generation", "bandwidth", "latency", "gpus_per_switch"});
  s.pcie_generation = static_cast<int>(pc.required_int("generation"));
  s.pcie_bandwidth_Bps = pc.positive("bandwidth", pc.required_quantity("bandwidth", Dimension::Bandwidth));
  s.pcie_latency_s = pc.non_negative("latency", pc.optional_quantity("latency", Dimension::Time).value_or(0));
  s.gpus_per_pcie_switch = static_cast<int>(pc.positive("gpus_per_switch", pc.optional_int("gpus_per_switch").value_or(2)));
  const config::Node cpu = n["cpu"];
  cpu.check_keys({"sockets", "cores_per_socket", "model", "inter_socket_bandwidth"});
  s.cpu_sockets = static_cast<int>(cpu.positive("sockets", cpu.required_int("sockets")));
  s.cores_per_socket = static_cast<int>(cpu.positive("cores_per_socket", cpu.required_int("cores_per_socket")));
  s.cpu_model = cpu.string_or("model", "");
  s.inter_socket_Bps = cpu.positive("inter_socket_bandwidth",
                                    cpu.required_quantity("inter_socket_bandwidth", Dimension::Bandwidth));
  s.host_memory_bytes = n.optional_quantity("host_memory", Dimension::Bytes).value_or(0);
  const config::Node nics = n["nics"];
  nics.check_keys({"count", "model"});
  s.nics = static_cast<int>(nics.non_negative("count", nics.required_int("count")));
  s.nic = nics.required_string("model");
  const config::Node st = n["storage"];
  st.check_keys({"read_bandwidth"});
  s.storage_read_Bps = st.optional_quantity("read_bandwidth", Dimension::Bandwidth).value_or(0);
  return s;
}

template <typename Map>
const typename Map::mapped_type& lookup(const Map& m, const std::string& name, const char* what,
                                        const char* folder) {
  auto it = m.find(name);
  if (it != m.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [k, v] : m) names.push_back(k);
  const std::string near = config::nearest(name, names);
  std::string all;
  for (const auto& k : names) all += (all.empty() ? "" : ", ") + k;
  throw config::InputError("", 0, what, "unknown " + std::string(what) + " '" + name + "'",
                           (near.empty() ? "" : "did you mean '" + near + "'? ") + "Known: " + all +
                               " (add one as a YAML file in models/hardware/" + folder + ")");
}

}  // namespace

NodeCatalog NodeCatalog::load_dir(const std::string& dir) {
  NodeCatalog c;
  for (const auto& f : yaml_files(dir + "/nics")) {
    NicSpec s = parse_nic(config::Node::load_file(f));
    c.nics_[s.name] = s;
  }
  for (const auto& f : yaml_files(dir + "/nodes")) {
    const config::Node n = config::Node::load_file(f);
    NodeSpec s = parse_node(n);
    if (!c.nics_.count(s.nic))
      n["nics"].fail("model", "unknown NIC '" + s.nic + "'", "add models/hardware/nics/" + s.nic + ".yaml or use a known NIC");
    c.nodes_[s.name] = s;
  }
  if (c.nodes_.empty())
    throw config::InputError(dir, 0, "", "no node profiles found", "check the hardware catalogue folder");
  return c;
}

const NodeSpec& NodeCatalog::node(const std::string& name) const { return lookup(nodes_, name, "node", "nodes"); }
const NicSpec& NodeCatalog::nic(const std::string& name) const { return lookup(nics_, name, "nic", "nics"); }

std::vector<std::string> NodeCatalog::node_names() const {
  std::vector<std::string> v;
  for (const auto& [k, s] : nodes_) v.push_back(k);
  return v;
}
std::vector<std::string> NodeCatalog::nic_names() const {
  std::vector<std::string> v;
  for (const auto& [k, s] : nics_) v.push_back(k);
  return v;
}

std::string default_hardware_dir() {
  if (const char* env = std::getenv("STACKSIM_HARDWARE_DIR")) return env;
  return std::string(STACKSIM_SOURCE_DIR) + "/models/hardware";
}

}  // namespace stacksim::hw
