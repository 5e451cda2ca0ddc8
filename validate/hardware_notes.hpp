// The audit notes a case's defaults carry when the harness reads its hardware: which catalogue
// NIC stands for a stated line rate, and how a rack-scale node's NICs follow from one tray.
#pragma once
#include <string>

#include "models/hardware/node_spec.hpp"

namespace stacksim::validate {

// "" when the NIC runs at the stated rate, else which nearest catalogue NIC was taken.
std::string nic_rate_note(const hw::NicSpec& nic, double gbps);

// A rack-scale NVLink node (NVL72) described by one tray: the tray's NICs per GPU for all the
// rack's GPUs (4 NICs per 4-GPU GB200 tray: 72 for the rack, not 4), with the case default's note.
struct RackNics {
  int nics;
  std::string note;
};
RackNics rack_nics_from_tray(int tray_nics, int tray_gpus, int rack_gpus);

}  // namespace stacksim::validate
