// Turning a published training case (stacksim-validation/1) into a scenario, with ONE global
// policy for every field the source left null (validation README: "One global default policy for
// unknowns"). The policy is documented in docs/validation.md and every default applied is listed
// in the case's output, so its effect can be audited. Nothing here looks at a case's id or source.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "models/analysis/validation.hpp"

namespace stacksim::analysis {

// The scenario YAML a training case describes, with `defaults` naming each policy decision.
// Throws std::runtime_error when a field the model cannot do without is null.
YAML::Node training_case_scenario(const YAML::Node& c, std::vector<std::string>& defaults);

// Predicts the case's primary metric: step time where published (or derived), else the
// published throughput/FLOP-rate metric computed the source's way.
void predict_training_case(const YAML::Node& c, CaseOutcome& out);

// The data-loader cases (a CPU-bound loader feeding a GPU step; docs/validation.md). `all` is the
// whole case file: the loader's CPU cost per sample is measured in a sibling run of the same job.
void predict_dataloader_case(const YAML::Node& c, const std::vector<YAML::Node>& all, CaseOutcome& out);

// Host <-> device copy cases (kind memory, op h2d / d2h; nvbandwidth's copy-engine tests, which use
// pinned host buffers): the node's PCIe x16 rate at the pinned-copy efficiency the host pipeline
// uses (models/analysis/host.hpp), one direction. Peer (d2d) copies are refused with the reason.
void predict_host_copy_case(const YAML::Node& c, CaseOutcome& out);

}  // namespace stacksim::analysis
