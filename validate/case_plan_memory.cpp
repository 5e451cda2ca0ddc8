// The case's plan, its memory side: ZeRO/FSDP sharding, precision, offload and recomputation.
#include "validate/case_policy.hpp"

#include <algorithm>
#include <sstream>

#include "models/workload/flops.hpp"

namespace stacksim::analysis::case_policy {

// ZeRO stage, precision, 8-bit optimizer state and activation offload.
void plan_zero_precision(CaseContext& x) {
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  std::vector<std::string>& defaults = x.defaults;
  const std::string& gpu = x.gpu;
  const bool old_gen = x.old_gen;
  YAML::Node& pl = x.pl;
  int& dp = x.dp;
  // DeepSpeed's bf16 path at ZeRO stage 0 is its BF16_Optimizer, which partitions the fp32 master
  // weights and Adam's state over the data-parallel ranks: ZeRO-1 in effect.
  const bool deepspeed = notes_name(case_notes, "DeepSpeed") || notes_name(case_notes, "Megatron-DeepSpeed");
  const bool bf16_case = has(p, "precision") && lowercase(get<std::string>(p, "precision")) == "bf16";
  if (has(p, "zero") && get<int>(p, "zero") == 0 && deepspeed && bf16_case && dp > 1) {
    pl["zero"] = 1;
    defaults.push_back("parallelism.zero: 1 (DeepSpeed's bf16 optimizer at stage 0 partitions the fp32 state over dp)");
  } else if (has(p, "zero")) {
    pl["zero"] = get<int>(p, "zero");
  } else if (const int stage = zero_stage_said(case_notes); dp > 1 && stage >= 0) {
    pl["zero"] = stage;
    defaults.push_back("parallelism.zero: " + std::to_string(stage) + " (the notes state ZeRO stage " +
                       std::to_string(stage) + ")");
  } else if (static const std::regex zero_named(R"(\bZeRO\b(?![- ]?(stage ?)?[0-9])|Zero Redundancy)"),
             zero_denied(R"((no|without) ZeRO\b)");
             dp > 1 && said_of_this_run(case_notes, zero_named) && !std::regex_search(case_notes, zero_denied)) {
    // ZeRO named without its stage: the least sharding that is ZeRO.
    pl["zero"] = 1;
    defaults.push_back("parallelism.zero: 1 (the notes name ZeRO without its stage)");
  } else {
    const int z = !old_gen && dp > 1 ? 1 : 0;
    pl["zero"] = z;
    defaults.push_back(z ? "parallelism.zero: 1 (Megatron-Core distributed optimizer on Hopper-era stacks)"
                         : "parallelism.zero: 0");
  }
  if (has(p, "precision")) {
    pl["precision"] = lowercase(get<std::string>(p, "precision"));
  } else if (
      static const std::regex fp16_said(
          R"(\b(dtype|torch_dtype|precision|mixed[-_ ]precision)\W{0,4}(torch\.)?(float16|fp16|half)\b|\bfp16\s*[=:]\s*true\b)",
          std::regex::icase);
      said_of_this_run(case_notes, fp16_said)) {
    // The notes state a 16-bit float precision setting: a config's dtype='float16', "fp16: true".
    pl["precision"] = "fp16";
    defaults.push_back("parallelism.precision: fp16 (the notes' configured dtype)");
  } else {
    const bool has_bf16 = gpu.rfind("V100", 0) != 0;
    pl["precision"] = has_bf16 ? "bf16" : "fp16";
    defaults.push_back(std::string("parallelism.precision: ") + (has_bf16 ? "bf16" : "fp16 (no bf16 on V100)"));
  }
  // bitsandbytes' 8-bit Adam where the notes give Megatron-DeepSpeed's flag for it as this run's.
  if (static const std::regex bnb_flag(R"(--use-bnb-optimizer\b)"); said_of_this_run(case_notes, bnb_flag)) {
    pl["optimizer_moments"] = "int8";
    defaults.push_back(
        "parallelism.optimizer_moments: int8 (the notes: --use-bnb-optimizer, bitsandbytes' 8-bit Adam)");
  }
  // Activation offloading stated as this run's setting: Megatron's --cpu-offloading, torchtune's
  // enable_activation_offloading, Hugging Face's gradient checkpointing with offload.
  if (static const std::regex activation_offload(
          R"(--cpu-offloading\b(?!-)|enable_activation_offloading\W{0,4}(=|:)\s*true|gradient_checkpointing_kwargs\W{1,6}\{?\W{0,3}offload\W{1,4}true)",
          std::regex::icase);
      said_of_this_run(case_notes, activation_offload) && case_notes.find("DualPipe") == std::string::npos) {
    pl["offload_activations"] = true;
    defaults.push_back("parallelism.offload_activations: true (the notes: activations offloaded to host memory)");
  }
}

// The gradient reduction's precision.
void plan_grad_reduce(CaseContext& x) {
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  std::vector<std::string>& defaults = x.defaults;
  YAML::Node& pl = x.pl;
  // Gradient precision on the wire, where the notes state it: PyTorch FSDP's mixed-precision
  // modes as Composer/llm-foundry name them (DEFAULT and FULL reduce in fp32, PURE in 16 bit).
  bool reduce_stated = false;
  for (const char* mode : {"DEFAULT", "FULL", "PURE"})
    if (case_notes.find(std::string("mixed-precision mode: ") + mode) != std::string::npos) {
      reduce_stated = true;
      pl["grad_reduce_fp32"] = std::string(mode) != "PURE";
      defaults.push_back(std::string("parallelism.grad_reduce_fp32: ") +
                         (std::string(mode) != "PURE" ? "true" : "false") + " (the notes' FSDP mixed-precision mode " +
                         mode + ")");
    }
  // Or in plain words / PyTorch's own names: "fp32 gradient reduction", "gradients reduced in
  // bf16", "reduce_dtype=torch.float32", torchtitan's "mixed_precision_reduce = float32".
  if (!reduce_stated) {
    static const std::regex fp32_reduce(
        R"((fp32|float32)[ -]grad(ient)?s?[ -](reduc|all-reduce|reduce-scatter)|grad(ient)?s? (are )?reduced in (fp32|float32)|reduce_dtype\s*[=:]\s*(torch\.)?float32|mixed_precision_reduce\s*[=:]\s*['"]?float32)",
        std::regex::icase);
    static const std::regex half_reduce(
        R"((bf16|bfloat16|fp16|float16)[ -]grad(ient)?s?[ -](reduc|all-reduce|reduce-scatter)|grad(ient)?s? (are )?reduced in (bf16|bfloat16|fp16|float16)|reduce_dtype\s*[=:]\s*(torch\.)?b?float16|mixed_precision_reduce\s*[=:]\s*['"]?b?float16)",
        std::regex::icase);
    const bool fp32 = std::regex_search(case_notes, fp32_reduce), half = std::regex_search(case_notes, half_reduce);
    if (fp32 != half) {
      pl["grad_reduce_fp32"] = fp32;
      defaults.push_back(std::string("parallelism.grad_reduce_fp32: ") + (fp32 ? "true" : "false") +
                         " (the notes state the gradient reduction's precision)");
    } else if (notes_name(case_notes, "torchtitan") && !has(p, "grad_reduce_fp32")) {
      // torchtitan's own default (its job config's mixed_precision_reduce = "float32").
      pl["grad_reduce_fp32"] = true;
      defaults.push_back("parallelism.grad_reduce_fp32: true (torchtitan's default mixed_precision_reduce float32)");
    }
  }
}

