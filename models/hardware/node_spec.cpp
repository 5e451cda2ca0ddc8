// Loader of the node and NIC catalogue (schema in node_spec.hpp). Every value is checked where it
// is read, so a bad file fails with its file, line and key, never later inside a builder.
#include "models/hardware/node_spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "config/yaml.hpp"
#include "models/hardware/gpu_spec.hpp"

namespace stacksim::hw {
namespace {

using sim::Dimension;

// Defaults for figures few vendors publish; each is an assumption and says so in the schema.
constexpr double kDefaultInterSocketLatency_s = 0.1e-6;  // one UPI / xGMI crossing
constexpr double kDefaultStorageLatency_s = 10e-6;       // NVMe read command

const std::vector<std::string> kIntraGenerations = {
    "nvlink2-nvswitch1", "nvlink3-nvswitch2", "nvlink4-nvswitch3", "nvlink5-nvswitch4", "xgmi3", "pcie"};
const std::vector<std::string> kNicGenerations = {"ib-edr", "ib-hdr", "ib-ndr", "ib-xdr", "roce", "slingshot"};

std::vector<std::string> yaml_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());  // directory order is not deterministic
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string one_of(const config::Node& n, const std::string& key, const std::vector<std::string>& allowed) {
  const std::string v = n.required_string(key);
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
  const std::string near = config::nearest(v, allowed);
  n.fail(key, "unknown value '" + v + "'",
         (near.empty() ? "" : "did you mean '" + near + "'? ") + "use one of: " + joined(allowed));
}

int positive_int(const config::Node& n, const std::string& key, long long v) {
  if (v < 1) n.fail(key, "must be at least 1, got " + std::to_string(v), "use a positive whole number");
  return static_cast<int>(v);
}

// `sources:` is required: a list of strings (or one string) saying where the figures come from.
std::vector<std::string> read_sources(const config::Node& n) {
  if (!n.has("sources"))
    n.fail("sources", "missing", "add 'sources:' naming where each figure comes from (e.g. \"specs.yaml: MLE_NET\")");
  const config::Node s = n["sources"];
  std::vector<std::string> out;
  if (s.is_sequence()) {
    for (size_t i = 0; i < s.size(); ++i) out.push_back(s.at(i).as_string());
  } else {
    out.push_back(s.as_string());
  }
  if (out.empty() || out.front().empty())
    n.fail("sources", "is empty", "name at least one source, or say \"assumption\"");
  return out;
}

NicSpec parse_nic(const config::Node& n) {
  n.require_map();
  n.check_keys({"name", "bandwidth", "latency", "fabric", "generation", "sources", "notes"});
  NicSpec s;
  s.file = n.file();
  s.name = n.required_string("name");
  s.bandwidth_Bps = n.positive("bandwidth", n.required_quantity("bandwidth", Dimension::Bandwidth));
  s.latency_s = n.non_negative("latency", n.optional_quantity("latency", Dimension::Time).value_or(0));
  s.fabric = one_of(n, "fabric", {"infiniband", "roce", "ethernet"});
  s.generation = one_of(n, "generation", kNicGenerations);
  s.sources = read_sources(n);
  return s;
}

NodeSpec parse_node(const config::Node& n) {
  n.require_map();
  n.check_keys({"name", "gpu", "gpus_per_node", "intra_node", "pcie", "cpu", "host_memory", "nics", "storage",
                "sources", "notes"});
  NodeSpec s;
  s.file = n.file();
  s.name = n.required_string("name");
  s.gpu = n.required_string("gpu");
  s.gpus_per_node = positive_int(n, "gpus_per_node", n.required_int("gpus_per_node"));

  const config::Node in = n["intra_node"];
  in.require_map();
  in.check_keys({"type", "bandwidth", "latency", "generation", "in_switch_reduction", "group_size"});
  // xgmi: AMD's Infinity Fabric, direct GPU-to-GPU links like an NVLink group (a full mesh by default).
  s.intra_type = one_of(in, "type", {"nvswitch", "nvlink", "xgmi", "pcie"});
  if (s.intra_type == "pcie") {
    if (in.has("bandwidth"))
      in.fail("bandwidth", "a pcie node has no NVLink bandwidth", "remove it: peers use the pcie section's links");
  } else {
    s.intra_bandwidth_Bps = in.positive("bandwidth", in.required_quantity("bandwidth", Dimension::Bandwidth));
  }
  s.intra_latency_s = in.non_negative("latency", in.optional_quantity("latency", Dimension::Time).value_or(0));
  s.intra_generation = one_of(in, "generation", kIntraGenerations);
  s.in_switch_reduction = in.bool_or("in_switch_reduction", false);
  if (s.in_switch_reduction && s.intra_type != "nvswitch")
    in.fail("in_switch_reduction", "only an NVSwitch reduces in the switch", "set it to false or use type: nvswitch");
  if (s.direct_links()) {
    const int default_group = s.intra_type == "xgmi" ? s.gpus_per_node : 2;
    s.nvlink_group_size = positive_int(in, "group_size", in.optional_int("group_size").value_or(default_group));
    if (s.nvlink_group_size < 2 || s.gpus_per_node % s.nvlink_group_size != 0)
      in.fail("group_size", "must be at least 2 and divide gpus_per_node (" + std::to_string(s.gpus_per_node) + ")",
              "use 2 for bridged pairs or gpus_per_node for a full mesh");
  } else if (in.has("group_size")) {
    in.fail("group_size", "only meaningful for type: nvlink or xgmi", "remove it");
  }

  const config::Node pc = n["pcie"];
  pc.require_map();
  pc.check_keys({"generation", "bandwidth", "latency", "gpus_per_switch", "switches_per_socket"});
  s.pcie_generation = positive_int(pc, "generation", pc.required_int("generation"));
  s.pcie_bandwidth_Bps = pc.positive("bandwidth", pc.required_quantity("bandwidth", Dimension::Bandwidth));
  s.pcie_latency_s = pc.non_negative("latency", pc.optional_quantity("latency", Dimension::Time).value_or(0));
  s.gpus_per_pcie_switch = positive_int(pc, "gpus_per_switch", pc.optional_int("gpus_per_switch").value_or(2));
  s.pcie_switches_per_socket =
      positive_int(pc, "switches_per_socket", pc.optional_int("switches_per_socket").value_or(2));

  const config::Node cpu = n["cpu"];
  cpu.require_map();
  cpu.check_keys({"sockets", "cores_per_socket", "threads_per_core", "model", "inter_socket_bandwidth",
                  "inter_socket_latency", "memory_bandwidth"});
  if (cpu.has("memory_bandwidth"))
    s.socket_memory_Bps =
        cpu.positive("memory_bandwidth", cpu.required_quantity("memory_bandwidth", Dimension::Bandwidth));
  s.cpu_sockets = positive_int(cpu, "sockets", cpu.required_int("sockets"));
  s.cores_per_socket = positive_int(cpu, "cores_per_socket", cpu.required_int("cores_per_socket"));
  s.cpu_model = cpu.string_or("model", "");
  s.threads_per_core = positive_int(cpu, "threads_per_core", cpu.optional_int("threads_per_core").value_or(1));
  if (s.cpu_sockets > 1) {
    s.inter_socket_Bps =
        cpu.positive("inter_socket_bandwidth", cpu.required_quantity("inter_socket_bandwidth", Dimension::Bandwidth));
    s.inter_socket_latency_s = cpu.non_negative(
        "inter_socket_latency",
        cpu.optional_quantity("inter_socket_latency", Dimension::Time).value_or(kDefaultInterSocketLatency_s));
  }
  s.host_memory_bytes = n.non_negative("host_memory", n.optional_quantity("host_memory", Dimension::Bytes).value_or(0));

  const config::Node nics = n["nics"];
  nics.require_map();
  nics.check_keys({"count", "model"});
  const long long count = nics.required_int("count");
  if (count < 0) nics.fail("count", "must not be negative", "use 0 for a node without compute NICs");
  s.nics = static_cast<int>(count);
  s.nic = nics.required_string("model");

  const config::Node st = n["storage"];
  st.check_keys({"local_read_bandwidth", "local_write_bandwidth", "latency"});
  if (st.has("local_read_bandwidth")) {
    s.storage_read_Bps =
        st.positive("local_read_bandwidth", st.required_quantity("local_read_bandwidth", Dimension::Bandwidth));
    s.storage_write_Bps =
        st.positive("local_write_bandwidth",
                    st.optional_quantity("local_write_bandwidth", Dimension::Bandwidth).value_or(s.storage_read_Bps));
    s.storage_latency_s =
        st.non_negative("latency", st.optional_quantity("latency", Dimension::Time).value_or(kDefaultStorageLatency_s));
  } else if (st.has("local_write_bandwidth") || st.has("latency")) {
    st.fail("local_read_bandwidth", "missing", "add the local NVMe read bandwidth, e.g. 25 GB/s");
  }
  s.sources = read_sources(n);
  return s;
}

template <typename Map>
const typename Map::mapped_type& lookup(const Map& m, const std::string& name, const char* what, const char* folder) {
  auto it = m.find(name);
  if (it != m.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [k, v] : m) names.push_back(k);
  const std::string near = config::nearest(name, names);
  throw config::InputError("", 0, what, "unknown " + std::string(what) + " '" + name + "'",
                           (near.empty() ? "" : "did you mean '" + near + "'? ") + "Known: " + joined(names) +
                               " (add one as a YAML file in models/hardware/" + folder + ")");
}

template <typename Map, typename Spec>
void insert_unique(Map& m, Spec s, const config::Node& n) {
  auto it = m.find(s.name);
  if (it != m.end())
    n.fail("name", "'" + s.name + "' is already defined in " + it->second.file, "give one of them another name");
  m.emplace(s.name, std::move(s));
}

}  // namespace

