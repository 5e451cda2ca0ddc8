// The case's attention kernels and mixture-of-experts layers.
#include "validate/case_policy.hpp"

#include <algorithm>
#include <cctype>

#include "models/hardware/gpu_spec.hpp"
#include "models/workload/model_catalog.hpp"

namespace stacksim::analysis::case_policy {

// Megatron's list form of --moe-layer-freq ("([0]*3+[1]*58)", "[1,0]*24"): lists of 0/1,
// "* n" repetition, "+" concatenation and parentheses, expanded to one 0/1 per layer. Empty if
// the text is not of that form.
class LayerPatternParser {
 public:
  explicit LayerPatternParser(const std::string& text) {
    for (char c : text)
      if (!std::isspace(static_cast<unsigned char>(c))) t_ += c;
  }
  std::vector<int> parse() {
    std::vector<int> out;
    if (t_.empty() || !sum(out) || i_ != t_.size()) return {};
    return out;
  }

 private:
  bool sum(std::vector<int>& out) {
    if (!product(out)) return false;
    while (peek('+')) {
      ++i_;
      std::vector<int> more;
      if (!product(more)) return false;
      out.insert(out.end(), more.begin(), more.end());
    }
    return true;
  }
  bool product(std::vector<int>& out) {
    if (!atom(out)) return false;
    while (peek('*')) {
      ++i_;
      const long long n = integer();
      if (n <= 0 || n > 100000 || out.size() * n > 100000) return false;
      const std::vector<int> once = out;
      for (long long k = 1; k < n; ++k) out.insert(out.end(), once.begin(), once.end());
    }
    return true;
  }
  bool atom(std::vector<int>& out) {
    if (peek('(')) {
      ++i_;
      if (!sum(out) || !peek(')')) return false;
      ++i_;
      return true;
    }
    if (!peek('[')) return false;
    ++i_;
    while (true) {
      if (!peek('0') && !peek('1')) return false;
      out.push_back(t_[i_++] - '0');
      if (peek(']')) {
        ++i_;
        return true;
      }
      if (!peek(',')) return false;
      ++i_;
    }
  }
  long long integer() {
    long long v = 0;
    const size_t start = i_;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) v = v * 10 + (t_[i_++] - '0');
    return i_ == start ? -1 : v;
  }
  bool peek(char c) const { return i_ < t_.size() && t_[i_] == c; }
  std::string t_;
  size_t i_ = 0;
};

// Which layers are MoE, from the case's moe_layer_freq text, as first_dense_layers / layer_freq
// of the scenario. Forms: a number (Megatron's int: every n-th layer from layer 0), "first N
// layers dense", "every other layer" / "every N layers" / "all layers", or Megatron's list form.
void moe_layers_from_text(const std::string& text, int layers, YAML::Node& moe, std::vector<std::string>& defaults) {
  const std::string t = lowercase(text);
  if (text.find_first_not_of("0123456789") == std::string::npos && !text.empty()) {
    moe["layer_freq"] = std::stoi(text);
    return;
  }
  if (const long long dense = number_after(t, "first"); dense > 0 && t.find("dense") != std::string::npos) {
    moe["first_dense_layers"] = dense;
    return;
  }
  if (t.find("all layers") != std::string::npos || t.find("every layer") != std::string::npos) {
    moe["layer_freq"] = 1;
    return;
  }
  if (t.find("every other") != std::string::npos || t.find("alternat") != std::string::npos ||
      t.find("every 2nd") != std::string::npos || t.find("every second") != std::string::npos) {
    moe["layer_freq"] = 2;
    return;
  }
  if (const long long n = number_after(t, "every"); n > 0) {
    moe["layer_freq"] = n;
    return;
  }
  const std::vector<int> pattern = LayerPatternParser(text).parse();
  if (static_cast<int>(pattern.size()) == layers) {
    // Leading dense layers, then all MoE.
    const int dense = static_cast<int>(std::find(pattern.begin(), pattern.end(), 1) - pattern.begin());
    if (dense < layers && std::all_of(pattern.begin() + dense, pattern.end(), [](int x) { return x == 1; })) {
      if (dense > 0) moe["first_dense_layers"] = dense;
      return;
    }
    // Periodic with one MoE layer per period: the same count as every period-th layer from 0.
    for (int period = 2; period <= layers / 2; ++period) {
      if (layers % period != 0) continue;
      bool periodic = true;
      for (int l = period; l < layers && periodic; ++l) periodic = pattern[l] == pattern[l - period];
      if (periodic && std::count(pattern.begin(), pattern.begin() + period, 1) == 1) {
        moe["layer_freq"] = period;
        if (pattern[0] != 1)
          defaults.push_back("model.moe: one MoE layer in every " + std::to_string(period) +
                             " placed at the first of each period (the count is what the step cost sees)");
        return;
      }
    }
  }
  throw std::runtime_error("model.moe.moe_layer_freq '" + text +
                           "' is not a number, 'first N layers dense', 'every N layers' or a Megatron 0/1 list of the "
                           "model's " +
                           std::to_string(layers) + " layers with leading dense layers or one MoE layer per period");
}