// Hybrid sharding, a stated shard group and whose FSDP.
void plan_sharding(CaseContext& x) {
  const YAML::Node& hw = x.hw;
  const std::string& case_notes = x.case_notes;
  std::vector<std::string>& defaults = x.defaults;
  const bool old_gen = x.old_gen;
  YAML::Node& s = x.s;
  int& per_node = x.per_node;
  YAML::Node& pl = x.pl;
  int& tp = x.tp;
  int& dp = x.dp;
  int& cp = x.cp;
  // PyTorch FSDP's HYBRID_SHARD, HSDP or hybrid-sharded data parallelism named in the notes, or
  // shards said to stay inside a node ("sharded over the 8 GPUs of a VM"): shards inside a node,
  // replicas across nodes.
  static const std::regex hybrid(
      R"(HYBRID_SHARD|\bHSDP\b|hybrid[- ]shard|(shard(ed|s)?|distributed|partitioned) [^.;]{0,60}(within|inside|over the [0-9]+ GPUs of)[^.;]{0,30}\b(a|each|one|the)( single)? (node|VM|server|host))",
      std::regex::icase);
  if (pl["zero"].as<int>() >= 1 && stated_for_this_run(case_notes, hybrid)) {
    // The source's node (a GB200 compute tray of 4, not the NVL72 rack the cluster is built as).
    const int node_gpus = has(hw, "gpus_per_node")        ? positive<int>(hw, "gpus_per_node")
                          : s["cluster"]["gpus_per_node"] ? s["cluster"]["gpus_per_node"].as<int>()
                                                          : per_node;
    const int span = dp * cp, in_node = std::max(1, std::min(span, node_gpus / tp));
    if (span % in_node == 0 && in_node < span) {
      pl["shard_size"] = in_node;
      defaults.push_back("parallelism.shard_size: " + std::to_string(in_node) +
                         " (the notes: hybrid sharding, shards inside a node)");
    }
  }
  // A sharding group stated as a GPU count ("sharded across 128 GPUs with 4 copies": MiCS, or
  // HSDP with its shard group named; a JAX mesh's lower-case "fsdp=128" axis beside its data
  // axis, not the tables' "FSDP = 1" on/off flag): ZeRO state shards over that many ranks,
  // replicas across.
  static const std::regex shard_group(
      R"([Ss]harded (?:across|over groups of) ([0-9]+)(?: GPUs)?|\bfsdp=([0-9]+)|shard_degree\s*[=:]\s*([0-9]+))");
  if (std::smatch hit; pl["zero"].as<int>() >= 1 && std::regex_search(case_notes, hit, shard_group)) {
    const int group = std::stoi(hit[hit[1].matched ? 1 : hit[2].matched ? 2 : 3].str()), span = dp * cp;
    if (group > 1 && group < span && span % group == 0) {
      pl["shard_size"] = group;
      defaults.push_back("parallelism.shard_size: " + std::to_string(group) + " (the notes: sharded across " +
                         std::to_string(group) + " GPUs)");
    }
  }
  // Whose FSDP (zero 3), from the notes' vocabulary: Megatron FSDP by name; PyTorch's FSDP 1 by
  // its sharding-strategy names (FULL_SHARD, HYBRID_SHARD, SHARD_GRAD_OP) or by name ("FSDP1",
  // "FSDP v1") unless FSDP2 is named; otherwise fsdp2, the default.
  if (pl["zero"].as<int>() >= 3) {
    const bool fsdp2_named = case_notes.find("FSDP2") != std::string::npos;
    if (case_notes.find("Megatron FSDP") != std::string::npos) {
      pl["fsdp_impl"] = "megatron";
      defaults.push_back("parallelism.fsdp_impl: megatron (the notes name Megatron FSDP)");
    } else if (!fsdp2_named && std::regex_search(case_notes, std::regex("FULL_SHARD|HYBRID_SHARD|SHARD_GRAD_OP"))) {
      pl["fsdp_impl"] = "fsdp1";
      defaults.push_back("parallelism.fsdp_impl: fsdp1 (the notes use FSDP 1's sharding-strategy names)");
    } else if (!fsdp2_named && std::regex_search(case_notes, std::regex(R"(\bFSDP ?(1|v1)\b|\bFSDP-1\b)"))) {
      pl["fsdp_impl"] = "fsdp1";
      defaults.push_back("parallelism.fsdp_impl: fsdp1 (the notes name FSDP 1)");
    } else if (!fsdp2_named && old_gen && !notes_name(case_notes, "torchtitan")) {
      // FSDP2 came with PyTorch 2.4 (2024), after the Volta/Ampere generation's published runs.
      pl["fsdp_impl"] = "fsdp1";
      defaults.push_back("parallelism.fsdp_impl: fsdp1 (PyTorch's FSDP of the Volta/Ampere era)");
    } else {
      defaults.push_back(std::string("parallelism.fsdp_impl: fsdp2 (") +
                         (fsdp2_named ? "the notes name FSDP2" : "PyTorch's current FSDP, the plan default") + ")");
    }
  }
  // The stack's ZeRO-3 gather unit (its catalogue entry's zero3_gather_unit): per module, one
  // all-gather per weight matrix of the layer (q, k, v, o and the MLP's two, or three gated);
  // FSDP and Megatron FSDP gather a whole layer at once (the plan default).
  if (pl["zero"].as<int>() >= 3 && stack_behaviour(x.c, x.gpu, "zero3_gather_unit") == "module") {
    const bool gated = x.mo["mlp"] && x.mo["mlp"].as<std::string>().find("glu") != std::string::npos;
    const int matrices = 4 + (gated ? 3 : 2);
    pl["fsdp_gathers_per_layer"] = matrices;
    defaults.push_back("parallelism.fsdp_gathers_per_layer: " + std::to_string(matrices) +
                       " (the stack gathers ZeRO-3 parameters per module: one all-gather per weight matrix)");
  }
}

