// Server (node) and NIC profiles, read from models/hardware/nodes/*.yaml and nics/*.yaml: one
// file per item, every figure with its source in the file (specs.yaml ids where it has them,
// "assumption" where nobody published one). Users add hardware by adding a file.
//
// Node file schema (quantities are unit strings; GB/s is decimal, as in every vendor source):
//   name: dgx-h100                 # catalogue name (unique)
//   gpu: H100-SXM5-80GB            # default GPU, canonical name (shared/validation/README.md)
//   gpus_per_node: 8
//   intra_node:                    # GPU-to-GPU fabric inside the node
//     type: nvswitch               # nvswitch: every GPU has one port to a non-blocking switch
//                                  # nvlink: direct GPU-GPU links inside groups (bridges, meshes)
//                                  # xgmi: AMD Infinity Fabric, direct links (a full mesh by default)
//                                  # pcie: no NVLink; peers cross PCIe switches (and the CPUs)
//     bandwidth: 450 GB/s          # per GPU, per direction (nvswitch, nvlink, xgmi; absent for pcie)
//     latency: 0.7 us
//     generation: nvlink4-nvswitch3   # nvlink2-nvswitch1 | nvlink3-nvswitch2 | nvlink4-nvswitch3 |
//                                     # nvlink5-nvswitch4 | xgmi3 | pcie: selects collective tuning
//     in_switch_reduction: true    # NVLS (NVSwitch gen3 and later)
//     group_size: 2                # nvlink / xgmi: GPUs per fully connected group (nvlink default 2 =
//                                  # bridged pairs, xgmi default gpus_per_node); a GPU's bandwidth
//                                  # is split evenly over its peers
//   pcie:
//     generation: 5
//     bandwidth: 63 GB/s           # x16, per direction
//     latency: 0.5 us
//     gpus_per_switch: 2           # GPUs behind one PCIe switch
//     switches_per_socket: 2       # PCIe switches under each CPU socket
//   cpu: {sockets: 2, cores_per_socket: 56, model: ..., inter_socket_bandwidth: 120 GB/s,
//         memory_bandwidth: 307.2 GB/s,        # per socket, the DRAM channels' peak (channels x
//                                              # transfer rate x 8 B); optional, needed by
//                                              # offload_optimizer (CPU Adam)
//         inter_socket_latency: 0.1 us,        # optional
//         threads_per_core: 2}                 # optional SMT, default 1
//   host_memory: 2 TB
//   nics: {count: 8, model: cx7-ndr400}        # compute NICs; model = NIC catalogue name
//   storage: {local_read_bandwidth: 25 GB/s, local_write_bandwidth: 12 GB/s, latency: 10 us}
//                                               # node-local NVMe; write and latency optional
//   sources: [...]                              # where each figure comes from
//   notes: "..."                                # which figures are assumptions
//
// NIC file schema: name (e.g. cx7-ndr400), bandwidth (line rate, e.g. "400 Gb/s"), latency,
// fabric (infiniband | roce | ethernet), generation (ib-edr | ib-hdr | ib-ndr | ib-xdr | roce:
// selects collective tuning), sources, notes.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace stacksim::hw {

class GpuCatalog;

struct NicSpec {
  std::string name;
  double bandwidth_Bps = 0;  // per direction
  double latency_s = 0;
  std::string fabric;      // infiniband | roce | ethernet
  std::string generation;  // ib-hdr, ib-ndr, roce, ... (selects collective tuning)
  std::vector<std::string> sources;
  std::string file;  // where it was read
};

struct NodeSpec {
  std::string name;
  std::string gpu;
  int gpus_per_node = 8;
  std::string intra_type = "nvswitch";  // nvswitch | nvlink | xgmi | pcie
  double intra_bandwidth_Bps = 0;       // per GPU per direction (NVLink); 0 for pcie nodes
  double intra_latency_s = 0;
  std::string intra_generation;  // collective tuning key
  bool in_switch_reduction = false;
  int nvlink_group_size = 0;  // nvlink / xgmi nodes: GPUs per fully connected group
  // GPUs joined by direct links in groups of nvlink_group_size (no switch): nvlink or xgmi.
  bool direct_links() const { return intra_type == "nvlink" || intra_type == "xgmi"; }
  int pcie_generation = 4;
  double pcie_bandwidth_Bps = 0;  // x16 per direction
  double pcie_latency_s = 0;
  int gpus_per_pcie_switch = 2;
  int pcie_switches_per_socket = 2;
  int cpu_sockets = 2;
  int cores_per_socket = 64;
  int threads_per_core = 1;  // SMT: logical CPUs per core (what CPU-usage figures count)
  std::string cpu_model;
  double inter_socket_Bps = 0;  // per direction
  double inter_socket_latency_s = 0;
  double socket_memory_Bps = 0;  // DRAM peak per socket; 0 = not in the node file
  double host_memory_bytes = 0;
  int nics = 8;
  std::string nic;              // NIC catalogue name
  double storage_read_Bps = 0;  // node-local NVMe; 0 = no local storage device
  double storage_write_Bps = 0;
  double storage_latency_s = 0;
  std::vector<std::string> sources;
  std::string file;  // where it was read
};

class NodeCatalog {
 public:
  // Reads <dir>/nodes/*.yaml and <dir>/nics/*.yaml (InputError naming file, line and key on any
  // bad file; a node naming an unknown NIC is an error too).
  static NodeCatalog load_dir(const std::string& hardware_dir);
  const NodeSpec& node(const std::string& name) const;  // InputError with the nearest name
  const NicSpec& nic(const std::string& name) const;
  std::vector<std::string> names() const;       // node types, sorted
  std::vector<std::string> node_names() const;  // the same (the name the CLI listing uses)
  std::vector<std::string> nic_names() const;   // sorted
  // The NIC a stated fabric and line rate describe: InfiniBand's (null: InfiniBand, as DGX and
  // HGX clusters), or RoCE's for roce and ethernet (AWS's EFA only by its instance type), at that
  // rate, else at the nearest rate of the family.
  const NicSpec& nic_for(const std::string& fabric, double gbps) const;

 private:
  std::map<std::string, NodeSpec> nodes_;
  std::map<std::string, NicSpec> nics_;
};

std::string default_hardware_dir();  // STACKSIM_HARDWARE_DIR or the source tree's models/hardware

// The catalogues at default_hardware_dir(), loaded once per process (thread-safe function-local
// statics): every command, validator and name lookup reads the same ones.
const GpuCatalog& bundled_gpus();
const NodeCatalog& bundled_nodes();

// The node type (models/hardware/nodes) a canonical GPU name (validation README) runs in; names that
// leave the memory size open ("A100-SXM4") get the 80 GB system. Throws std::runtime_error for a GPU
// without one.
std::string node_type_for_gpu(const std::string& gpu);

// The catalogue profile a GPU name stands for (GpuCatalog::resolve over bundled_gpus(): "H100",
// "NVIDIA H100 80GB HBM3" -> H100-SXM5-80GB); the name as written if none.
std::string canonical_gpu_name(const std::string& gpu);

}  // namespace stacksim::hw
