// Collective tuning per hardware generation: NCCL's protocols (start-up latency, bandwidth cap or
// link efficiency) and in-switch reduction efficiency, intra-node; achievable fraction of the NIC
// line rate, inter-node. One set per generation, the same for every job on that hardware.
//
// Sources (see also ../shared/hardware/specs.yaml measured_anchors.nccl_collectives):
//  - nvlink4-nvswitch3 (H100/H200): NVLS all-reduce busbw ~480 GB/s = algbw ~275 on 450 GB/s
//    ports (NCCL maintainers, NVIDIA/nccl-tests#212: efficiency 0.61); ring ~370 of 450 (0.82, same
//    thread). Protocol latencies fitted once to the Azure ND H100 v5 nccl-tests all-reduce curve
//    (LL below 64 KiB: 25 us and ~7 GB/s bus; Simple above: 38 us).
//  - nvlink3-nvswitch2 (A100): ring busbw 231.6 of 300 (0.772) at 8 GiB; protocol latencies and
//    the LL cap fitted once to the Azure ND A100 v4 all-reduce curve (the Simple protocol shows
//    ~200 us of fixed cost there).
//  - nvlink5-nvswitch4 (B200): ring 682.2 and NVLS 838.0 GB/s busbw at 8 GiB on 8x B200
//    (ml-engineering network chapter, MLE_NET): 0.758 and 838/1.75/900 = 0.532; latencies as H100.
//  - nvlink2-nvswitch1 (V100, DGX-2) and pcie: no measurement in the sources; assumed like A100.
//  - sm_fraction 0.15: NCCL runs 16-32 channels, one thread block (SM) each, on 132-SM Hoppers and
//    108-SM Amperes, i.e. 12-30% of the SMs while a collective is in flight (assumption: 0.15).
//  - NICs: 192 GB/s all-reduce busbw on DGX A100 with 8x HDR 200 Gb/s (NVIDIA, nccl#812): 0.96;
//    46-48 GB/s per NDR 400 NIC (nccl-tests#290): 0.94. EDR/XDR/RoCE: assumptions.
#include <stdexcept>

#include "models/collectives/collective.hpp"
#include "models/hardware/node_spec.hpp"

namespace stacksim::coll {

CommTuning tuning_for(const hw::NodeSpec& node, const hw::NicSpec& nic) {
  CommTuning t;
  t.intra_generation = node.intra_generation;
  t.nic_generation = nic.generation;
  const std::string& g = node.intra_generation;
  if (g == "nvlink4-nvswitch3") {
    t.protocols = {{"LL", 25e-6, 7e9, 1.0}, {"Simple", 38e-6, 0, 0.82}};
    t.nvls_efficiency = node.in_switch_reduction ? 0.61 : 0;
  } else if (g == "nvlink5-nvswitch4") {
    t.protocols = {{"LL", 25e-6, 14e9, 1.0}, {"Simple", 38e-6, 0, 0.758}};
    t.nvls_efficiency = node.in_switch_reduction ? 0.532 : 0;
  } else if (g == "nvlink3-nvswitch2") {
    t.protocols = {{"LL", 42e-6, 150e9, 1.0}, {"Simple", 198e-6, 0, 0.772}};
  } else if (g == "nvlink2-nvswitch1") {
    t.protocols = {{"LL", 42e-6, 60e9, 1.0}, {"Simple", 60e-6, 0, 0.80}};
  } else if (g == "pcie") {
    t.protocols = {{"LL", 30e-6, 5e9, 1.0}, {"Simple", 40e-6, 0, 0.80}};
  } else {
    throw std::invalid_argument("no collective tuning for intra-node generation '" + g + "'");
  }
  const std::string& n = nic.generation;
  if (n == "ib-hdr") t.network_efficiency = 0.96;
  else if (n == "ib-ndr" || n == "ib-xdr") t.network_efficiency = 0.94;
  else if (n == "ib-edr") t.network_efficiency = 0.90;
  else if (n == "roce") t.network_efficiency = 0.90;
  else throw std::invalid_argument("no collective tuning for NIC generation '" + n + "'");
  // Extra start-up of a call whose group spans nodes: network round trips of the first step.
  t.network_latency_s = 4 * (nic.latency_s + 0.6e-6);
  return t;
}

}  // namespace stacksim::coll
