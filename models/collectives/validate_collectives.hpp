// Predicts the `collective` cases of a validation file: the case's cluster is built from its
// hardware fields (node type from the GPU name; nulls filled by the global policy of
// docs/validation.md) and the collective is timed alone, nccl-tests style.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace stacksim::coll {

struct CollectiveCaseResult {
  std::string metric;
  double predicted = 0, measured = 0;
  std::string error;
  std::vector<std::string> defaults;
};

CollectiveCaseResult predict_collective_case(const YAML::Node& c);

}  // namespace stacksim::coll
