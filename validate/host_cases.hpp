// Host-side validation cases (docs/validation.md): the data-loader cases (a CPU-bound PyTorch
// DataLoader feeding a GPU step, on the engine host pipeline) and nvbandwidth's host <-> device
// copies.
#pragma once
#include <yaml-cpp/yaml.h>

#include <vector>

#include "validate/validation.hpp"

namespace stacksim::analysis {

// The data-loader cases (a CPU-bound loader feeding a GPU step; docs/validation.md). `all` is the
// whole case file: the loader's CPU cost per sample is measured in a sibling run of the same job.
void predict_dataloader_case(const YAML::Node& c, const std::vector<YAML::Node>& all, CaseOutcome& out);

// Host <-> device copy cases (kind memory, op h2d / d2h; nvbandwidth's copy-engine tests, which use
// pinned host buffers): the node's PCIe x16 rate at the pinned-copy efficiency the host pipeline
// uses (models/host/host.hpp), one direction. Peer (d2d) copies are refused with the reason.
void predict_host_copy_case(const YAML::Node& c, CaseOutcome& out);

}  // namespace stacksim::analysis
