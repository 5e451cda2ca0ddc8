// Predicts the `gemm` and `memory` cases of a validation file with the kernel model.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

namespace stacksim::compute {

struct KernelCaseResult {
  std::string metric;
  double predicted = 0, measured = 0;
  std::string error;  // not buildable, and why
};

KernelCaseResult predict_kernel_case(const YAML::Node& c);

}  // namespace stacksim::compute
