// Server (node) and NIC profiles, read from models/hardware/nodes/*.yaml and nics/*.yaml.
// Every figure carries its source in the file. Schema of a node file:
//   name: dgx-h100
//   gpu: H100-SXM5-80GB          # default GPU (canonical name)
//   gpus_per_node: 8
//   intra_node:                  # GPU-to-GPU fabric inside the node
//     type: nvswitch | pcie      # pcie: peer traffic crosses PCIe switches and CPUs
//     bandwidth: 450 GB/s        # per GPU, per direction
//     latency: 0.7 us
//     generation: nvlink4-nvswitch3   # selects collective tuning (models/collectives/tuning)
//     in_switch_reduction: true # NVLS (NVSwitch gen3+)
//   pcie: {generation: 5, bandwidth: 63 GB/s, latency: 0.5 us, gpus_per_switch: 2}
//   cpu: {sockets: 2, cores_per_socket: 56, model: ..., inter_socket_bandwidth: 120 GB/s}
//   host_memory: 2 TB
//   nics: {count: 8, model: cx7-ndr400}
//   storage: {read_bandwidth: 25 GB/s}
//   sources: [...]
// A NIC file: name, bandwidth (line rate, e.g. "400 Gb/s"), latency, fabric
// (infiniband|roce|ethernet), generation (ib-edr|ib-hdr|ib-ndr|ib-xdr|roce), sources.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace stacksim::hw {

struct NicSpec {
  std::string name;
  double bandwidth_Bps = 0;  // per direction
  double latency_s = 0;
  std::string fabric;        // infiniband | roce | ethernet
  std::string generation;    // ib-hdr, ib-ndr, roce, ...
};

struct NodeSpec {
  std::string name;
  std::string gpu;
  int gpus_per_node = 8;
  std::string intra_type = "nvswitch";  // nvswitch | pcie
  double intra_bandwidth_Bps = 0;       // per GPU per direction (NVLink); 0 for pcie nodes
  double intra_latency_s = 0;
  std::string intra_generation;         // collective tuning key
  bool in_switch_reduction = false;
  int pcie_generation = 4;
  double pcie_bandwidth_Bps = 0;        // x16 per direction
  double pcie_latency_s = 0;
  int gpus_per_pcie_switch = 2;
  int cpu_sockets = 2;
  int cores_per_socket = 64;
  std::string cpu_model;
  double inter_socket_Bps = 0;
  double host_memory_bytes = 0;
  int nics = 8;
  std::string nic;                      // NIC catalogue name
  double storage_read_Bps = 0;
  std::string file;                     // where it was read
};

class NodeCatalog {
 public:
  // Reads <dir>/nodes/*.yaml and <dir>/nics/*.yaml (InputError on any bad file).
  static NodeCatalog load_dir(const std::string& hardware_dir);
  const NodeSpec& node(const std::string& name) const;  // InputError with the nearest name
  const NicSpec& nic(const std::string& name) const;
  std::vector<std::string> node_names() const;
  std::vector<std::string> nic_names() const;

 private:
  std::map<std::string, NodeSpec> nodes_;
  std::map<std::string, NicSpec> nics_;
};

std::string default_hardware_dir();  // STACKSIM_HARDWARE_DIR or the source tree's models/hardware

}  // namespace stacksim::hw
