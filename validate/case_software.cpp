// The case's software: its stack's catalogue behaviours (stacks/*.yaml), the era its GPU implies
// (stacks/eras.yaml), and what PyTorch's attention dispatch prefers by release.
#include "validate/case_policy.hpp"

#include "models/hardware/gpu_spec.hpp"
#include "services/stack_profile.hpp"

namespace stacksim::analysis::case_policy {

// Software generation: Hopper-era runs use Megatron-Core/NeMo (sequence parallelism with TP, the
// distributed optimizer, fused attention, async TP backward by default); Volta/Ampere-era runs
// used Megatron-LM, which had none of these by default. The GPU is the proxy: the parts launched
// before 2022 (V100, A100, AMD's MI250X, whose published runs used Megatron-DeepSpeed); not the
// A800, a 2022-23 export part.
bool volta_ampere_era(const std::string& gpu) {
  return gpu.rfind("V100", 0) == 0 || gpu.rfind("A100", 0) == 0 || gpu.rfind("MI250", 0) == 0;
}

// A behaviour of the case's stack as the catalogue states it (stacks/<family>.yaml): the entry its
// software block names, else its GPU era's (stacks/eras.yaml); "" when the entry does not say.
// What a source's era or framework means for an unstated knob lives there, not here.
std::string stack_behaviour(const YAML::Node& c, const std::string& gpu, const char* key) {
  const StackCatalog& stacks = bundled_stacks();
  const YAML::Node sw = c["software"];
  std::string framework, version;
  int year = has(sw, "year") ? get<int>(sw, "year") : 0;
  if (has(sw, "framework")) {
    framework = get<std::string>(sw, "framework");
    if (has(sw, "version")) version = get<std::string>(sw, "version");
  } else {
    const hw::GpuCatalog& gpus = hw::bundled_gpus();
    const auto era = stacks.era_default(gpus.has(gpu) ? gpus.get(gpu).architecture : "");
    framework = era.first;
    if (!year) year = era.second;
  }
  const StackFamily* family = stacks.family(framework);
  if (!family) return "";
  const StackEntry* entry = stacks.entry(*family, version, year);
  if (!entry && !version.empty()) entry = stacks.entry(*family, "", year);  // a version not catalogued: its year's
  if (!entry || !entry->behaviours || !entry->behaviours[key] || !entry->behaviours[key]["value"]) return "";
  return entry->behaviours[key]["value"].as<std::string>();
}

// The source counts the causal attention core at half (workload::AttentionCount::CausalHalf): its
// stack's catalogue entry says flop_count: causal_half (Megatron-LM's throughput log since 2025,
// Megatron-Bridge's performance scripts). Older Megatron-LM, NeMo 1.x/24.x and the papers count
// the full s x s score matrix (the default).
bool counts_causal_attention_half(const YAML::Node& c, const std::string& gpu) {
  return stack_behaviour(c, gpu, "flop_count") == "causal_half";
}

// PyTorch's scaled_dot_product_attention prefers cuDNN's fused attention over its FlashAttention-2
// backend on sm90 and sm100 from 2.9 (pytorch#162073, Sept 2025), and on sm103 (Blackwell Ultra)
// from 2.10 (pytorch#170800, Dec 2025).
bool sdpa_prefers_cudnn(int pytorch_release, const hw::GpuSpec& g) {
  if (g.architecture == "hopper") return pytorch_release >= 209;
  if (g.architecture != "blackwell") return false;
  const bool ultra = g.name.rfind("GB300", 0) == 0 || g.name.rfind("B300", 0) == 0;
  return pytorch_release >= (ultra ? 210 : 209);
}

// The case's software block as the scenario's (framework, version, year), or, where the source
// does not say, the stack of its GPU's era (stacks/eras.yaml). A version the catalogue does not
// list is left out (the year chooses the entry) and said so.
YAML::Node case_software(const YAML::Node& c, const std::string& gpu, std::vector<std::string>& defaults) {
  const YAML::Node sw = c["software"];
  const StackCatalog& stacks = bundled_stacks();
  YAML::Node out;
  if (has(sw, "framework")) {
    const std::string framework = get<std::string>(sw, "framework");
    const StackFamily* family = stacks.family(framework);
    if (!family) throw std::runtime_error("software.framework '" + framework + "' is not in the stack catalogue");
    out["framework"] = framework;
    const int year = has(sw, "year") ? get<int>(sw, "year") : 0;
    if (year) out["year"] = year;
    if (has(sw, "version")) {
      const std::string version = get<std::string>(sw, "version");
      if (stacks.entry(*family, version, year))
        out["version"] = version;
      else
        defaults.push_back("software.version: '" + version + "' is not in the " + framework + " catalogue; the " +
                           (year ? "year" : "newest entry") + " chooses the profile");
    }
    return out;
  }
  const hw::GpuCatalog& gpus = hw::bundled_gpus();
  const std::string arch = gpus.has(gpu) ? gpus.get(gpu).architecture : "";
  const auto [framework, year] = stacks.era_default(arch);
  out["framework"] = framework;
  if (has(sw, "year"))
    out["year"] = get<int>(sw, "year");
  else if (year)
    out["year"] = year;
  defaults.push_back("software: " + framework + (out["year"] ? " " + out["year"].as<std::string>() : std::string()) +
                     " (the source does not say: the stack of the GPU's era, stacks/eras.yaml)");
  return out;
}

}  // namespace stacksim::analysis::case_policy
