// The software stack as data: a scenario's `software:` section (framework, version, year) resolved
// against the stack catalogue (stacks/<family>.yaml: one file per framework family, entries per
// version or era, each behaviour with its source) and the parameters fitted per family
// (stacks/fitted.yaml, written by `stacksim fit`). Unset = the reference stack (megatron-core,
// current), with which the hardware profiles were calibrated: no parameter changes anything.
//
//   software: {framework: deepspeed, version: "0.14", year: 2024}
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "config/yaml.hpp"

namespace stacksim::analysis {

// What a family's stack does to the hardware's rates, fitted under leave-one-source-out CV. The
// identity (1, 0, 1) is the reference stack; each is applied in the simulator as it reads:
struct StackParameters {
  double compute_efficiency = 1;  // GPU FLOP and HBM rates relative to the hardware profile
  double kernel_gap_s = 0;        // seconds added to every GPU kernel (eager dispatch, no fusion)
  double comm_efficiency = 1;     // NVLink and network bandwidth relative to the hardware profile
  bool identity() const { return compute_efficiency == 1 && kernel_gap_s == 0 && comm_efficiency == 1; }
};

// 80 % split-conformal band of log(measured / predicted) step time from the family's CV residuals.
struct StackBand {
  double lo_log = 0, hi_log = 0;            // 10th and 90th percentile
  double pair_lo_log = 0, pair_hi_log = 0;  // the same for the ratio of two rows of one source
  bool known = false;
};

struct FamilyFit {
  StackParameters params;
  StackBand band;
  int rows = 0, sources = 0;
  bool shrunk = false;            // fewer than three sources: pulled toward the global fit
  std::vector<std::string> gpus;  // GPU architectures among its rows
  int max_gpus = 0;               // the largest job among its rows
  double cv_mape_pct = 0, fit_mape_pct = 0;
};

struct StackFit {
  FamilyFit global;
  std::map<std::string, FamilyFit> families;
  std::string file;
  const FamilyFit& of(const std::string& family) const;  // the global fit for a family not fitted
};

struct StackEntry {
  std::string profile;                // e.g. "nemo-24.x"
  std::vector<std::string> versions;  // version prefixes this entry covers ("24.", "ngc23")
  int first_year = 0, last_year = 9999;
  YAML::Node behaviours;  // documented behaviours, each {value, source}
};

struct StackFamily {
  std::string name, description, file;
  std::vector<StackEntry> entries;  // oldest first
};

class StackCatalog {
 public:
  static StackCatalog load_dir(const std::string& dir);
  const StackFamily* family(const std::string& name) const;
  std::vector<std::string> names() const;
  // The entry for a version (prefix match), else for a year, else the newest; nullptr when a
  // version is given and no entry covers it.
  const StackEntry* entry(const StackFamily& f, const std::string& version, int year) const;
  // The stack a case without a software: block ran, from its GPU's architecture (stacks/eras.yaml).
  std::pair<std::string, int> era_default(const std::string& architecture) const;
  const std::string& dir() const { return dir_; }

 private:
  std::map<std::string, StackFamily> families_;
  std::map<std::string, std::pair<std::string, int>> eras_;  // architecture -> framework, year
  std::pair<std::string, int> era_fallback_{"megatron-core", 0};
  std::string dir_;
};

struct SoftwareStack {
  bool given = false;  // the scenario had a software: section
  std::string framework = "megatron-core", version, profile = "megatron-core-current (reference)";
  int year = 0;
  std::string fitted;      // the fitted entry used: the family, or "global"
  StackParameters params;  // identity when not given
  StackBand band;
  bool band_widened = false;
};

std::string default_stacks_dir();
const StackCatalog& bundled_stacks();
// stacks/fitted.yaml (STACKSIM_STACK_FIT overrides); an empty fit when the file is absent.
const StackFit& bundled_stack_fit();
StackFit load_stack_fit(const std::string& path);
void write_stack_fit(const StackFit& fit, const std::string& command, const std::string& path);

// Reads `software:` (null -> the reference stack). Unknown framework or version -> InputError
// naming the key and listing the catalogue.
SoftwareStack parse_software(const config::Node& n);
// The band as it applies to a job: widened for a stack not fitted, a GPU architecture or a scale
// beyond the family's rows.
StackBand band_for(const SoftwareStack& s, const std::string& architecture, int num_gpus, bool* widened);

nlohmann::json software_json(const SoftwareStack& s);

}  // namespace stacksim::analysis
