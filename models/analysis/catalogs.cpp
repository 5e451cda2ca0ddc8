#include "models/analysis/catalogs.hpp"

namespace stacksim::analysis {

const Catalogs& Catalogs::bundled() {
  static const Catalogs c{hw::GpuCatalog::load_dir(hw::default_hardware_dir()),
                          hw::NodeCatalog::load_dir(hw::default_hardware_dir())};
  return c;
}

}  // namespace stacksim::analysis