// The attention kernels the run used.
void attention_choice(CaseContext& x) {
  const YAML::Node& c = x.c;
  const std::string& case_notes = x.case_notes;
  const std::string& low_notes = x.low_notes;
  std::vector<std::string>& defaults = x.defaults;
  const std::string& gpu = x.gpu;
  const bool old_gen = x.old_gen;
  std::string& att = x.att;
  YAML::Node& mo = x.mo;
  // Attention implementation: as stated, read literally (see flash_kernel); else the best fused
  // kernels (cuDNN) on Hopper and later, and Megatron's unfused attention on Volta/Ampere, the
  // stacks those generations shipped with.
  static const std::regex te_fused_off(R"(nvte_fused_attn\s*=\s*0\b)");
  static const std::regex pytorch_native_stack(
      R"(\btorchtune\b|\blit[-_]?gpt\b|\blightning (fabric|ai)\b|pytorch lightning|hugging ?face transformers|\bhf transformers|(llama|mistral|qwen[0-9]?|gpt2)forcausallm|modeling_llama|\btrl\b|\baccelerate\b|\baxolotl\b)");
  const hw::GpuCatalog& gpu_profiles = hw::bundled_gpus();
  const bool runs_flash1 = gpu_profiles.has(gpu) && gpu_profiles.get(gpu).flash1_forward_efficiency > 0;
  if (const std::string kernel = flash_kernel(att); !kernel.empty() && (kernel != "flash1" || runs_flash1)) {
    mo["attention"] = kernel;
    if (kernel == "flash1")
      defaults.push_back("model.attention: flash1 (an unversioned FlashAttention: the original kernels)");
  } else if (!kernel.empty()) {
    // The original FlashAttention has kernels for Turing/Ampere (and ran on Hopper) only: on a GPU
    // without them an unversioned "FlashAttention" is that generation's fused attention.
    mo["attention"] = "flash";
    defaults.push_back(
        "model.attention: flash (an unversioned FlashAttention on a GPU the original kernels do not "
        "run on: the generation's fused kernels)");
  } else if (!old_gen && std::regex_search(low_notes, te_fused_off)) {
    // Transformer Engine with its cuDNN fused attention switched off runs the flash-attn package.
    mo["attention"] = "flash2";
    defaults.push_back(
        "model.attention: flash2 (the notes set NVTE_FUSED_ATTN=0: Transformer Engine's FlashAttention backend)");
  } else if (const std::string stack_kernel = old_gen ? "" : stack_behaviour(c, gpu, "attention_kernel");
             !stack_kernel.empty()) {
    // The stack's own attention kernels where its catalogue entry states them (e.g. NeMo before
    // 24.05: Transformer Engine's FlashAttention-2).
    mo["attention"] = stack_kernel;
    defaults.push_back("model.attention: " + stack_kernel +
                       " (the stack's kernels, its catalogue entry's attention_kernel)");
  } else if (gpu.rfind("V100", 0) != 0 && notes_name(case_notes, "nanotron")) {
    // nanotron's attention calls the flash-attn package (flash_attn_varlen_func), FlashAttention-2.
    mo["attention"] = "flash2";
    defaults.push_back("model.attention: flash2 (nanotron calls the flash-attn package's FlashAttention-2)");
  } else if (gpu.rfind("V100", 0) != 0 &&
             (notes_name(case_notes, "torchtitan") || std::regex_search(low_notes, pytorch_native_stack))) {
    // torchtitan, torchtune and Hugging Face's stacks call PyTorch's scaled_dot_product_attention,
    // whose flash backend is FlashAttention-2 (Ampere and later); its cuDNN backend was opt-in from
    // PyTorch 2.5.1 (pytorch#138522, Oct 2024) until 2.9 made it the default on sm90/sm100
    // (sdpa_prefers_cudnn): a stated release of 2.9 or later on those GPUs runs the fused kernels.
    // torchtitan sets SDPA's backend order itself: cuDNN first on compute capability 10.0 and later
    // (Blackwell), FlashAttention-2 first before it (torchtitan/models/attention.py,
    // ScaledDotProductAttention._init_backend).
    const int release = stated_pytorch_release(low_notes);
    const bool titan = notes_name(case_notes, "torchtitan");
    const bool blackwell = gpu_profiles.has(gpu) && gpu_profiles.get(gpu).architecture == "blackwell";
    if (titan && blackwell) {
      mo["attention"] = "flash";
      defaults.push_back("model.attention: flash (torchtitan puts cuDNN's fused attention first on Blackwell)");
    } else if (!titan && gpu_profiles.has(gpu) && sdpa_prefers_cudnn(release, gpu_profiles.get(gpu))) {
      mo["attention"] = "flash";
      defaults.push_back("model.attention: flash (a PyTorch-native stack on PyTorch " + std::to_string(release / 100) +
                         "." + std::to_string(release % 100) + ": SDPA prefers cuDNN's fused attention on this GPU)");
    } else {
      mo["attention"] = "flash2";
      defaults.push_back("model.attention: flash2 (a PyTorch-native stack: SDPA's FlashAttention-2 backend)");
    }
  } else {
    mo["attention"] = old_gen ? "unfused" : "flash";
    defaults.push_back(std::string("model.attention: ") +
                       (old_gen ? "unfused (Volta/Ampere-era Megatron)"
                                : "flash (the generation's fused kernels: Hopper, Blackwell, CDNA 3/4)"));
  }
}