NodeCatalog NodeCatalog::load_dir(const std::string& dir) {
  NodeCatalog c;
  for (const auto& f : yaml_files(dir + "/nics")) {
    const config::Node n = config::Node::load_file(f);
    insert_unique(c.nics_, parse_nic(n), n);
  }
  for (const auto& f : yaml_files(dir + "/nodes")) {
    const config::Node n = config::Node::load_file(f);
    NodeSpec s = parse_node(n);
    if (!c.nics_.count(s.nic)) {
      const std::string near = config::nearest(s.nic, c.nic_names());
      n["nics"].fail("model", "unknown NIC '" + s.nic + "'",
                     (near.empty() ? "" : "did you mean '" + near + "'? ") + "add models/hardware/nics/" + s.nic +
                         ".yaml or use one of: " + joined(c.nic_names()));
    }
    insert_unique(c.nodes_, std::move(s), n);
  }
  if (c.nodes_.empty())
    throw config::InputError(dir, 0, "", "no node profiles found in " + dir + "/nodes",
                             "point the hardware directory at a folder with nodes/*.yaml and nics/*.yaml");
  return c;
}

const NodeSpec& NodeCatalog::node(const std::string& name) const { return lookup(nodes_, name, "node", "nodes"); }
const NicSpec& NodeCatalog::nic(const std::string& name) const { return lookup(nics_, name, "nic", "nics"); }

