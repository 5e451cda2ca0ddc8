// The bundled hardware catalogue (models/hardware/), loaded once per process.
#pragma once
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"

namespace stacksim::analysis {

struct Catalogs {
  hw::GpuCatalog gpus;
  hw::NodeCatalog nodes;
  // Thread-safe (a function-local static). The folder is STACKSIM_HARDWARE_DIR if set, else the
  // source tree's models/hardware.
  static const Catalogs& bundled();
};

}  // namespace stacksim::analysis
