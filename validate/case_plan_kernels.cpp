// The case's plan, its kernel side: FP8 recipe, context/expert communication, eager kernels, CUDA
// graphs.
#include "validate/case_policy.hpp"

#include <sstream>

namespace stacksim::analysis::case_policy {

// The FP8 recipe and multi-token prediction.
void plan_fp8_mtp(CaseContext& x) {
  const std::string& case_notes = x.case_notes;
  std::vector<std::string>& defaults = x.defaults;
  YAML::Node& s = x.s;
  YAML::Node& pl = x.pl;
  // The FP8 recipe, from the notes: MXFP8 where the run's precision is FP8-MX / MXFP8, current
  // scaling where it is FP8-CS, "current scaling" or torchao's dynamic (tensorwise / rowwise)
  // float8; otherwise delayed scaling (Transformer Engine's and Megatron's default, the plan's).
  if (pl["precision"].as<std::string>() == "fp8") {
    // "Precision FP8-MX", 'Precision "MXFP8"', "uses the parenthesised FP8-MX figures" (a table
    // row printing FP8-CS with its FP8-MX figures in parentheses).
    static const std::regex mx(R"(precision\W{0,3}(fp8-mx|mxfp8)|uses the (parenthesi[sz]ed )?(fp8-mx|mxfp8) figures)",
                               std::regex::icase),
        cs_precision(R"(precision\W{0,3}fp8-cs)", std::regex::icase),
        mx_named(R"(\bfp8_mx\b|mxfp8 ?block ?scaling)", std::regex::icase),
        cs(R"(precision\W{0,3}fp8-cs|current scaling|\btorchao\b|tensorwise|rowwise|dynamic scaling)",
           std::regex::icase);
    // A precision statement first; then the recipe by its other names (fp8_mx, "MXFP8 block
    // scaling", MXFP8BlockScaling), which a stated FP8-CS precision outranks.
    if (std::regex_search(case_notes, mx) ||
        (!std::regex_search(case_notes, cs_precision) && std::regex_search(case_notes, mx_named))) {
      pl["fp8_recipe"] = "mxfp8";
      defaults.push_back("parallelism.fp8_recipe: mxfp8 (the notes' precision is MXFP8)");
    } else if (std::regex_search(case_notes, cs)) {
      pl["fp8_recipe"] = "current";
      defaults.push_back(
          "parallelism.fp8_recipe: current (the notes: FP8 scaled by each tensor's current amax, "
          "Transformer Engine's current scaling or torchao's dynamic float8)");
    } else {
      defaults.push_back("parallelism.fp8_recipe: delayed (Transformer Engine's and Megatron's default)");
    }
  }
  // Multi-token prediction with its depth stated in the notes (DeepSeek-V3: 1).
  static const std::regex mtp_depth("multi-token[- ]prediction depth:? ([0-9]+)");
  if (std::smatch hit; std::regex_search(case_notes, hit, mtp_depth) && std::stoi(hit[1].str()) > 0) {
    s["model"]["mtp_layers"] = std::stoi(hit[1].str());
    defaults.push_back("model.mtp_layers: " + hit[1].str() + " (the notes' multi-token-prediction depth)");
  }
}

// How context parallelism and the expert dispatch communicate.
void plan_context_expert(CaseContext& x) {
  const std::string& case_notes = x.case_notes;
  const std::string& low_notes = x.low_notes;
  std::vector<std::string>& defaults = x.defaults;
  YAML::Node& s = x.s;
  YAML::Node& pl = x.pl;
  int& tp = x.tp;
  int& cp = x.cp;
  int& ep = x.ep;
  bool& torchtitan = x.torchtitan;
  bool& dualpipe = x.dualpipe;
  // All-gather-based context parallelism named in the notes (Llama 3's training): K/V gathered
  // before the attention, not passed around a ring under it.
  // Also said as the K/V all-gather itself, or by ring-flash-attn's Llama-3-style kernel name.
  static const std::regex cp_all_gather(
      "all-gather[- ]based context parallel|context parallel(ism)?( is|:)? all-gather[- ]based|all-gather(s|ed)? (of )?"
      "(the )?k/?v\\b|llama3_flash_attn",
      std::regex::icase);
  // DeepSpeed-Ulysses named (its all-to-all sequence parallelism, typed as cp): heads split over cp.
  const int rank_heads = s["model"]["heads"] ? s["model"]["heads"].as<int>() / tp : 0;
  static const std::regex ulysses(R"(\bulysses\b)");
  if (cp > 1 && std::regex_search(low_notes, ulysses) && rank_heads > 0 && rank_heads % cp == 0) {
    pl["cp_comm"] = "all_to_all";
    defaults.push_back("parallelism.cp_comm: all_to_all (the notes name Ulysses: DeepSpeed-Ulysses' all-to-all)");
  } else if (cp > 1 && std::regex_search(case_notes, cp_all_gather)) {
    pl["cp_comm"] = "all_gather";
    defaults.push_back("parallelism.cp_comm: all_gather (the notes: all-gather-based context parallelism)");
  } else if (cp > 1 && torchtitan) {
    // torchtitan's context parallelism (PyTorch's context_parallel) all-gathers the K/V shards
    // unless told otherwise (its context_parallel_rotate_method default, "allgather").
    pl["cp_comm"] = "all_gather";
    defaults.push_back("parallelism.cp_comm: all_gather (torchtitan's default rotate method)");
  }
  // DeepEP named in the notes (Megatron-Core's flex dispatcher), or node-limited routing ("routed
  // to at most N nodes": DeepSeek-V3's dispatch, section 3.2.2, sends a token to each of its nodes
  // once over InfiniBand and fans it out over NVLink), or DeepSeek's own training stack (DualPipe
  // named: the schedule DeepSeek released with DeepEP, its dispatch): tokens cross to a node once.
  static const std::regex node_limited("routed to at most [0-9]+ nodes", std::regex::icase);
  // NVIDIA's HybridEP (Megatron-Core's flex dispatcher backend) forwards the same way: once per
  // destination node over RDMA, fanned out over NVLink.
  const bool deepep = notes_name(case_notes, "DeepEP") || notes_name(case_notes, "HybridEP");
  if (ep > 1 && (deepep || dualpipe || std::regex_search(case_notes, node_limited))) {
    pl["ep_dispatch"] = "deepep";
    defaults.push_back(
        deepep     ? "parallelism.ep_dispatch: deepep (the notes name DeepEP or HybridEP)"
        : dualpipe ? "parallelism.ep_dispatch: deepep (DualPipe named: DeepSeek's stack, whose dispatch "
                     "DeepEP is)"
                   : "parallelism.ep_dispatch: deepep (the notes: node-limited routing, one crossing per node)");
  }
  // Megatron-Core's EP all-to-all overlap stated as on (--overlap-moe-expert-parallel-comm,
  // overlap_moe_expert_parallel_comm = True, "EP A2A overlap", "1F1B A2A overlap"), in a clause that
  // does not turn it off ("A2A overlap off", "No EP A2A overlap", "= False"). Megatron runs it with
  // interleaving or without a pipeline only.
  static const std::regex ep_overlap_named(
      R"(overlap[-_]moe[-_]expert[-_]parallel[-_]comm|moe_a2a_overlap|\b(ep|expert[- ]parallel(ism)?)\s+(all-to-all|a2a)\s+overlap|\b1f1b\s+(a2a\s+)?overlap)");
  static const std::regex ep_overlap_off(R"(\b(off|false|no|not|without|disabled?)\b)");
  bool ep_overlap = false;
  for (auto it = std::sregex_iterator(low_notes.begin(), low_notes.end(), ep_overlap_named);
       it != std::sregex_iterator() && !ep_overlap; ++it) {
    const size_t at = static_cast<size_t>(it->position()), end = at + static_cast<size_t>(it->length());
    const size_t open = low_notes.find_last_of(".;(", at), close = low_notes.find_first_of(".;)", end);
    const size_t from = open == std::string::npos ? 0 : open + 1;
    const std::string clause = low_notes.substr(from, (close == std::string::npos ? low_notes.size() : close) - from);
    ep_overlap = !std::regex_search(clause, ep_overlap_off);
  }
  if (ep_overlap && ep > 1 && !dualpipe) {
    if (pl["pp"].as<int>() == 1 || pl["vp"].as<int>() > 1) {
      pl["ep_overlap"] = true;
      defaults.push_back("parallelism.ep_overlap: true (the notes: Megatron-Core's EP all-to-all overlap)");
    } else {
      defaults.push_back(
          "parallelism.ep_overlap: false (the notes name the EP all-to-all overlap, which Megatron runs "
          "only with interleaving or without a pipeline; vp is 1)");
    }
  }
}

// Eager or compiled element-wise kernels, and CUDA graphs.
void plan_kernels(CaseContext& x) {
  const YAML::Node& p = x.p;
  const std::string& case_notes = x.case_notes;
  const std::string& low_notes = x.low_notes;
  std::vector<std::string>& defaults = x.defaults;
  YAML::Node& s = x.s;
  YAML::Node& pl = x.pl;
  bool& torchtitan = x.torchtitan;
  // Eager PyTorch modules (named in the notes): element-wise ops run op by op. So do torchtitan's
  // and Hugging Face Transformers' model code unless the notes say torch.compile ran (torchtitan's
  // training.compile is off by default).
  // torch.compile named as used ("torch.compile on", "use torch.compile", "torch.compile, FSDP2",
  // "--training.compile", "compile = true"), not as off ("torch.compile off", "torch.compile: off",
  // "is off by default", "without torch.compile", "compile = false").
  static const std::regex compile_on(
      R"(torch\.compile|--training\.compile\b|\bcompile\s*[=:]\s*true|compiles each|\bcompile (is )?(enabled|on)\b)");
  static const std::regex compile_off(
      R"(torch\.compile\s*[:=]?\s*(is )?(off|disabled|not used|false)\b|(without|no|not) (using )?torch\.compile|\bcompile\s*[=:]\s*false)");
  static const std::regex transformers_code(
      R"(hugging ?face transformers|\bhf transformers|(llama|mistral|qwen2?|gpt2)forcausallm|modeling_llama)");
  const bool compiled = std::regex_search(low_notes, compile_on) && !std::regex_search(low_notes, compile_off) &&
                        low_notes.find("eager pytorch") == std::string::npos;
  if (case_notes.find("eager PyTorch") != std::string::npos) {
    pl["kernels"] = "eager";
    defaults.push_back("parallelism.kernels: eager (the notes: eager PyTorch modules)");
  } else if (!compiled && (torchtitan || std::regex_search(low_notes, transformers_code))) {
    pl["kernels"] = "eager";
    defaults.push_back(std::string("parallelism.kernels: eager (") +
                       (torchtitan ? "torchtitan" : "Hugging Face Transformers") +
                       "'s PyTorch modules, torch.compile not stated on)");
  }
  // CUDA graphs the notes state: Megatron-Core's full_iteration scope (NeMo's
  // cuda_graph_scope full_iteration, MLPerf's FULL_CUDA_GRAPH=True) captures the whole step, which
  // needs static shapes (not a dropless MoE); enable_cuda_graph alone captures each layer
  // (Transformer Engine's per-layer graphs: the attention and MLP blocks). A flag set false, or
  // commented out, captures nothing.
  static const std::regex full_graph(
      R"(full_cuda_graph\s*[=:]\s*(true|1)\b|cuda_graph_scope\s*[=:]?\s*full_iteration)");
  static const std::regex layer_graph(R"(enable_cuda_graph\s*[=:]?\s*(true|1)\b)");
  static const std::regex scope_list(
      R"(cuda_graph_scope\W{0,4}((?:[\s,'"]*(?:attn|mlp|moe_router|moe_preprocess)\b)+))");
  const bool moe_model = s["model"]["moe"] && s["model"]["moe"].IsMap() && s["model"]["moe"]["experts"];
  const bool dropless = !(moe_model && s["model"]["moe"]["capacity_factor"]);
  if (!has(p, "cuda_graphs")) {
    if (set_not_commented_out(low_notes, full_graph) && !(moe_model && dropless)) {
      pl["cuda_graphs"] = "full";
      defaults.push_back("parallelism.cuda_graphs: full (the notes: the whole iteration captured)");
    } else if (std::smatch scopes; std::regex_search(low_notes, scopes, scope_list)) {
      // Megatron-Core's scope list ("cuda_graph_scope [attn, moe_router, moe_preprocess]"): its
      // words, each scope once (mlp only for a dense model).
      YAML::Node list;
      std::string said = scopes[1].str(), listed;
      for (char& ch : said)
        if (ch == ',' || ch == '\'' || ch == '"') ch = ' ';
      std::istringstream words(said);
      for (std::string w; words >> w;)
        if (listed.find(w) == std::string::npos && (w != "mlp" || !moe_model)) {
          list.push_back(w);
          listed += (listed.empty() ? "" : ", ") + w;
        }
      if (list.size() > 0) {
        list.SetStyle(YAML::EmitterStyle::Flow);
        pl["cuda_graphs"] = list;
        defaults.push_back("parallelism.cuda_graphs: [" + listed + "] (the notes' cuda_graph_scope)");
      }
    } else if (set_not_commented_out(low_notes, layer_graph) && !moe_model) {
      pl["cuda_graphs"] = YAML::Load("[attn, mlp]");
      defaults.push_back(
          "parallelism.cuda_graphs: [attn, mlp] (the notes: Transformer Engine's per-layer CUDA graphs)");
    }
  }
}

}  // namespace stacksim::analysis::case_policy
