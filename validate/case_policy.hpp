// The training-case reader's parts (internal to validate/): the notes reader, the software era, and
// one function per section of the scenario a case describes (hardware, model, plan). Each section
// reads the case and the sections before it through a CaseContext and writes its part of the
// scenario, with every policy decision named in `defaults`. training_cases.cpp applies them in order.
#pragma once
#include <yaml-cpp/yaml.h>

#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "models/hardware/gpu_spec.hpp"
#include "models/workload/model_catalog.hpp"
#include "validate/training_cases.hpp"

namespace stacksim::analysis::case_policy {

// ---- the notes reader (case_notes.cpp)
// The FlashAttention generation a text names: flash, flash2, flash1, unfused, or "".
std::string flash_kernel(const std::string& text);
// `pattern` matches as a statement about this run (not advice, not one side of an alternative).
bool stated_for_this_run(const std::string& notes, const std::regex& pattern);
// `pattern` matches the lower-case notes outside a commented-out line.
bool set_not_commented_out(const std::string& low_notes, const std::regex& pattern);
// The notes name `term` (a framework or library) as used by this run.
bool notes_name(const std::string& notes, const std::string& term);
// Tied (true) or untied (false) embeddings as the notes say; nothing when they say neither or both.
std::optional<bool> notes_tied_embeddings(const std::string& notes);
// The integer after `phrase` in `text` (case-insensitive), or 0.
long long number_after(const std::string& text, const std::string& phrase);
// `pattern` matches in a clause that says something of this run (not hedged, not negated).
bool said_of_this_run(const std::string& notes, const std::regex& pattern, std::smatch* first = nullptr);
// The ZeRO stage the notes state for this run, or -1.
int zero_stage_said(const std::string& notes);
// The PyTorch release the notes state as major * 100 + minor, or 0.
int stated_pytorch_release(const std::string& low_notes);

// ---- the software era and the stack catalogue (case_software.cpp)
// The GPU's generation is Volta/Ampere (V100, A100, MI250X): the Megatron-LM era of 2020-22.
bool volta_ampere_era(const std::string& gpu);
// A behaviour of the case's stack as its catalogue entry states it ("" when it does not say).
std::string stack_behaviour(const YAML::Node& c, const std::string& gpu, const char* key);
// The source counts the causal attention core at half (its stack's flop_count: causal_half).
bool counts_causal_attention_half(const YAML::Node& c, const std::string& gpu);
// PyTorch's SDPA prefers cuDNN's fused attention on this GPU at this release.
bool sdpa_prefers_cudnn(int pytorch_release, const hw::GpuSpec& g);
// The case's software block as the scenario's, or the stack of its GPU's era.
YAML::Node case_software(const YAML::Node& c, const std::string& gpu, std::vector<std::string>& defaults);

// ---- what the case publishes (training_cases.cpp)
bool publishes_layer_time(const YAML::Node& c);
bool publishes_step_time(const YAML::Node& c);

// ---- the sections of the scenario
// What the sections share: the case, its notes, and what earlier sections decided.
struct CaseContext {
  CaseContext(const YAML::Node& case_node, std::vector<std::string>& defaults_out)
      : c(case_node),
        hw(c["hardware"]),
        m(c["model"]),
        p(c["parallelism"]),
        case_notes(notes_of(c)),
        low_notes(lowercase(case_notes)),
        defaults(defaults_out) {}
  const YAML::Node& c;
  const YAML::Node hw, m, p;
  const std::string case_notes, low_notes;
  std::vector<std::string>& defaults;
  YAML::Node s;  // the scenario being built
  // hardware (read_gpus, cluster_section)
  std::string gpu;
  bool old_gen = false;  // Volta/Ampere-era software
  int gpus = 0;
  int per_node = 0;         // GPUs per node as the cluster is built
  bool rack_scale = false;  // an NVL72-class rack modelled as one NVLink node
  int tray_gpus = 0;        // the stated GPUs per node, where they are a tray's
  // model (model_shape ...)
  YAML::Node mo;
  const workload::CatalogModel* named = nullptr;  // the catalogue entry the model's name names
  std::string from_catalogue, att;                // " (the catalogue's X)"; the attention text
  long long ffn = 0;
  // plan (plan_degrees ...)
  YAML::Node pl;
  int tp = 0, pp = 0, dp = 0, cp = 1, ep = 1;
  bool megatron_deepspeed = false, torchtitan = false, dualpipe = false;
  int torchtitan_vp = 0;
};

// case_hardware.cpp
std::string catalogue_gpu(const YAML::Node& c, const std::string& gpu, std::vector<std::string>& defaults);
void read_gpus(CaseContext& x);
void cluster_nodes(CaseContext& x, YAML::Node& cl);
void cluster_network(CaseContext& x, YAML::Node& cl);
YAML::Node cluster_section(CaseContext& x);

// case_model.cpp, case_model_layers.cpp
std::pair<long long, std::string> default_vocab(const std::string& name);
const workload::CatalogModel* named_catalogue_model(const YAML::Node& m);
YAML::Node with_catalogue_shape(const YAML::Node& c, std::vector<std::string>& defaults);
void moe_layers_from_text(const std::string& text, int layers, YAML::Node& moe, std::vector<std::string>& defaults);
void model_shape(CaseContext& x);
void model_architecture(CaseContext& x);
void attention_choice(CaseContext& x);
void moe_section(CaseContext& x);

// case_plan.cpp, case_plan_memory.cpp, case_plan_kernels.cpp
void pipeline_split(int layers, int pp, int stated_vp, bool hopper_era, int micro_batches, YAML::Node& pl,
                    std::vector<std::string>& defaults);
YAML::Node smallest_fitting_plan(const YAML::Node& c, std::vector<std::string>& defaults);
void plan_degrees(CaseContext& x);
void plan_tensor_parallel(CaseContext& x);
void plan_batch(CaseContext& x);
void plan_pipeline(CaseContext& x);
void plan_zero_precision(CaseContext& x);
void plan_grad_reduce(CaseContext& x);
void plan_sharding(CaseContext& x);
void plan_offload(CaseContext& x);
void plan_recompute(CaseContext& x);
void plan_fp8_mtp(CaseContext& x);
void plan_context_expert(CaseContext& x);
void plan_kernels(CaseContext& x);

// The scenario of one case (training_cases.cpp).
YAML::Node case_scenario(const YAML::Node& c, std::vector<std::string>& defaults);

}  // namespace stacksim::analysis::case_policy
