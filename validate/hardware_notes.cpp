#include "validate/hardware_notes.hpp"

#include <algorithm>
#include <cmath>

namespace stacksim::validate {

std::string nic_rate_note(const hw::NicSpec& nic, double gbps) {
  if (std::abs(nic.bandwidth_Bps * 8 / 1e9 - gbps) <= 0.5) return "";
  return "hardware.inter_node.nic_gbps " + std::to_string(static_cast<long long>(std::llround(gbps))) +
         ": the catalogue's nearest, " + nic.name;
}

RackNics rack_nics_from_tray(int tray_nics, int tray_gpus, int rack_gpus) {
  const int nics = std::max(1, tray_nics * rack_gpus / tray_gpus);
  return {nics, "hardware.inter_node.nics_per_node: " + std::to_string(nics) + " (the stated " +
                    std::to_string(tray_nics) + " per " + std::to_string(tray_gpus) + "-GPU tray, for the rack's " +
                    std::to_string(rack_gpus) + " GPUs)"};
}

}  // namespace stacksim::validate