std::vector<std::string> NodeCatalog::names() const {
  std::vector<std::string> v;
  for (const auto& [k, s] : nodes_) v.push_back(k);
  return v;
}

std::vector<std::string> NodeCatalog::node_names() const { return names(); }

std::vector<std::string> NodeCatalog::nic_names() const {
  std::vector<std::string> v;
  for (const auto& [k, s] : nics_) v.push_back(k);
  return v;
}

const NicSpec& NodeCatalog::nic_for(const std::string& fabric, double gbps) const {
  const std::string family = fabric == "roce" || fabric == "ethernet" ? "roce" : "infiniband";
  const NicSpec* best = nullptr;
  double best_distance = 0;
  for (const auto& [name, n] : nics_) {
    if (n.fabric != family) continue;
    const double distance = std::abs(std::log(n.bandwidth_Bps * 8 / 1e9 / gbps));
    // The nearest rate; of two equally near, the faster.
    if (!best || distance < best_distance - 1e-12 ||
        (distance < best_distance + 1e-12 && n.bandwidth_Bps > best->bandwidth_Bps)) {
      best = &n;
      best_distance = distance;
    }
  }
  if (!best) throw std::runtime_error("no " + family + " NIC in the catalogue");
  return *best;
}

std::string default_hardware_dir() {
  if (const char* env = std::getenv("STACKSIM_HARDWARE_DIR")) return env;
  return std::string(STACKSIM_SOURCE_DIR) + "/models/hardware";
}

const GpuCatalog& bundled_gpus() {
  static const GpuCatalog catalog = GpuCatalog::load_dir(default_hardware_dir());
  return catalog;
}

const NodeCatalog& bundled_nodes() {
  static const NodeCatalog catalog = NodeCatalog::load_dir(default_hardware_dir());
  return catalog;
}

std::string canonical_gpu_name(const std::string& gpu) {
  const std::string profile = bundled_gpus().resolve(gpu);
  return profile.empty() ? gpu : profile;
}

std::string node_type_for_gpu(const std::string& written) {
  // Each GPU's file names its usual node (default_node): a catalogue fact, kept as data.
  const std::string profile = bundled_gpus().resolve(written);
  const std::string node = profile.empty() ? "" : bundled_gpus().get(profile).default_node;
  if (node.empty()) throw std::runtime_error("no node type is known for GPU '" + written + "'");
  return node;
}

}  // namespace stacksim::hw
