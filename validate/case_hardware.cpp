// The case's hardware: the catalogue GPU, the node type, GPUs per node, NICs and fabric.
#include "validate/case_policy.hpp"

#include <algorithm>

#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "validate/hardware_notes.hpp"

namespace stacksim::analysis::case_policy {

// The catalogue part of the case's GPU. An H100 SXM whose case text (notes, system) says HBM2e is
// the 96 GB HBM2e, 500 W part of Meta's Grand Teton hosts (the SXM5 80GB is HBM3; torchtitan's
// benchmark pages describe that part), not the 80 GB SXM5 the name alone would give.
std::string catalogue_gpu(const YAML::Node& c, const std::string& gpu, std::vector<std::string>& defaults) {
  const bool h100_sxm = gpu.rfind("H100-SXM", 0) == 0;
  const std::string system = has(c["hardware"], "system") ? get<std::string>(c["hardware"], "system") : "";
  const std::string text = lowercase(notes_of(c) + " " + system);
  if (h100_sxm && gpu != "H100-SXM5-96GB-HBM2e" && text.find("hbm2e") != std::string::npos) {
    defaults.push_back("hardware.gpu: H100-SXM5-96GB-HBM2e (the case text says its H100 has HBM2e)");
    return "H100-SXM5-96GB-HBM2e";
  }
  return gpu;
}

// The case's GPU (catalogue part), its software era and its GPU count.
void read_gpus(CaseContext& x) {
  const YAML::Node& c = x.c;
  const YAML::Node& hw = x.hw;
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  std::vector<std::string>& defaults = x.defaults;
  const std::string& gpu = x.gpu;
  int& gpus = x.gpus;
  if (!has(hw, "gpu")) throw std::runtime_error("hardware.gpu is null");
  const std::string written = get<std::string>(hw, "gpu");
  const std::string profile = hw::canonical_gpu_name(written);
  if (profile != written) defaults.push_back("hardware.gpu: '" + written + "' is the catalogue's " + profile);
  x.gpu = catalogue_gpu(c, profile, defaults);
  // The era proxy reads the GPU's generation as its software's (Megatron-LM of 2020-22 on V100/A100/
  // MI250X) unless the notes name today's stack: Megatron-Core, Transformer Engine.
  static const std::regex modern_stack(
      R"(megatron[- ]core|\bmcore\b|transformer[ _]engine|transformer_impl\W{0,4}transformer_engine)",
      std::regex::icase);
  x.old_gen = volta_ampere_era(gpu) && !said_of_this_run(case_notes, modern_stack);
  // GPUs not stated but every parallel degree is: their product.
  if (has(hw, "num_gpus")) {
    gpus = positive<int>(hw, "num_gpus");
  } else {
    gpus = 1;
    for (const char* k : {"tp", "pp", "dp"}) {
      if (!p || !has(p, k))
        throw std::runtime_error("hardware.num_gpus is null (and parallelism.tp/pp/dp do not all say it)");
      gpus *= positive<int>(p, k);
    }
    if (has(p, "cp")) gpus *= positive<int>(p, "cp");
    defaults.push_back("hardware.num_gpus: " + std::to_string(gpus) + " (tp * pp * dp * cp)");
  }
}

// The node type (a named cloud instance, the HGX 4-GPU board, an NVLink rack) and how the GPUs fill
// nodes.
void cluster_nodes(CaseContext& x, YAML::Node& cl) {
  const YAML::Node& hw = x.hw;
  std::vector<std::string>& defaults = x.defaults;
  const std::string& gpu = x.gpu;
  int& gpus = x.gpus;
  int& per_node = x.per_node;
  bool& rack_scale = x.rack_scale;
  int& tray_gpus = x.tray_gpus;
  cl["node"] = node_type_for_gpu(gpu);
  // A named cloud instance is its own node type (its NICs differ from the DGX's): AWS p4d / p4de.
  if (has(hw, "system")) {
    const std::string system = lowercase(get<std::string>(hw, "system"));
    const std::string instance = system.find("p4de") != std::string::npos  ? "aws-p4de"
                                 : system.find("p4d") != std::string::npos ? "aws-p4d"
                                                                           : "";
    if (!instance.empty() && hw::bundled_nodes().node(instance).gpu == gpu) {
      cl["node"] = instance;
      defaults.push_back("cluster.node: " + instance + " (the system names the AWS instance)");
    }
  }
  // Four A100 SXM4 per node: the HGX 4-GPU board (JUWELS Booster, Perlmutter, Polaris), its GPUs
  // joined all-to-all by NVLink without NVSwitch; unless the case says NVSwitch.
  const std::string intra = has(hw, "intra_node") ? lowercase(get<std::string>(hw, "intra_node")) : "";
  if (gpu.rfind("A100-SXM4", 0) == 0 && has(hw, "gpus_per_node") && positive<int>(hw, "gpus_per_node") == 4 &&
      intra != "nvswitch" && cl["node"].as<std::string>().rfind("aws-", 0) != 0) {
    cl["node"] = "hgx-a100-4gpu";
    defaults.push_back("cluster.node: hgx-a100-4gpu (four A100 SXM4 per node: the HGX 4-GPU board, NVLink all-to-all)");
  }
  cl["gpu"] = gpu;
  per_node = hw::bundled_nodes().node(cl["node"].as<std::string>()).gpus_per_node;
  rack_scale = per_node > 16;  // an NVL72 rack modelled as one NVLink node
  tray_gpus = 0;               // the stated GPUs per node, where they are a tray's
  if (has(hw, "gpus_per_node") && rack_scale && positive<int>(hw, "gpus_per_node") < per_node) {
    tray_gpus = positive<int>(hw, "gpus_per_node");
    defaults.push_back("hardware.gpus_per_node: " + std::to_string(positive<int>(hw, "gpus_per_node")) +
                       " GPUs per tray, in one " + std::to_string(per_node) + "-GPU NVLink rack");
  } else if (has(hw, "gpus_per_node")) {
    per_node = positive<int>(hw, "gpus_per_node");
    cl["gpus_per_node"] = per_node;
  } else {
    defaults.push_back("hardware.gpus_per_node: the node type's (" + std::to_string(per_node) + ")");
  }
  if (gpus < per_node) cl["gpus_per_node"] = gpus;  // a single partial node
  int nodes = std::max(1, (gpus + per_node - 1) / per_node);
  // GPUs that do not fill whole nodes: spread evenly over the fewest nodes that hold them; NVLink
  // racks, partly filled in whole trays (1,024 GB200 as 16 racks of 64), over the fewest racks
  // that take an equal number of trays each.
  if (rack_scale && gpus > per_node && gpus % per_node != 0) {
    const int tray = tray_gpus > 0 ? tray_gpus : 4;
    for (int n = nodes; n <= gpus / tray; ++n)
      if (gpus % n == 0 && (gpus / n) % tray == 0) {
        nodes = n;
        break;
      }
  }
  cl["nodes"] = nodes;
  if (gpus > per_node && gpus % per_node != 0) {
    if (gpus % nodes != 0)
      throw std::runtime_error("hardware.num_gpus (" + std::to_string(gpus) + ") does not spread evenly over " +
                               std::to_string(nodes) + " nodes of up to " + std::to_string(per_node) + " GPUs");
    cl["gpus_per_node"] = gpus / nodes;
    defaults.push_back("cluster: " + std::to_string(gpus) + " GPUs as " + std::to_string(nodes) + " nodes of " +
                       std::to_string(gpus / nodes) + " (not whole nodes of " + std::to_string(per_node) + ")");
  }
}

// The NICs (rate, fabric family, count per node) and the fabric.
void cluster_network(CaseContext& x, YAML::Node& cl) {
  const YAML::Node& hw = x.hw;
  std::vector<std::string>& defaults = x.defaults;
  int& per_node = x.per_node;
  bool& rack_scale = x.rack_scale;
  int& tray_gpus = x.tray_gpus;
  const YAML::Node inter = hw["inter_node"];
  if (has(inter, "nic_gbps")) {
    const int gbps = positive<int>(inter, "nic_gbps");
    const hw::NicSpec& nic =
        hw::bundled_nodes().nic_for(has(inter, "fabric") ? get<std::string>(inter, "fabric") : "", gbps);
    if (const std::string note = validate::nic_rate_note(nic, gbps); !note.empty()) defaults.push_back(note);
    cl["nic"] = nic.name;
  } else if (const hw::NicSpec& own =
                 hw::bundled_nodes().nic(hw::bundled_nodes().node(cl["node"].as<std::string>()).nic);
             has(inter, "fabric") &&
             (get<std::string>(inter, "fabric") == "infiniband") != (own.fabric == "infiniband")) {
    // A stated fabric family other than the node type's (RoCE instead of a DGX's InfiniBand): the
    // catalogue NIC of that family at the node type's rate.
    const double gbps = own.bandwidth_Bps * 8 / 1e9;
    const hw::NicSpec& nic = hw::bundled_nodes().nic_for(get<std::string>(inter, "fabric"), gbps);
    cl["nic"] = nic.name;
    defaults.push_back("hardware.inter_node.nic_gbps: the node type's rate on the stated fabric (" + nic.name + ")");
  } else {
    defaults.push_back("hardware.inter_node.nic_gbps: the node type's NIC");
  }
  const hw::NodeSpec& node_type = hw::bundled_nodes().node(cl["node"].as<std::string>());
  if (has(inter, "nics_per_node") && tray_gpus > 0) {
    // Stated beside a tray's GPU count, the NIC count is the tray's too.
    const auto rack = validate::rack_nics_from_tray(positive<int>(inter, "nics_per_node"), tray_gpus,
                                                    cl["gpus_per_node"] ? cl["gpus_per_node"].as<int>() : per_node);
    cl["nics_per_node"] = rack.nics;
    defaults.push_back(rack.note);
  } else if (has(inter, "nics_per_node")) {
    cl["nics_per_node"] = positive<int>(inter, "nics_per_node");
  } else if (!rack_scale && has(hw, "gpus_per_node") && positive<int>(hw, "gpus_per_node") < node_type.gpus_per_node) {
    // A server with fewer GPUs than the node type (a 4-GPU A100 node): the node type's NICs per
    // GPU, not all of its NICs for fewer GPUs.
    const int nics = std::max(1, node_type.nics * positive<int>(hw, "gpus_per_node") / node_type.gpus_per_node);
    cl["nics_per_node"] = nics;
    defaults.push_back("hardware.inter_node.nics_per_node: " + std::to_string(nics) +
                       " (the node type's NICs per GPU)");
  } else {
    defaults.push_back("hardware.inter_node.nics_per_node: the node type's NIC count");
  }
  YAML::Node fabric;
  fabric["topology"] = "fat_tree";
  fabric["oversubscription"] = 1.0;
  cl["fabric"] = fabric;
  defaults.push_back("fabric: non-blocking two-tier fat-tree");
}

YAML::Node cluster_section(CaseContext& x) {
  YAML::Node cl;
  cluster_nodes(x, cl);
  cluster_network(x, cl);
  return cl;
}

}  // namespace stacksim::analysis::case_policy