// The optimizer (and with ZeRO-3 the parameters) offloaded to the host.
void plan_offload(CaseContext& x) {
  const YAML::Node& p = x.p;
  const std::string& low_notes = x.low_notes;
  std::vector<std::string>& defaults = x.defaults;
  YAML::Node& pl = x.pl;
  // The optimizer offloaded to the host CPU (DeepSpeed's offload_optimizer / ZeRO-Offload), and
  // with ZeRO-3 the parameter shards too (DeepSpeed's offload_param, ZeRO-Infinity's CPU tier;
  // FSDP's CPUOffload, which keeps parameters, gradients and optimizer on the host and steps there).
  // Not a config quoted with the device none ("offload_optimizer device none").
  static const std::regex offload(
      R"(offload_optimizer|zero-offload|optimizer (state )?offload|offload(ing|ed)? (of )?(the )?optimizer|cpu[ -]?adam)");
  static const std::regex offload_off(
      R"(offload_optimizer\W{0,12}(device\W{0,6})?(none|null|false)\b|(no|without) (cpu )?(optimizer )?offload)");
  static const std::regex params_offload(
      R"(offload_param\W{0,12}(device\W{0,6})?(cpu|nvme)\b|offload_params\s*=\s*true|fsdp_cpu_offload\W{0,4}(:|=)\s*true|parameters? (and activation )?cpu offloading (was|were) used)");
  const int zero_stage = pl["zero"].as<int>();
  const bool params_offloaded =
      !has(p, "offload_params") && zero_stage == 3 && said_of_this_run(low_notes, params_offload);
  if (!has(p, "offload_optimizer") &&
      (params_offloaded || (std::regex_search(low_notes, offload) && !std::regex_search(low_notes, offload_off)))) {
    if (zero_stage >= 1) {
      pl["offload_optimizer"] = true;
      defaults.push_back(
          std::string("parallelism.offload_optimizer: true (the notes: ") +
          (params_offloaded ? "parameters offloaded, stepped on the CPU)" : "the optimizer offloaded to the CPU)"));
    } else {
      defaults.push_back("note: the notes offload the optimizer, not modelled with zero 0");
    }
  }
  if (params_offloaded && pl["offload_optimizer"] && pl["offload_optimizer"].as<bool>()) {
    pl["offload_params"] = true;
    defaults.push_back("parallelism.offload_params: true (the notes: the parameter shards offloaded to the CPU)");
  }
}

