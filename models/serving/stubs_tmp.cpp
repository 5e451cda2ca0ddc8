// Placeholder bodies while the simulator is written (removed by the implementation).
#include <stdexcept>

#include "models/serving/serving.hpp"

namespace stacksim::serving {
ServingResult simulate_serving(const ServingConfig&, const Workload&, const workload::ModelConfig&,
                               const ServingHardware&, const Slo&, const SimOptions&) {
  throw std::logic_error("simulate_serving: not implemented yet");
}
}  // namespace stacksim::serving
