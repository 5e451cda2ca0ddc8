// The last check of a simulated step: every number it reports is finite and physical (MFU at most
// 100 %, goodput not negative). A result that is not names the result field and the section of the
// scenario whose values drove it (an InputError, exit 2): never inf or NaN in an output.
#pragma once
#include "services/training.hpp"

namespace stacksim::analysis {

void require_physical_result(const TrainingSetup& setup, const TrainingResult& r);

}  // namespace stacksim::analysis