// A mixture of experts: experts, routing, MoE layers, expert width, capacity and groups.
void moe_section(CaseContext& x) {
  const YAML::Node& m = x.m;
  const std::string& low_notes = x.low_notes;
  std::vector<std::string>& defaults = x.defaults;
  const workload::CatalogModel*& named = x.named;
  std::string& from_catalogue = x.from_catalogue;
  YAML::Node& mo = x.mo;
  long long& ffn = x.ffn;
  if (has(m, "moe")) {
    const YAML::Node moe = m["moe"];
    YAML::Node mm;
    if (has(moe, "experts")) {
      mm["experts"] = positive<int>(moe, "experts");
    } else {
      // Mixtral-style names count the experts: "8x7B", "8x22B".
      static const std::regex n_by_size("([0-9]+) ?x ?[0-9.]+ ?[bm]\\b", std::regex::icase);
      std::smatch hit;
      const std::string name = has(m, "name") ? get<std::string>(m, "name") : "";
      if (!std::regex_search(name, hit, n_by_size) || std::stoi(hit[1].str()) < 2)
        throw std::runtime_error(
            "model.moe.experts is null (and the model name neither is in the catalogue nor says "
            "N x size)");
      mm["experts"] = std::stoi(hit[1].str());
      defaults.push_back("model.moe.experts: " + hit[1].str() + " (the model name's " + hit[0].str() + ")");
    }
    if (has(moe, "top_k")) {
      mm["top_k"] = positive<int>(moe, "top_k");
    } else {
      mm["top_k"] = 2;
      defaults.push_back("model.moe.top_k: 2 (Megatron-Core's moe_router_topk default; GShard, Mixtral)");
    }
    if (has(moe, "shared_experts")) mm["shared_experts"] = get<int>(moe, "shared_experts");
    if (has(moe, "moe_layer_freq")) {
      moe_layers_from_text(moe["moe_layer_freq"].as<std::string>(), positive<int>(m, "layers"), mm, defaults);
    } else if (named && (named->config.moe.first_dense_layers > 0 || named->config.moe.layer_freq > 1)) {
      mm["first_dense_layers"] = named->config.moe.first_dense_layers;
      mm["layer_freq"] = named->config.moe.layer_freq;
      defaults.push_back("model.moe.moe_layer_freq: the first " + std::to_string(named->config.moe.first_dense_layers) +
                         " layers dense, then every " + std::to_string(named->config.moe.layer_freq) + from_catalogue);
    }
    if (has(moe, "expert_ffn_hidden"))
      mm["expert_ffn_hidden"] = positive<long long>(moe, "expert_ffn_hidden");
    else {
      mm["expert_ffn_hidden"] = ffn;
      defaults.push_back("model.moe.expert_ffn_hidden: = ffn_hidden");
    }
    // Token dropping at a stated capacity factor ("a capacity factor equal to 1",
    // "moe_expert_capacity_factor 1.0"): every expert takes at most that many times its mean share.
    // Not Megatron's moe_expert_rank_capacity_factor (a per-rank receive buffer for static
    // shapes under forced balancing: no token is dropped).
    static const std::regex capacity(
        R"((rank[ _])?capacity[ _-]factor(?:\s+(?:equal to|of|is))?\s*[=:]?\s*([0-9]+(?:\.[0-9]+)?))");
    std::smatch cf;
    std::string rest = low_notes;
    bool dropping = false;
    while (std::regex_search(rest, cf, capacity)) {
      if (!cf[1].matched && std::stod(cf[2].str()) > 0) {
        dropping = true;
        break;
      }
      rest = cf.suffix().str();
    }
    if (dropping) {
      mm["capacity_factor"] = std::stod(cf[2].str());
      defaults.push_back("model.moe.capacity_factor: " + cf[2].str() + " (the notes: token dropping at that capacity)");
    }
    // Group-limited routing of the family's public config (DeepSeek-V3's config.json: n_group 8,
    // topk_group 4); it matters where the dispatch crosses to a node once (ep_dispatch deepep).
    if (named && named->config.moe.groups > 0) {
      mm["groups"] = named->config.moe.groups;
      mm["groups_per_token"] = named->config.moe.groups_per_token;
      defaults.push_back("model.moe.groups: " + std::to_string(named->config.moe.groups) +
                         ", groups_per_token: " + std::to_string(named->config.moe.groups_per_token) + from_catalogue);
    }
    mo["moe"] = mm;
  }
}

}  // namespace stacksim::analysis::case_policy