// Activation recomputation: stated (layers, modules), implied by a published count, or the least
// that fits.
void plan_recompute(CaseContext& x) {
  const YAML::Node& c = x.c;
  const YAML::Node& m = x.m;
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  std::vector<std::string>& defaults = x.defaults;
  YAML::Node& mo = x.mo;
  YAML::Node& pl = x.pl;
  bool& torchtitan = x.torchtitan;
  const YAML::Node meas = c["measured"];
  if (has(p, "recompute")) {
    pl["recompute"] = lowercase(get<std::string>(p, "recompute"));
    // Checkpointing of every N-th layer only (torchtitan's selective layer AC): as many layers
    // recomputed in full, the first of each model chunk (the cost is the same).
    static const std::regex every_nth("checkpointing of every ([0-9]+)(st|nd|rd|th) layer");
    std::smatch hit;
    // torchtitan's selective AC is either that layer policy or its op policy (below).
    const bool torchtitan_selective = torchtitan && pl["recompute"].as<std::string>() == "selective";
    if ((pl["recompute"].as<std::string>() == "full" || torchtitan_selective) &&
        std::regex_search(case_notes, hit, every_nth)) {
      const int n = std::stoi(hit[1].str()),
                chunk = positive<int>(m, "layers") / (pl["pp"].as<int>() * pl["vp"].as<int>());
      if (n >= 1 && chunk / n >= 1) {
        pl["recompute"] = "full";
        pl["recompute_layers"] = chunk / n;
        defaults.push_back("parallelism.recompute_layers: " + std::to_string(chunk / n) +
                           " per model chunk (the notes: checkpointing of every " + hit[1].str() + hit[2].str() +
                           " layer)");
      }
    }
    // Selective recomputation of named modules ("recompute: RMSNorm and MLA up-projection
    // recomputed"): Megatron-Core's recompute_modules; otherwise its default, the core attention.
    if (pl["recompute"].as<std::string>() == "selective") {
      const std::string notes = lowercase(case_notes);
      const size_t at = notes.find("recompute:");
      // torchtitan's selective AC of its shipped configs is the op policy (selective_ac_option
      // "op"): PyTorch's per-op checkpointing, not Megatron's core-attention recomputation.
      if (torchtitan && at == std::string::npos) {
        pl["recompute"] = "op";
        defaults.push_back("parallelism.recompute: op (torchtitan's selective AC: its op policy)");
      }
      // The modules, only those the model has (check_plan refuses the others): Megatron-Core's own
      // flag quoted in the notes ("--recompute-modules layernorm moe_act"), whose module names are
      // the plan's, or the notes' "recompute:" sentence in words.
      const auto model_has = [&](const std::string& module) {
        if (module == "mla_up_proj") return has(mo, "mla");
        if (module == "moe_act" || module == "moe" || module == "shared_experts") return has(mo, "moe");
        return true;
      };
      std::vector<std::string> named;
      std::string why;
      // Any spelling of the flag or config key: "--recompute-modules layernorm moe_act",
      // "--recompute_modules mla_up_proj", "recompute_modules: [layernorm, mla_up_proj]",
      // "recompute modules 'mla_up_proj'".
      static const std::regex flag(R"(recompute[-_ ]modules\s*[=:]?\s*\[?((?:[\s,'"]*[a-z_]+)+))");
      static const std::regex selective_phrase(R"(selective ([a-z ,/-]{3,80}?) recomput)");
      std::smatch quoted;
      if (!torchtitan && std::regex_search(notes, quoted, flag)) {
        std::string list = quoted[1].str();
        for (char& ch : list)
          if (ch == ',' || ch == '\'' || ch == '"') ch = ' ';
        std::istringstream words(list);
        for (std::string w; words >> w && workload::recompute_module_bit(w) != 0;)
          if (model_has(w)) named.push_back(w);
        why = "the notes quote recompute-modules";
      } else if (std::smatch phrase; at != std::string::npos || std::regex_search(notes, phrase, selective_phrase)) {
        // The "recompute:" sentence, or "selective layernorm and MoE activation recompute".
        const std::string said = at != std::string::npos ? notes.substr(at, notes.find('.', at) - at) : phrase[1].str();
        const std::pair<const char*, const char*> phrases[] = {{"norm", "layernorm"},
                                                               {"up-projection", "mla_up_proj"},
                                                               {"swiglu", "moe_act"},
                                                               {"moe activation", "moe_act"},
                                                               {"core attention", "core_attn"}};
        for (const auto& [phrase, module] : phrases)
          if (model_has(module) && said.find(phrase) != std::string::npos) named.push_back(module);
        why = "the modules the notes name";
      }
      if (!named.empty()) {
        YAML::Node modules;
        std::string listed;
        for (const std::string& m : named) {
          modules.push_back(m);
          listed += std::string(listed.empty() ? "" : ", ") + m;
        }
        modules.SetStyle(YAML::EmitterStyle::Flow);
        pl["recompute_modules"] = modules;
        defaults.push_back("parallelism.recompute_modules: [" + listed + "] (" + why + ")");
      }
    }
  } else if (has(meas, "hardware_tflops_per_gpu")) {
    // A published recompute-inclusive FLOP rate (the SC'21 count) says the run recomputed.
    pl["recompute"] = "full";
    defaults.push_back("parallelism.recompute: full (the source publishes a recompute-inclusive TFLOP/s)");
  } else {
    pl["recompute"] = "auto";
    defaults.push_back("parallelism.recompute: the least recomputation that fits in memory (none, selective, full)");
  }
}

}  // namespace stacksim::analysis::case_policy
