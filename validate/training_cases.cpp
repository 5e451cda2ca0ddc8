#include "validate/training_cases.hpp"
#include "validate/hardware_notes.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "services/scenario.hpp"
#include "services/stack_profile.hpp"
#include "services/training.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/workload/flops.hpp"
#include "models/workload/model_catalog.hpp"
#include "models/workload/pipeline_layout.hpp"

namespace stacksim::analysis {
namespace {

// The FlashAttention version a case names: "FlashAttention-2"/"FA2" -> flash2, "FlashAttention-3"/
// "FA3" -> flash (the best fused kernels), an unversioned "FlashAttention" (or xformers) -> the
// original kernels of that name (flash1); "unfused" where the text says no flash attention ran
// ("no flash attention flag", "without FlashAttention"); "" when the text names no FlashAttention.
std::string flash_kernel(const std::string& text) {
  const std::string t = lowercase(text);
  const auto names = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (t.find(k) != std::string::npos) return true;
    return false;
  };
  static const std::regex negated("(\\bno|\\bnot|\\bwithout|\\bdisabled?)[ -](using |use of |the )?(flash[ -_]?attn|flash[ -]?attention)");
  static const std::regex switched_off("(flash[ -_]?attn|flash[ -]?attention)[^.;,]{0,24}(disabled|switched off|turned off|not used|: ?false)");
  if (std::regex_search(t, negated) || std::regex_search(t, switched_off)) return "unfused";
  // A package version names the major one: "Flash Attention 2.6.3", "flash-attn==2.5.8", "flash_attn v3.0".
  // FlashAttention-3 (Hopper) and -4 (Blackwell) are their generation's best fused kernels.
  // A bare major number too: "flash attention 2", "FlashAttention v3", "flash-attn-2".
  static const std::regex versioned(R"(flash[ _-]?(attn|attention)\s*(==|[-_ ]?v|-)?\s*([1234])(\.[0-9]|\b))");
  std::smatch version;
  const bool versioned_name = std::regex_search(t, version, versioned);
  const std::string major = versioned_name ? version[3].str() : "";
  const bool v34 = major == "3" || major == "4", v2 = major == "2";
  if (major == "1") return "flash1";
  if (v34 || names({"flashattention-3", "flashattention 3", "flashattention3", "fa3", "flash-attn 3", "flash-attn-3",
                    "flashattention-4", "flashattention 4", "flashattention4", "fa4", "flash-attn 4", "flash-attn-4"}))
    return "flash";
  if (v2 || names({"flashattention-2", "flashattention 2", "flashattention2", "fa2", "flash-attn 2", "flash-attn-2",
                   "flash-attn2", "flash_attn_2", "flash_attn2"}))
    return "flash2";
  // cuDNN's fused attention (Transformer Engine's, XLA's cudnn fmha) is the generation's best
  // fused kernel, whatever else the text calls it.
  if (names({"cudnn fused attention", "cudnn flash attention", "cudnn fmha", "cudnn_fmha", "cudnn attention"})) return "flash";
  // The flash-attn package, or Megatron's --use-flash-attn (which calls it), without a version: its
  // 2.x kernels (the package's major version since July 2023).
  // Except its Triton kernel (Megatron-DeepSpeed's --use-flash-attn-triton, flash_attn_triton.py),
  // written in the original FlashAttention's time: read as the original kernels.
  if (names({"flash-attn-triton", "flash_attn_triton"})) return "flash1";
  if (names({"flash-attn", "flash_attn", "use-flash-attn"})) return "flash2";
  // xformers' memory-efficient attention ran the original FlashAttention kernels where they apply
  // (its flshatt operators, from xformers 0.0.16, January 2023).
  if (names({"flashattention", "flash attention", "attn_impl: flash", "xformers"})) return "flash1";
  return "";
}

// Whether `pattern` matches the notes as a statement about this run: not in a clause (between '.'
// or ';') of advice, as a quoted recommendation ("for smaller models HSDP is preferred; for larger
// ones FSDP will be a necessity") says what a reader should choose, and not as one side of an
// alternative ("full or hybrid shard"), which says the source left it open.
bool stated_for_this_run(const std::string& notes, const std::regex& pattern) {
  static const std::regex advice(R"(\bprefer(red|s)?\b|\brecommend|\bshould\b|\bsuggest|\bneeds? to be\b|\bnecessity\b)",
                                 std::regex::icase);
  for (auto it = std::sregex_iterator(notes.begin(), notes.end(), pattern); it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position()), end = at + static_cast<size_t>(it->length());
    static const std::regex or_before(R"(\bor $)", std::regex::icase), or_after(R"(^ or\b)", std::regex::icase);
    if (std::regex_search(notes.substr(at >= 4 ? at - 4 : 0, at >= 4 ? 4 : at), or_before) ||
        std::regex_search(notes.substr(end, 4), or_after))
      continue;
    const size_t open = notes.find_last_of(".;", at), close = notes.find_first_of(".;", end);
    const size_t from = open == std::string::npos ? 0 : open + 1;
    const std::string clause = notes.substr(from, (close == std::string::npos ? notes.size() : close) - from);
    if (!std::regex_search(clause, advice)) return true;
  }
  return false;
}

// Whether `pattern` matches the (lower-case) notes outside a commented-out line ("#export
// TP_COMM_OVERLAP=True" quoted from a config did not run).
bool set_not_commented_out(const std::string& low_notes, const std::regex& pattern) {
  static const std::regex commented_out(R"(#\s*(export\s+)?[a-z_.]*$)");
  for (auto it = std::sregex_iterator(low_notes.begin(), low_notes.end(), pattern); it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position());
    if (!std::regex_search(low_notes.substr(at >= 16 ? at - 16 : 0, at >= 16 ? 16 : at), commented_out)) return true;
  }
  return false;
}

// Whether the notes name `term` (a framework or library, e.g. "torchtitan", "DeepEP") as used: as
// a word of its own, not inside a file name or path ("llama3_h100_torchtitan.md"), not negated
// ("without DeepEP", "no DeepEP", "instead of DeepEP", "DeepEP ... not used") and not left open
// ("whether DeepEP ran", "DeepEP or not"); one such mention outweighs the others.
bool notes_name(const std::string& notes, const std::string& term) {
  const std::string t = lowercase(notes), w = lowercase(term);
  bool used = false;
  for (size_t at = t.find(w); at != std::string::npos; at = t.find(w, at + 1)) {
    const size_t end = at + w.size();
    const auto part_of_name = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '/'; };
    if (at > 0 && (part_of_name(t[at - 1]) || t[at - 1] == '-' || t[at - 1] == '.')) continue;
    if (end < t.size() && (part_of_name(t[end]) || (t[end] == '.' && end + 1 < t.size() && std::isalpha(static_cast<unsigned char>(t[end + 1])))))
      continue;
    const std::string before = t.substr(at >= 24 ? at - 24 : 0, at >= 24 ? 24 : at);
    // Negated, or left open ("whether DeepEP ...", "DeepEP or not").
    static const std::regex negated(R"((\bno|\bnot|\bwithout|instead of|rather than|\bnor|\bwhether)( the| a| an)? $)");
    static const std::regex unused(R"(^([^.;]{0,24}(not used|disabled|switched off|turned off)| or not\b))");
    // A mention negated or left open says this run did not use it, whatever else mentions it
    // ("the dispatcher without DeepEP, compared with the DeepEP row").
    if (std::regex_search(before, negated) || std::regex_search(t.substr(end, 40), unused)) return false;
    // A component pinned at a commit ("submodules Megatron-LM 5a676b36, torchtitan 4c4388f6"):
    // listed as present, not named as the framework that ran.
    static const std::regex pinned(R"(^[ @:=]+[0-9a-f]{7,40}\b)");
    if (std::regex_search(t.substr(end, 48), pinned)) continue;
    used = true;
  }
  return used;
}

// Whether the notes say the input and output embeddings are tied ("tied embeddings",
// "tie_word_embeddings: true") or untied ("untied embeddings", ", untied,",
// "untie_embeddings_and_output_weights", Megatron's --untie-embeddings-and-output-weights);
// nothing when they say neither or both.
std::optional<bool> notes_tied_embeddings(const std::string& notes) {
  const std::string t = lowercase(notes);
  static const std::regex untied(R"(\buntied\b|\buntie[_-]embeddings|tie_word_embeddings\s*[=:]\s*false|share_embeddings_and_output_weights\s*[=:]\s*false)");
  static const std::regex tied(R"((^|[^a-z])tied (input[ /-]output |word |input and output )?embeddings?\b|tie_word_embeddings\s*[=:]\s*true|share_embeddings_and_output_weights\s*[=:]\s*true)");
  const bool says_untied = std::regex_search(t, untied), says_tied = std::regex_search(t, tied);
  if (says_untied == says_tied) return std::nullopt;
  return says_tied;
}

// The tokenizer of a model family named in the case (public model configs), else Megatron's
// default GPT-2 BPE vocabulary padded to a multiple of 1024 * 8.
std::pair<long long, std::string> default_vocab(const std::string& name) {
  const std::string n = lowercase(name);
  const auto named = [&](const char* k) { return n.find(k) != std::string::npos; };
  if (named("nemotron")) return {256000, "the Nemotron tokenizer"};
  if (named("deepseek-v3") || named("deepseek v3")) return {129280, "the DeepSeek-V3 tokenizer"};
  if (named("deepseek-v2") || named("deepseek v2")) return {102400, "the DeepSeek-V2 tokenizer"};
  if (named("qwen")) return {151936, "the Qwen2 tokenizer"};
  if (named("llama3") || named("llama-3") || named("llama 3")) return {128256, "the Llama-3 tokenizer"};
  if (named("llama2") || named("llama-2") || named("llama 2") || named("mistral") || named("mixtral"))
    return {32000, "the Llama-2/Mistral tokenizer"};
  return {51200, "GPT-2 BPE padded, Megatron's default"};
}

// The integer that follows `phrase` in `text` (case-insensitive), or 0.
long long number_after(const std::string& text, const std::string& phrase) {
  // Config-key and hyphenated spellings read as the words: "head_dim 128" is "head dim 128",
  // "sliding-window attention (window 4096)" is "sliding window attention (window 4096)".
  std::string t = lowercase(text), p = lowercase(phrase);
  for (std::string* x : {&t, &p}) {
    std::replace(x->begin(), x->end(), '_', ' ');
    std::replace(x->begin(), x->end(), '-', ' ');
  }
  const size_t at = t.find(p);
  if (at == std::string::npos) return 0;
  size_t i = at + p.size();
  while (i < t.size() && !std::isdigit(static_cast<unsigned char>(t[i]))) {
    if (t[i] == ',' || t[i] == ';') return 0;  // the next clause: no number for this phrase
    ++i;
  }
  long long v = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) v = v * 10 + (t[i++] - '0');
  return v;
}

// Software generation: Hopper-era runs use Megatron-Core/NeMo (sequence parallelism with TP, the
// distributed optimizer, fused attention, async TP backward by default); Volta/Ampere-era runs
// used Megatron-LM, which had none of these by default. The GPU is the proxy: the parts launched
// before 2022 (V100, A100, AMD's MI250X, whose published runs used Megatron-DeepSpeed); not the
// A800, a 2022-23 export part.
bool volta_ampere_era(const std::string& gpu) {
  return gpu.rfind("V100", 0) == 0 || gpu.rfind("A100", 0) == 0 || gpu.rfind("MI250", 0) == 0;
}

// The catalogue part of the case's GPU. An H100 SXM whose case text (notes, system) says HBM2e is
// the 96 GB HBM2e, 500 W part of Meta's Grand Teton hosts (the SXM5 80GB is HBM3; torchtitan's
// benchmark pages describe that part), not the 80 GB SXM5 the name alone would give.
std::string catalogue_gpu(const YAML::Node& c, const std::string& gpu, std::vector<std::string>& defaults) {
  const bool h100_sxm = gpu.rfind("H100-SXM", 0) == 0;
  const std::string system = has(c["hardware"], "system") ? get<std::string>(c["hardware"], "system") : "";
  const std::string text = lowercase(notes_of(c) + " " + system);
  if (h100_sxm && gpu != "H100-SXM5-96GB-HBM2e" && text.find("hbm2e") != std::string::npos) {
    defaults.push_back("hardware.gpu: H100-SXM5-96GB-HBM2e (the case text says its H100 has HBM2e)");
    return "H100-SXM5-96GB-HBM2e";
  }
  return gpu;
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

// Whether `pattern` matches the notes in a clause (between '.' and ';') that says something of
// this run: not one that leaves it unstated ("ZeRO stage: not stated"), cites an example or a
// possibility ("the guide's example launch uses deepspeed_zero2", "can be combined with ZeRO-3").
bool said_of_this_run(const std::string& notes, const std::regex& pattern, std::smatch* first = nullptr) {
  // Another row's settings quoted ("the table's final row", "the previous row") are not this run's.
  static const std::regex hedged(
      R"(\bnot (stated|given|specified|known|published|printed)\b|\bunstated\b|\bexample\b|\bcan be\b|\bcould\b|\bmay\b|\bwhether\b|\b(final|last|other|next|previous|later) rows?\b)",
      std::regex::icase);
  // Clauses end at ';' and at a full stop before a space: not inside "dataset.packed" or "2.5".
  const auto boundary = [&](size_t i) {
    return notes[i] == ';' || (notes[i] == '.' && (i + 1 == notes.size() || std::isspace(static_cast<unsigned char>(notes[i + 1]))));
  };
  for (auto it = std::sregex_iterator(notes.begin(), notes.end(), pattern); it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position()), end = at + static_cast<size_t>(it->length());
    size_t from = at, close = end;
    while (from > 0 && !boundary(from - 1)) --from;
    while (close < notes.size() && !boundary(close)) ++close;
    if (std::regex_search(notes.substr(from, close - from), hedged)) continue;
    static const std::regex negated(R"((\bno|\bnot|\bwithout|instead of|rather than)( the| a| an)?\s*$)", std::regex::icase);
    if (std::regex_search(notes.substr(at >= 24 ? at - 24 : 0, at >= 24 ? 24 : at), negated)) continue;
    if (first) *first = *it;
    return true;
  }
  return false;
}

// The ZeRO stage the notes state for this run ("ZeRO-2", "ZeRO stage 3", "zero_stage: 2",
// DeepSpeed's "deepspeed_zero3" config names), or -1.
int zero_stage_said(const std::string& notes) {
  static const std::regex stage(R"(\bzero[-_ ]?(stage[-_ :=]*)?([0-3])\b|deepspeed_zero([0-3])\b|zero_optimization\W+stage\W{0,3}([0-3])\b)",
                                std::regex::icase);
  std::smatch hit;
  if (!said_of_this_run(notes, stage, &hit)) return -1;
  for (int g : {2, 3, 4})
    if (hit[g].matched) return std::stoi(hit[g].str());
  return -1;
}

// The PyTorch release the notes state ("PyTorch 2.9.0+cu128", "torch 2.14.0", "pytorch-v2.6.0"), as
// major * 100 + minor; 0 when none is stated.
int stated_pytorch_release(const std::string& low_notes) {
  static const std::regex release(R"(\b(py)?torch[ -]?v?([0-9])\.([0-9]{1,2})\b)");
  std::smatch hit;
  if (!std::regex_search(low_notes, hit, release)) return 0;
  return std::stoi(hit[2].str()) * 100 + std::stoi(hit[3].str());
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

// The case publishes the time of one transformer layer (forward and backward) in measured.other.
bool publishes_layer_time(const YAML::Node& c) {
  const YAML::Node other = c["measured"]["other"];
  return has(other, "layer_combined_ms") || (has(other, "layer_forward_ms") && has(other, "layer_backward_ms"));
}

// Whether the case's step time is the source's own figure (per-iteration time as published), not
// derived from a throughput and a batch.
bool publishes_step_time(const YAML::Node& c) {
  if (!has(c["measured"], "step_time_s")) return false;
  if (const YAML::Node derived = c["derived"]; derived && derived.IsSequence())
    for (const YAML::Node& d : derived)
      if (d["field"] && d["field"].as<std::string>() == "measured.step_time_s") return false;
  return true;
}

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
      if (peek(']')) { ++i_; return true; }
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
                           "model's " + std::to_string(layers) + " layers with leading dense layers or one MoE layer per period");
}

// The pipeline's interleaving and layer split. A stated vp is taken as is. Unstated on a
// Hopper-or-later stack with pp > 1: the interleaved 1F1B schedule with the finest virtual stages
// the layers allow (Megatron-Core/NeMo recipes run 1-4 layers per virtual stage, Meta trained
// Llama 3 interleaved), where Megatron can interleave (micro-batches per rank a multiple of pp);
// otherwise, and on Volta/Ampere-era stacks, plain 1F1B.
void pipeline_split(int layers, int pp, int stated_vp, bool hopper_era, int micro_batches, YAML::Node& pl,
                    std::vector<std::string>& defaults) {
  int vp = stated_vp > 0 ? stated_vp : 1;
  if (stated_vp <= 0) {
    if (hopper_era && pp > 1 && micro_batches % pp == 0)
      for (int v = layers / pp; v >= 2; --v)
        if (const auto l = workload::pipeline_layout(layers, pp * v); l.ok && l.stage_layers.empty()) {
          vp = v;
          break;
        }
    defaults.push_back(vp > 1 ? "parallelism.vp: " + std::to_string(vp) +
                                    " (Hopper-era stacks interleave: the finest virtual stages the layers allow)"
                              : std::string("parallelism.vp: 1 (no interleaving)"));
  }
  pl["vp"] = vp;
  const int V = pp * vp;
  const workload::PipelineLayout layout = workload::pipeline_layout(layers, V);
  if (!layout.stage_layers.empty()) {
    YAML::Node list;
    for (int c : layout.stage_layers) list.push_back(c);
    list.SetStyle(YAML::EmitterStyle::Flow);
    pl["stage_layers"] = list;
    defaults.push_back("parallelism.stage_layers: " + std::to_string(layers) + " layers over " + std::to_string(V) +
                       " virtual stages as evenly as possible, the extra ones on the middle stages, then the first");
  } else if (layout.first > 0) {
    pl["first_stage_layers"] = layout.first;
    pl["last_stage_layers"] = layout.last;
    defaults.push_back("parallelism.first/last_stage_layers: " + std::to_string(layout.first) + "/" +
                       std::to_string(layout.last) + " (" + std::to_string(layers) + " layers over " +
                       std::to_string(V) + " stages, " + std::to_string(layout.per_stage) + " in each middle stage)");
  }
}

// The bundled catalogue's entry for the model the case names, when every shape field the case
// states agrees with it; a case that names a model but states another shape (a head count changed
// for a benchmark, a padded variant) describes a variant, and nothing is taken from the entry.
const workload::CatalogModel* named_catalogue_model(const YAML::Node& m) {
  if (!has(m, "name")) return nullptr;
  const workload::CatalogModel* e = workload::bundled_models().find(get<std::string>(m, "name"));
  if (!e) return nullptr;
  const workload::ModelConfig& k = e->config;
  const auto agrees = [&](const YAML::Node& n, const char* key, long long v) {
    return !has(n, key) || positive<long long>(n, key) == v;
  };
  if (!agrees(m, "layers", k.layers) || !agrees(m, "hidden", k.hidden) || !agrees(m, "heads", k.heads) ||
      !agrees(m, "kv_heads", k.kv_heads) || !agrees(m, "ffn_hidden", k.ffn_hidden))
    return nullptr;
  if (has(m, "moe")) {
    const YAML::Node moe = m["moe"];
    if (!k.is_moe() || !agrees(moe, "experts", k.moe.experts) || !agrees(moe, "top_k", k.moe.top_k)) return nullptr;
  }
  return e;
}

// The case with the shape fields it leaves null taken from the catalogue entry its model name
// names (policy: a named public model has its public shape), each recorded in `defaults`.
YAML::Node with_catalogue_shape(const YAML::Node& c, std::vector<std::string>& defaults) {
  const workload::CatalogModel* e = named_catalogue_model(c["model"]);
  if (!e) return c;
  const workload::ModelConfig& k = e->config;
  YAML::Node full = YAML::Clone(c);
  YAML::Node m = full["model"];
  const std::string from = " (the catalogue's " + e->name + ")";
  const auto fill = [&](YAML::Node n, const std::string& prefix, const char* key, const auto& value) {
    if (has(n, key)) return;
    n[key] = value;
    std::ostringstream v;
    v << value;
    defaults.push_back(prefix + key + ": " + v.str() + from);
  };
  fill(m, "model.", "layers", k.layers);
  fill(m, "model.", "hidden", k.hidden);
  fill(m, "model.", "heads", k.heads);
  if (!k.is_mla()) fill(m, "model.", "kv_heads", k.kv_heads);
  fill(m, "model.", "ffn_hidden", k.ffn_hidden);
  fill(m, "model.", "vocab", k.vocab);
  if (k.seq_len > 0) fill(m, "model.", "seq_len", k.seq_len);
  fill(m, "model.", "mlp", std::string(k.mlp == workload::Mlp::SwiGlu ? "swiglu" : "gelu"));
  if (k.is_moe()) {
    if (!has(m, "moe")) m["moe"] = YAML::Node(YAML::NodeType::Map);
    YAML::Node moe = m["moe"];
    fill(moe, "model.moe.", "experts", k.moe.experts);
    fill(moe, "model.moe.", "top_k", k.moe.top_k);
    fill(moe, "model.moe.", "shared_experts", k.moe.shared_experts);
    fill(moe, "model.moe.", "expert_ffn_hidden", k.moe.expert_ffn_hidden);
  }
  return full;
}

// The scenario of a case whose named model's unstated shape is filled in already (below).
YAML::Node case_scenario(const YAML::Node& c, std::vector<std::string>& defaults);

// A case that states neither dp nor both of tp and pp: the smallest model-parallel size (keeping a
// stated tp or pp) whose plan fits in the GPU's memory, tensor parallelism inside a node first (up
// to 8, and only where the heads divide), then pipeline stages; data parallelism takes the rest.
// That is how the frameworks' users size a plan (the least model parallelism that fits); which
// split runs fastest is not assumed known.
YAML::Node smallest_fitting_plan(const YAML::Node& c, std::vector<std::string>& defaults) {
  const YAML::Node hw = c["hardware"], p = c["parallelism"];
  if (!has(hw, "num_gpus")) throw std::runtime_error("hardware.num_gpus and parallelism.dp are null");
  const int gpus = positive<int>(hw, "num_gpus"), cp = has(p, "cp") ? positive<int>(p, "cp") : 1;
  const int layers = positive<int>(c["model"], "layers");
  if (gpus % cp != 0) throw std::runtime_error("hardware.num_gpus is not a multiple of parallelism.cp");
  const int node_gpus = has(hw, "gpus_per_node") ? positive<int>(hw, "gpus_per_node")
                        : has(hw, "gpu") ? hw::bundled_nodes().node(node_type_for_gpu(get<std::string>(hw, "gpu"))).gpus_per_node
                                         : 8;  // the trial plans then say the GPU is null
  struct Split { int tp, pp; };
  std::vector<Split> splits;
  const int stated_tp = has(p, "tp") ? positive<int>(p, "tp") : 0, stated_pp = has(p, "pp") ? positive<int>(p, "pp") : 0;
  std::vector<int> tps;
  if (stated_tp) tps.push_back(stated_tp);
  else for (int tp = 1; tp <= std::min(8, node_gpus); tp *= 2) tps.push_back(tp);
  for (const int tp : tps) {
    if ((gpus / cp) % tp != 0) continue;
    const int model_ranks = gpus / (cp * tp);
    for (int pp = 1; pp <= std::min(layers, model_ranks); ++pp)
      if (model_ranks % pp == 0 && (!stated_pp || pp == stated_pp)) splits.push_back({tp, pp});
  }
  std::stable_sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) {
    return a.tp * a.pp != b.tp * b.pp ? a.tp * a.pp < b.tp * b.pp : a.tp > b.tp;
  });
  YAML::Node chosen, largest;
  std::vector<std::string> chosen_defaults, largest_defaults;
  std::string why_none = "no split of the GPUs gives a valid plan";
  for (const Split& sp : splits) {
    const int dp = gpus / (cp * sp.tp * sp.pp);
    if (has(p, "global_batch") && positive<int>(p, "global_batch") % dp != 0) continue;
    YAML::Node trial = YAML::Clone(c);
    trial["parallelism"]["tp"] = sp.tp;
    trial["parallelism"]["pp"] = sp.pp;
    trial["parallelism"]["dp"] = dp;
    std::vector<std::string> trial_defaults;
    try {
      const YAML::Node s = case_scenario(trial, trial_defaults);
      const bool fits = fits_in_memory(scenario_from_yaml(s, "case").training);
      largest.reset(s);  // reset rebinds; operator= would write through to the node bound before
      largest_defaults = trial_defaults;
      if (fits) {
        chosen.reset(s);
        chosen_defaults = trial_defaults;
        break;
      }
    } catch (const std::exception& e) {
      why_none = e.what();  // heads not divisible by tp, too few layers per stage, ...
    }
  }
  const bool fits = chosen.IsDefined() && !chosen.IsNull();
  if (!fits) chosen.reset(largest), chosen_defaults = largest_defaults;
  if (!chosen.IsDefined() || chosen.IsNull()) throw std::runtime_error("parallelism.dp is null and " + why_none);
  const YAML::Node pl = chosen["parallelism"];
  defaults.push_back("parallelism.tp/pp/dp: " + pl["tp"].as<std::string>() + "/" + pl["pp"].as<std::string>() + "/" +
                     pl["dp"].as<std::string>() +
                     (fits ? " (the smallest model-parallel size that fits in memory, tensor parallel inside a node first)"
                           : " (no split fits in memory: the largest model-parallel size)"));
  defaults.insert(defaults.end(), chosen_defaults.begin(), chosen_defaults.end());
  return chosen;
}

YAML::Node case_scenario(const YAML::Node& c, std::vector<std::string>& defaults) {
  const YAML::Node hw = c["hardware"], m = c["model"], p = c["parallelism"];
  const std::string case_notes = notes_of(c), low_notes = lowercase(case_notes);
  if (p && !has(p, "dp") && (!has(p, "tp") || !has(p, "pp"))) return smallest_fitting_plan(c, defaults);
  if (!has(hw, "gpu")) throw std::runtime_error("hardware.gpu is null");
  const std::string written = get<std::string>(hw, "gpu");
  const std::string profile = hw::canonical_gpu_name(written);
  if (profile != written) defaults.push_back("hardware.gpu: '" + written + "' is the catalogue's " + profile);
  const std::string gpu = catalogue_gpu(c, profile, defaults);
  // The era proxy reads the GPU's generation as its software's (Megatron-LM of 2020-22 on V100/A100/
  // MI250X) unless the notes name today's stack: Megatron-Core, Transformer Engine.
  static const std::regex modern_stack(R"(megatron[- ]core|\bmcore\b|transformer[ _]engine|transformer_impl\W{0,4}transformer_engine)",
                                       std::regex::icase);
  const bool old_gen = volta_ampere_era(gpu) && !said_of_this_run(case_notes, modern_stack);
  // GPUs not stated but every parallel degree is: their product.
  int gpus = 0;
  if (has(hw, "num_gpus")) {
    gpus = positive<int>(hw, "num_gpus");
  } else {
    gpus = 1;
    for (const char* k : {"tp", "pp", "dp"}) {
      if (!p || !has(p, k)) throw std::runtime_error("hardware.num_gpus is null (and parallelism.tp/pp/dp do not all say it)");
      gpus *= positive<int>(p, k);
    }
    if (has(p, "cp")) gpus *= positive<int>(p, "cp");
    defaults.push_back("hardware.num_gpus: " + std::to_string(gpus) + " (tp * pp * dp * cp)");
  }

  YAML::Node s;
  s["name"] = get<std::string>(c, "id");
  // --- cluster
  YAML::Node cl;
  cl["node"] = node_type_for_gpu(gpu);
  // A named cloud instance is its own node type (its NICs differ from the DGX's): AWS p4d / p4de.
  if (has(hw, "system")) {
    const std::string system = lowercase(get<std::string>(hw, "system"));
    const std::string instance = system.find("p4de") != std::string::npos ? "aws-p4de"
                                 : system.find("p4d") != std::string::npos ? "aws-p4d" : "";
    if (!instance.empty() && hw::bundled_nodes().node(instance).gpu == gpu) {
      cl["node"] = instance;
      defaults.push_back("cluster.node: " + instance + " (the system names the AWS instance)");
    }
  }
  // Four A100 SXM4 per node: the HGX 4-GPU board (JUWELS Booster, Perlmutter, Polaris), its GPUs
  // joined all-to-all by NVLink without NVSwitch; unless the case says NVSwitch.
  const std::string intra = has(hw, "intra_node") ? lowercase(get<std::string>(hw, "intra_node")) : "";
  if (gpu.rfind("A100-SXM4", 0) == 0 && has(hw, "gpus_per_node") && positive<int>(hw, "gpus_per_node") == 4 &&
      intra != "nvswitch" && cl["node"].as<std::string>().rfind("aws-", 0) != 0) {
    cl["node"] = "hgx-a100-4gpu";
    defaults.push_back("cluster.node: hgx-a100-4gpu (four A100 SXM4 per node: the HGX 4-GPU board, NVLink all-to-all)");
  }
  cl["gpu"] = gpu;
  int per_node = hw::bundled_nodes().node(cl["node"].as<std::string>()).gpus_per_node;
  const bool rack_scale = per_node > 16;  // an NVL72 rack modelled as one NVLink node
  int tray_gpus = 0;                      // the stated GPUs per node, where they are a tray's
  if (has(hw, "gpus_per_node") && rack_scale && positive<int>(hw, "gpus_per_node") < per_node) {
    tray_gpus = positive<int>(hw, "gpus_per_node");
    defaults.push_back("hardware.gpus_per_node: " + std::to_string(positive<int>(hw, "gpus_per_node")) +
                       " GPUs per tray, in one " + std::to_string(per_node) + "-GPU NVLink rack");
  } else if (has(hw, "gpus_per_node")) {
    per_node = positive<int>(hw, "gpus_per_node");
    cl["gpus_per_node"] = per_node;
  } else {
    defaults.push_back("hardware.gpus_per_node: the node type's (" + std::to_string(per_node) + ")");
  }
  if (gpus < per_node) cl["gpus_per_node"] = gpus;  // a single partial node
  int nodes = std::max(1, (gpus + per_node - 1) / per_node);
  // GPUs that do not fill whole nodes: spread evenly over the fewest nodes that hold them; NVLink
  // racks, partly filled in whole trays (1,024 GB200 as 16 racks of 64), over the fewest racks
  // that take an equal number of trays each.
  if (rack_scale && gpus > per_node && gpus % per_node != 0) {
    const int tray = tray_gpus > 0 ? tray_gpus : 4;
    for (int n = nodes; n <= gpus / tray; ++n)
      if (gpus % n == 0 && (gpus / n) % tray == 0) {
        nodes = n;
        break;
      }
  }
  cl["nodes"] = nodes;
  if (gpus > per_node && gpus % per_node != 0) {
    if (gpus % nodes != 0)
      throw std::runtime_error("hardware.num_gpus (" + std::to_string(gpus) + ") does not spread evenly over " +
                               std::to_string(nodes) + " nodes of up to " + std::to_string(per_node) + " GPUs");
    cl["gpus_per_node"] = gpus / nodes;
    defaults.push_back("cluster: " + std::to_string(gpus) + " GPUs as " + std::to_string(nodes) + " nodes of " +
                       std::to_string(gpus / nodes) + " (not whole nodes of " + std::to_string(per_node) + ")");
  }
  const YAML::Node inter = hw["inter_node"];
  if (has(inter, "nic_gbps")) {
    const int gbps = positive<int>(inter, "nic_gbps");
    const hw::NicSpec& nic = hw::bundled_nodes().nic_for(has(inter, "fabric") ? get<std::string>(inter, "fabric") : "",
                                                               gbps);
    if (const std::string note = validate::nic_rate_note(nic, gbps); !note.empty()) defaults.push_back(note);
    cl["nic"] = nic.name;
  } else if (const hw::NicSpec& own = hw::bundled_nodes().nic(hw::bundled_nodes().node(cl["node"].as<std::string>()).nic);
             has(inter, "fabric") && (get<std::string>(inter, "fabric") == "infiniband") != (own.fabric == "infiniband")) {
    // A stated fabric family other than the node type's (RoCE instead of a DGX's InfiniBand): the
    // catalogue NIC of that family at the node type's rate.
    const double gbps = own.bandwidth_Bps * 8 / 1e9;
    const hw::NicSpec& nic = hw::bundled_nodes().nic_for(get<std::string>(inter, "fabric"), gbps);
    cl["nic"] = nic.name;
    defaults.push_back("hardware.inter_node.nic_gbps: the node type's rate on the stated fabric (" + nic.name + ")");
  } else {
    defaults.push_back("hardware.inter_node.nic_gbps: the node type's NIC");
  }
  const hw::NodeSpec& node_type = hw::bundled_nodes().node(cl["node"].as<std::string>());
  if (has(inter, "nics_per_node") && tray_gpus > 0) {
    // Stated beside a tray's GPU count, the NIC count is the tray's too.
    const auto rack = validate::rack_nics_from_tray(positive<int>(inter, "nics_per_node"), tray_gpus,
                                                           cl["gpus_per_node"] ? cl["gpus_per_node"].as<int>() : per_node);
    cl["nics_per_node"] = rack.nics;
    defaults.push_back(rack.note);
  } else if (has(inter, "nics_per_node")) {
    cl["nics_per_node"] = positive<int>(inter, "nics_per_node");
  } else if (!rack_scale && has(hw, "gpus_per_node") && positive<int>(hw, "gpus_per_node") < node_type.gpus_per_node) {
    // A server with fewer GPUs than the node type (a 4-GPU A100 node): the node type's NICs per
    // GPU, not all of its NICs for fewer GPUs.
    const int nics = std::max(1, node_type.nics * positive<int>(hw, "gpus_per_node") / node_type.gpus_per_node);
    cl["nics_per_node"] = nics;
    defaults.push_back("hardware.inter_node.nics_per_node: " + std::to_string(nics) + " (the node type's NICs per GPU)");
  } else {
    defaults.push_back("hardware.inter_node.nics_per_node: the node type's NIC count");
  }
  YAML::Node fabric;
  fabric["topology"] = "fat_tree";
  fabric["oversubscription"] = 1.0;
  cl["fabric"] = fabric;
  defaults.push_back("fabric: non-blocking two-tier fat-tree");
  s["cluster"] = cl;

  // --- model
  if (!m) throw std::runtime_error("the case has no model");
  for (const char* k : {"layers", "hidden"})
    if (!has(m, k)) throw std::runtime_error(std::string("model.") + k + " is null (and the model name is not in the catalogue)");
  // The entry the name names (its stated shape fields were filled from it already): the
  // architecture details the case format has no field for.
  const workload::CatalogModel* named = named_catalogue_model(m);
  const std::string from_catalogue = named ? " (the catalogue's " + named->name + ")" : "";
  const std::string att = has(m, "attention") ? get<std::string>(m, "attention") : "";  // the attention text
  YAML::Node mo;
  mo["name"] = has(m, "name") ? get<std::string>(m, "name") : std::string("model");
  const long long hidden = positive<long long>(m, "hidden");
  mo["layers"] = positive<long long>(m, "layers");
  mo["hidden"] = hidden;
  if (has(m, "heads")) {
    mo["heads"] = positive<long long>(m, "heads");
  } else if (hidden % 128 == 0) {
    // The head dimension of every large model family since GPT-3 6.7B (Llama, MPT, Mistral, Qwen).
    mo["heads"] = hidden / 128;
    defaults.push_back("model.heads: hidden / 128 = " + std::to_string(hidden / 128) + " (head dimension 128)");
  } else {
    throw std::runtime_error("model.heads is null (and hidden is not a multiple of a 128-wide head)");
  }
  if (has(m, "seq_len")) {
    mo["seq_len"] = positive<long long>(m, "seq_len");
  } else {
    // GPT-3's 2048 was the common pretraining length of the Volta/Ampere era; Llama 2's 4096 later.
    mo["seq_len"] = old_gen ? 2048 : 4096;
    defaults.push_back(std::string("model.seq_len: ") + (old_gen ? "2048 (Volta/Ampere era)" : "4096 (Hopper and later)"));
  }
  if (has(m, "kv_heads")) mo["kv_heads"] = positive<long long>(m, "kv_heads");
  else if (!(named && named->config.is_mla()) && att.find("MLA") == std::string::npos && att.find("latent") == std::string::npos)
    defaults.push_back("model.kv_heads: = heads (multi-head attention)");  // MLA gives every head its own K and V
  long long ffn = 4 * hidden;
  if (has(m, "ffn_hidden")) ffn = positive<long long>(m, "ffn_hidden");
  else defaults.push_back("model.ffn_hidden: 4 * hidden");
  mo["ffn_hidden"] = ffn;
  if (has(m, "vocab")) {
    mo["vocab"] = positive<long long>(m, "vocab");
  } else {
    const auto [vocab, why] = default_vocab(has(m, "name") ? get<std::string>(m, "name") : "");
    mo["vocab"] = vocab;
    defaults.push_back("model.vocab: " + std::to_string(vocab) + " (" + why + ")");
  }
  if (has(m, "mlp")) {
    mo["mlp"] = lowercase(get<std::string>(m, "mlp"));
  } else if (has(m, "moe")) {
    mo["mlp"] = "swiglu";  // every published MoE family (Mixtral, DeepSeek, Qwen-MoE) gates its MLPs
    defaults.push_back("model.mlp: swiglu (MoE models)");
  } else {
    // Gated MLPs use 8/3 h (LLaMA-1/2 small) up to 3.5 h (Llama-2-70B, Llama-3, Mistral/Mixtral:
    // 14336/4096, 28672/8192); GPT-style (and squared-ReLU Nemotron) MLPs use 4 h. Split between.
    const bool gated = static_cast<double>(ffn) / hidden < 3.75;
    mo["mlp"] = gated ? "swiglu" : "gelu";
    defaults.push_back(std::string("model.mlp: ") + (gated ? "swiglu (ffn_hidden < 3.75 h)" : "gelu (ffn_hidden >= 3.75 h)"));
  }
  // Embeddings tied or not as the notes say, before the catalogue's family default.
  const std::optional<bool> tied = notes_tied_embeddings(case_notes);
  const bool tied_stated = tied.has_value();
  if (tied_stated) {
    mo["tied_embeddings"] = *tied;
    defaults.push_back(std::string("model.tied_embeddings: ") + (*tied ? "true" : "false") + " (the notes)");
  }
  // The gated-MLP families (LLaMA, Mistral/Mixtral, Qwen, DeepSeek) all normalise with RMSNorm;
  // GPT-style models with LayerNorm (the model default).
  if (named) {
    const workload::ModelConfig& k = named->config;
    if (k.norm == workload::Norm::RmsNorm) mo["norm"] = "rmsnorm";
    defaults.push_back(std::string("model.norm: ") + (k.norm == workload::Norm::RmsNorm ? "rmsnorm" : "layernorm") +
                       from_catalogue);
    for (const auto& [key, on] : {std::pair<const char*, bool>{"tied_embeddings", k.tied_embeddings}, {"qkv_bias", k.qkv_bias}})
      if (on && !(std::string(key) == "tied_embeddings" && tied_stated)) {
        mo[key] = true;
        defaults.push_back(std::string("model.") + key + ": true" + from_catalogue);
      }
  } else if (mo["mlp"].as<std::string>() == "swiglu") {
    mo["norm"] = "rmsnorm";
    defaults.push_back("model.norm: rmsnorm (gated-MLP families)");
  }
  // A norm the notes state as a config value ("norm_type = layernorm", "normalization: RMSNorm")
  // wins over the catalogue's and the family default.
  static const std::regex norm_said(R"((norm_type|normalization)\W{0,4}(layernorm|rmsnorm|layer_norm|rms_norm)\b)");
  if (std::smatch nm; std::regex_search(low_notes, nm, norm_said)) {
    const std::string norm = nm[2].str().find("rms") != std::string::npos ? "rmsnorm" : "layernorm";
    if (!mo["norm"] || mo["norm"].as<std::string>() != norm) {
      mo["norm"] = norm;
      defaults.push_back("model.norm: " + norm + " (the notes' " + nm[1].str() + ")");
    }
  }
  // Multi-head latent attention stated in words (DeepSeek-V2/V3): its latent ranks, read literally;
  // the per-head dimensions are DeepSeek's 128 (nope and value) when not stated.
  if (att.find("MLA") != std::string::npos || att.find("latent") != std::string::npos) {
    const long long kv = number_after(att, "kv compression"), q = number_after(att, "query compression"),
                    rope = number_after(att, "rope head dim");
    if (kv <= 0 || rope <= 0)
      throw std::runtime_error("model.attention names MLA without a kv compression rank and a RoPE head dim");
    YAML::Node mla;
    mla["q_lora_rank"] = q;
    mla["kv_lora_rank"] = kv;
    mla["qk_rope_head_dim"] = rope;
    mla["qk_nope_head_dim"] = 128;
    mla["v_head_dim"] = 128;
    mo["mla"] = mla;
    defaults.push_back("model.mla: ranks from the attention text; qk_nope_head_dim = v_head_dim = 128 (DeepSeek-V2/V3)");
  } else if (named && named->config.is_mla()) {
    mo["mla"] = YAML::Clone(named->model.yaml()["mla"]);
    defaults.push_back("model.mla: latent ranks and head dimensions" + from_catalogue);
  }
  // A head dimension other than hidden / heads (GPT-OSS: 64 heads of 64 on hidden 2880), and a
  // sliding window with the layers that skip it, stated in words.
  if (att.find("MLA") == std::string::npos) {
    if (const long long hd = number_after(att, "head dim"); hd > 0) {
      mo["head_dim"] = hd;
      defaults.push_back("model.head_dim: " + std::to_string(hd) + " (from the attention text)");
    }
  }
  if (!mo["head_dim"] && !mo["mla"] && named && named->model.has("head_dim")) {
    mo["head_dim"] = named->config.head_dim;
    defaults.push_back("model.head_dim: " + std::to_string(named->config.head_dim) + from_catalogue);
  }
  if (number_after(att, "sliding window") <= 0 && named && named->config.sliding_window > 0) {
    mo["sliding_window"] = named->config.sliding_window;
    if (named->config.full_attention_every > 0) mo["full_attention_every"] = named->config.full_attention_every;
    defaults.push_back("model.sliding_window: " + std::to_string(named->config.sliding_window) +
                       (named->config.full_attention_every > 0
                            ? ", full attention every " + std::to_string(named->config.full_attention_every) + " layers"
                            : std::string()) +
                       from_catalogue);
  }
  if (const long long window = number_after(att, "sliding window"); window > 0) {
    mo["sliding_window"] = window;
    static const std::regex every_nth_full("every ([0-9]+)(st|nd|rd|th) layer (uses )?full");
    std::smatch hit;
    const std::string low = lowercase(att);
    if (std::regex_search(low, hit, every_nth_full)) mo["full_attention_every"] = std::stoi(hit[1].str());
    else if (low.find("alternate layers") != std::string::npos) mo["full_attention_every"] = 2;
  }
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
    defaults.push_back("model.attention: flash (an unversioned FlashAttention on a GPU the original kernels do not "
                       "run on: the generation's fused kernels)");
  } else if (!old_gen && std::regex_search(low_notes, te_fused_off)) {
    // Transformer Engine with its cuDNN fused attention switched off runs the flash-attn package.
    mo["attention"] = "flash2";
    defaults.push_back("model.attention: flash2 (the notes set NVTE_FUSED_ATTN=0: Transformer Engine's FlashAttention backend)");
  } else if (const std::string stack_kernel = old_gen ? "" : stack_behaviour(c, gpu, "attention_kernel"); !stack_kernel.empty()) {
    // The stack's own attention kernels where its catalogue entry states them (e.g. NeMo before
    // 24.05: Transformer Engine's FlashAttention-2).
    mo["attention"] = stack_kernel;
    defaults.push_back("model.attention: " + stack_kernel + " (the stack's kernels, its catalogue entry's attention_kernel)");
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
                       (old_gen ? "unfused (Volta/Ampere-era Megatron)" : "flash (the generation's fused kernels: Hopper, Blackwell, CDNA 3/4)"));
  }
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
        throw std::runtime_error("model.moe.experts is null (and the model name neither is in the catalogue nor says "
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
    if (has(moe, "expert_ffn_hidden")) mm["expert_ffn_hidden"] = positive<long long>(moe, "expert_ffn_hidden");
    else { mm["expert_ffn_hidden"] = ffn; defaults.push_back("model.moe.expert_ffn_hidden: = ffn_hidden"); }
    // Token dropping at a stated capacity factor ("a capacity factor equal to 1",
    // "moe_expert_capacity_factor 1.0"): every expert takes at most that many times its mean share.
    // Not Megatron's moe_expert_rank_capacity_factor (a per-rank receive buffer for static
    // shapes under forced balancing: no token is dropped).
    static const std::regex capacity(R"((rank[ _])?capacity[ _-]factor(?:\s+(?:equal to|of|is))?\s*[=:]?\s*([0-9]+(?:\.[0-9]+)?))");
    std::smatch cf;
    std::string rest = low_notes;
    bool dropping = false;
    while (std::regex_search(rest, cf, capacity)) {
      if (!cf[1].matched && std::stod(cf[2].str()) > 0) { dropping = true; break; }
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
  s["model"] = mo;

  // --- parallelism
  if (!p) throw std::runtime_error("the case has no parallelism");
  YAML::Node pl;
  const int cp = has(p, "cp") ? positive<int>(p, "cp") : 1;
  const int ep = has(p, "ep") ? positive<int>(p, "ep") : 1;
  int tp = has(p, "tp") ? positive<int>(p, "tp") : 0;
  int pp = has(p, "pp") ? positive<int>(p, "pp") : 0;
  int dp = has(p, "dp") ? positive<int>(p, "dp") : 0;
  auto whole_split = [&](long long divisor, const char* what) {
    if (gpus % divisor != 0)
      throw std::runtime_error("hardware.num_gpus (" + std::to_string(gpus) + ") is not a multiple of " + what + " (" +
                               std::to_string(divisor) + ")");
  };
  if (!tp || !pp) {  // dp is stated (smallest_fitting_plan took the others)
    whole_split(static_cast<long long>(dp) * cp, "dp * cp");
    const int mp = gpus / (dp * cp);
    if (!tp && !pp) {
      tp = std::min(mp, per_node);
      pp = mp / tp;
      defaults.push_back("parallelism.tp/pp: model-parallel size split as tp = min(mp, GPUs per node), pp = mp / tp");
    } else if (!tp) {
      tp = mp / pp;
      defaults.push_back("parallelism.tp: GPUs / (dp * cp * pp)");
    } else {
      pp = mp / tp;
      defaults.push_back("parallelism.pp: GPUs / (dp * cp * tp)");
    }
  }
  if (tp < 1 || pp < 1)
    throw std::runtime_error("the stated parallel degrees leave no whole tp and pp for " + std::to_string(gpus) + " GPUs");
  if (!dp) {
    whole_split(static_cast<long long>(tp) * pp * cp, "tp * pp * cp");
    dp = gpus / (tp * pp * cp);
    defaults.push_back("parallelism.dp: GPUs / (tp * pp * cp)");
  }
  pl["tp"] = tp; pl["pp"] = pp; pl["dp"] = dp; pl["cp"] = cp; pl["ep"] = ep;
  if (!has(p, "cp")) defaults.push_back("parallelism.cp: 1");
  // An ep larger than dp*cp allows only MoE parallel folding with whole experts; notes that state
  // Megatron-Core's expert tensor parallel size 1 ("expert-tensor-parallel 1", "ETP1") ask for it.
  static const std::regex etp_one(R"((expert[- _]tensor[- _]parallel(?:[- _]size)?\s*[=:]?\s*|\betp\s*[=:]?\s*)1\b)",
                                  std::regex::icase);
  if (ep > 1 && tp > 1 && (tp * dp * cp) % ep == 0) {
    if ((dp * cp) % ep != 0) {
      pl["etp"] = 1;
      defaults.push_back("parallelism.etp: 1 (ep does not divide dp*cp; MoE parallel folding with whole experts)");
    } else if (std::regex_search(case_notes, etp_one)) {
      pl["etp"] = 1;
      defaults.push_back("parallelism.etp: 1 (the notes state expert tensor parallel 1: whole experts)");
    }
  }
  // Megatron-DeepSpeed named: DeepSpeed's pipeline engine, which has no interleaved schedule, and
  // Megatron's sequence parallelism off unless stated (its own default).
  const bool megatron_deepspeed = notes_name(case_notes, "Megatron-DeepSpeed");
  if (has(p, "sequence_parallel")) {
    pl["sequence_parallel"] = get<bool>(p, "sequence_parallel");
  } else {
    const bool sp = !old_gen && !megatron_deepspeed && tp > 1;
    pl["sequence_parallel"] = sp;
    defaults.push_back(std::string("parallelism.sequence_parallel: ") +
                       (sp ? "true (Megatron-Core/NeMo and torchtitan default with TP on Hopper-and-later stacks)"
                           : megatron_deepspeed && tp > 1 ? "false (Megatron-DeepSpeed's default)" : "false"));
  }
  // Megatron-LM before v3.0 (2022, which brought sequence parallelism and selective recompute)
  // ran the backward TP collectives in sequence; later Megatron and Transformer Engine overlap
  // them with the dgrad/wgrad GEMMs. A Volta/Ampere-era case using neither feature is taken as
  // pre-2022 (which misreads 2022 baselines run without them; docs/validation.md).
  const bool recompute_selective = has(p, "recompute") && lowercase(get<std::string>(p, "recompute")) == "selective";
  const bool sequence_parallel = pl["sequence_parallel"].as<bool>();
  if (old_gen && tp > 1 && !sequence_parallel && !recompute_selective) {
    pl["async_tp_backward"] = false;
    defaults.push_back("parallelism.async_tp_backward: false (Volta/Ampere-era Megatron-LM using neither sequence "
                       "parallelism nor selective recompute: pre-2022, TP backward collectives in sequence)");
  }
  // Transformer Engine's userbuffer overlap of the sequence-parallel collectives with their GEMMs,
  // where the notes say it ran ("--tp-comm-overlap", "TP_COMM_OVERLAP True", "ub_tp_comm_overlap=true").
  // A line commented out ("#export TP_COMM_OVERLAP=True") did not run.
  static const std::regex tp_overlap(R"(--tp-comm-overlap\b|tp_comm_overlap\s*[=:]?\s*(true|1)\b)");
  if (tp > 1 && sequence_parallel && set_not_commented_out(low_notes, tp_overlap)) {
    pl["tp_comm_overlap"] = true;
    defaults.push_back("parallelism.tp_comm_overlap: true (the notes: TP communication overlapped with the GEMMs)");
  }
  // Both stacks of that era split pipeline sends over the tensor-parallel ranks: Megatron-LM's
  // scatter_gather_tensors_in_pipeline (default on until Megatron-Core's p2p module, 2023) and
  // DeepSpeed's pipeline engine (partitioned activations and gradients).
  if (old_gen && tp > 1 && !sequence_parallel && pp > 1) {
    pl["p2p_scatter_gather"] = true;
    defaults.push_back("parallelism.p2p_scatter_gather: true (Volta/Ampere-era Megatron-LM and DeepSpeed pipelines send "
                       "1/tp of the hidden states per rank and all-gather them over NVLink)");
  }
  const bool torchtitan = notes_name(case_notes, "torchtitan");
  // torchtitan's pipeline defaults (build_pipeline_schedule, generate_split_points): a looped
  // schedule (Interleaved 1F1B) runs 2 stages per rank, a single-stage one 1, and the local batch
  // is split into one micro-batch per stage in total (pp x stages per rank).
  const bool torchtitan_pipeline = torchtitan && pp > 1;
  int torchtitan_vp = 0;
  if (torchtitan_pipeline && !has(p, "vp")) {
    torchtitan_vp = low_notes.find("interleaved") != std::string::npos ? 2 : 1;
    defaults.push_back("parallelism.vp: " + std::to_string(torchtitan_vp) +
                       " (torchtitan's stages per rank for the schedule the notes name)");
  }
  if (has(p, "micro_batch")) {
    pl["micro_batch"] = positive<int>(p, "micro_batch");
  } else if (torchtitan_pipeline && has(p, "global_batch")) {
    const int vp = has(p, "vp") ? positive<int>(p, "vp") : torchtitan_vp;
    const int local = positive<int>(p, "global_batch") / dp, micro_batches = pp * vp;
    if (local % micro_batches != 0 || local < micro_batches)
      throw std::runtime_error("the local batch (" + std::to_string(local) + ") does not split into torchtitan's " +
                               std::to_string(micro_batches) + " pipeline micro-batches");
    pl["micro_batch"] = local / micro_batches;
    defaults.push_back("parallelism.micro_batch: " + std::to_string(local / micro_batches) +
                       " (torchtitan: the local batch over pp x stages per rank = " + std::to_string(micro_batches) +
                       " micro-batches)");
  } else {
    pl["micro_batch"] = 1;
    defaults.push_back("parallelism.micro_batch: 1");
  }
  if (has(p, "global_batch")) {
    const int gb = positive<int>(p, "global_batch"), mb = pl["micro_batch"].as<int>();
    pl["global_batch"] = gb;
    // A last, smaller micro-batch (Composer/llm-foundry accumulate the remainder): replay whole
    // micro-batches and scale the step by the sequences actually trained (predict_training_case).
    if (dp > 0 && gb % dp == 0 && gb % (mb * dp) != 0) {
      const int per_rank = gb / dp, micro_batches = (per_rank + mb - 1) / mb;
      pl["global_batch"] = micro_batches * mb * dp;
      defaults.push_back("parallelism.global_batch: " + std::to_string(gb) + " sequences are " + std::to_string(per_rank) +
                         " per data-parallel rank, not a multiple of micro_batch " + std::to_string(mb) + ": " +
                         std::to_string(micro_batches) + " micro-batches replayed, the step scaled by " +
                         std::to_string(per_rank) + "/" + std::to_string(micro_batches * mb) +
                         " (the last micro-batch's cost taken as proportional to its sequences)");
    }
  } else if (torchtitan && pp == 1) {
    // torchtitan trains one local batch per rank per step unless gradient accumulation is set
    // (its training.local_batch_size; global_batch_size defaults to local x data-parallel ranks).
    pl["global_batch"] = pl["micro_batch"].as<int>() * dp;
    defaults.push_back("parallelism.global_batch: micro_batch x dp (torchtitan: one local batch per rank per step)");
  } else if (publishes_layer_time(c)) {
    // A per-layer time does not depend on the batch: one micro-batch per data-parallel rank.
    pl["global_batch"] = pl["micro_batch"].as<int>() * dp;
    defaults.push_back("parallelism.global_batch: micro_batch x dp (only one layer's time is compared)");
  } else if (pp == 1 && publishes_step_time(c)) {
    // A time per iteration published without its batch is a benchmark's iteration: the frameworks'
    // default batch, one micro-batch per data-parallel rank (Megatron-LM's global_batch_size
    // defaults to micro_batch_size x data_parallel_size; DeepSpeed's and Hugging Face's gradient
    // accumulation to 1). A pretraining run's ~4M tokens (below) would multiply the iteration.
    pl["global_batch"] = pl["micro_batch"].as<int>() * dp;
    defaults.push_back("parallelism.global_batch: micro_batch x dp (a published iteration time without its batch: the "
                       "frameworks' default, no gradient accumulation)");
  } else {
    // A 4M-token batch (2^22 tokens: LLaMA's and Llama 2's; BLOOM 4.2M, MT-NLG 3.9M, GPT-3 175B
    // 3.2M) as whole micro-batches per data-parallel replica, at least one per pipeline stage and
    // a multiple of the stages (interleaving needs it).
    const int mb = pl["micro_batch"].as<int>();
    const double sequences = 4194304.0 / mo["seq_len"].as<double>();
    int micro_batches = std::max(1, static_cast<int>(std::lround(sequences / (static_cast<double>(mb) * dp))));
    if (pp > 1) micro_batches = std::max(pp, (micro_batches + pp - 1) / pp * pp);
    pl["global_batch"] = micro_batches * mb * dp;
    defaults.push_back("parallelism.global_batch: " + std::to_string(micro_batches * mb * dp) +
                       " (about 4M tokens as whole micro-batches per replica, " + std::to_string(micro_batches) +
                       " micro-batches of " + std::to_string(mb) + ")");
  }
  // DeepSeek's DualPipe, named in the notes: its own two chunks per rank, no interleaving.
  const bool dualpipe = case_notes.find("DualPipe") != std::string::npos;
  if (dualpipe) {
    pl["schedule"] = "dualpipe";
    defaults.push_back("parallelism.schedule: dualpipe (the notes name DualPipe)");
  }
  pipeline_split(positive<int>(m, "layers"), pp, dualpipe || (megatron_deepspeed && !has(p, "vp")) ? 1 : has(p, "vp") ? positive<int>(p, "vp") : torchtitan_vp, !old_gen,
                 pl["global_batch"].as<int>() / (pl["micro_batch"].as<int>() * dp), pl, defaults);
  // Interleaved pipelines send asynchronously with today's launchers (the plan default); the
  // Megatron-LM of Volta/Ampere-era runs (2020-22) sent blocking: overlap_p2p_comm came in 2023.
  if (old_gen && pl["vp"].as<int>() > 1) {
    pl["overlap_p2p_comm"] = false;
    defaults.push_back("parallelism.overlap_p2p_comm: false (Volta/Ampere-era Megatron-LM: blocking pipeline sends)");
  }
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
  } else if (static const std::regex fp16_said(
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
    defaults.push_back("parallelism.optimizer_moments: int8 (the notes: --use-bnb-optimizer, bitsandbytes' 8-bit Adam)");
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
  // Gradient precision on the wire, where the notes state it: PyTorch FSDP's mixed-precision
  // modes as Composer/llm-foundry name them (DEFAULT and FULL reduce in fp32, PURE in 16 bit).
  bool reduce_stated = false;
  for (const char* mode : {"DEFAULT", "FULL", "PURE"})
    if (case_notes.find(std::string("mixed-precision mode: ") + mode) != std::string::npos) {
      reduce_stated = true;
      pl["grad_reduce_fp32"] = std::string(mode) != "PURE";
      defaults.push_back(std::string("parallelism.grad_reduce_fp32: ") + (std::string(mode) != "PURE" ? "true" : "false") +
                         " (the notes' FSDP mixed-precision mode " + mode + ")");
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
  // PyTorch FSDP's HYBRID_SHARD, HSDP or hybrid-sharded data parallelism named in the notes, or
  // shards said to stay inside a node ("sharded over the 8 GPUs of a VM"): shards inside a node,
  // replicas across nodes.
  static const std::regex hybrid(
      R"(HYBRID_SHARD|\bHSDP\b|hybrid[- ]shard|(shard(ed|s)?|distributed|partitioned) [^.;]{0,60}(within|inside|over the [0-9]+ GPUs of)[^.;]{0,30}\b(a|each|one|the)( single)? (node|VM|server|host))",
      std::regex::icase);
  if (pl["zero"].as<int>() >= 1 && stated_for_this_run(case_notes, hybrid)) {
    // The source's node (a GB200 compute tray of 4, not the NVL72 rack the cluster is built as).
    const int node_gpus = has(hw, "gpus_per_node")            ? positive<int>(hw, "gpus_per_node")
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
  static const std::regex shard_group(R"([Ss]harded (?:across|over groups of) ([0-9]+)(?: GPUs)?|\bfsdp=([0-9]+)|shard_degree\s*[=:]\s*([0-9]+))");
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
  // The FP8 recipe, from the notes: MXFP8 where the run's precision is FP8-MX / MXFP8, current
  // scaling where it is FP8-CS, "current scaling" or torchao's dynamic (tensorwise / rowwise)
  // float8; otherwise delayed scaling (Transformer Engine's and Megatron's default, the plan's).
  if (pl["precision"].as<std::string>() == "fp8") {
    // "Precision FP8-MX", 'Precision "MXFP8"', "uses the parenthesised FP8-MX figures" (a table
    // row printing FP8-CS with its FP8-MX figures in parentheses).
    static const std::regex mx(R"(precision\W{0,3}(fp8-mx|mxfp8)|uses the (parenthesi[sz]ed )?(fp8-mx|mxfp8) figures)", std::regex::icase),
        cs_precision(R"(precision\W{0,3}fp8-cs)", std::regex::icase),
        mx_named(R"(\bfp8_mx\b|mxfp8 ?block ?scaling)", std::regex::icase),
        cs(R"(precision\W{0,3}fp8-cs|current scaling|\btorchao\b|tensorwise|rowwise|dynamic scaling)", std::regex::icase);
    // A precision statement first; then the recipe by its other names (fp8_mx, "MXFP8 block
    // scaling", MXFP8BlockScaling), which a stated FP8-CS precision outranks.
    if (std::regex_search(case_notes, mx) ||
        (!std::regex_search(case_notes, cs_precision) && std::regex_search(case_notes, mx_named))) {
      pl["fp8_recipe"] = "mxfp8";
      defaults.push_back("parallelism.fp8_recipe: mxfp8 (the notes' precision is MXFP8)");
    } else if (std::regex_search(case_notes, cs)) {
      pl["fp8_recipe"] = "current";
      defaults.push_back("parallelism.fp8_recipe: current (the notes: FP8 scaled by each tensor's current amax, "
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
    defaults.push_back(deepep     ? "parallelism.ep_dispatch: deepep (the notes name DeepEP or HybridEP)"
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
      defaults.push_back("parallelism.ep_overlap: false (the notes name the EP all-to-all overlap, which Megatron runs "
                         "only with interleaving or without a pipeline; vp is 1)");
    }
  }
  // Eager PyTorch modules (named in the notes): element-wise ops run op by op. So do torchtitan's
  // and Hugging Face Transformers' model code unless the notes say torch.compile ran (torchtitan's
  // training.compile is off by default).
  // torch.compile named as used ("torch.compile on", "use torch.compile", "torch.compile, FSDP2",
  // "--training.compile", "compile = true"), not as off ("torch.compile off", "torch.compile: off",
  // "is off by default", "without torch.compile", "compile = false").
  static const std::regex compile_on(R"(torch\.compile|--training\.compile\b|\bcompile\s*[=:]\s*true|compiles each|\bcompile (is )?(enabled|on)\b)");
  static const std::regex compile_off(R"(torch\.compile\s*[:=]?\s*(is )?(off|disabled|not used|false)\b|(without|no|not) (using )?torch\.compile|\bcompile\s*[=:]\s*false)");
  static const std::regex transformers_code(R"(hugging ?face transformers|\bhf transformers|(llama|mistral|qwen2?|gpt2)forcausallm|modeling_llama)");
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
  static const std::regex full_graph(R"(full_cuda_graph\s*[=:]\s*(true|1)\b|cuda_graph_scope\s*[=:]?\s*full_iteration)");
  static const std::regex layer_graph(R"(enable_cuda_graph\s*[=:]?\s*(true|1)\b)");
  static const std::regex scope_list(R"(cuda_graph_scope\W{0,4}((?:[\s,'"]*(?:attn|mlp|moe_router|moe_preprocess)\b)+))");
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
      defaults.push_back("parallelism.cuda_graphs: [attn, mlp] (the notes: Transformer Engine's per-layer CUDA graphs)");
    }
  }
  // The optimizer offloaded to the host CPU (DeepSpeed's offload_optimizer / ZeRO-Offload), and
  // with ZeRO-3 the parameter shards too (DeepSpeed's offload_param, ZeRO-Infinity's CPU tier;
  // FSDP's CPUOffload, which keeps parameters, gradients and optimizer on the host and steps there).
  // Not a config quoted with the device none ("offload_optimizer device none").
  static const std::regex offload(R"(offload_optimizer|zero-offload|optimizer (state )?offload|offload(ing|ed)? (of )?(the )?optimizer|cpu[ -]?adam)");
  static const std::regex offload_off(R"(offload_optimizer\W{0,12}(device\W{0,6})?(none|null|false)\b|(no|without) (cpu )?(optimizer )?offload)");
  static const std::regex params_offload(
      R"(offload_param\W{0,12}(device\W{0,6})?(cpu|nvme)\b|offload_params\s*=\s*true|fsdp_cpu_offload\W{0,4}(:|=)\s*true|parameters? (and activation )?cpu offloading (was|were) used)");
  const int zero_stage = pl["zero"].as<int>();
  const bool params_offloaded = !has(p, "offload_params") && zero_stage == 3 && said_of_this_run(low_notes, params_offload);
  if (!has(p, "offload_optimizer") &&
      (params_offloaded || (std::regex_search(low_notes, offload) && !std::regex_search(low_notes, offload_off)))) {
    if (zero_stage >= 1) {
      pl["offload_optimizer"] = true;
      defaults.push_back(std::string("parallelism.offload_optimizer: true (the notes: ") +
                         (params_offloaded ? "parameters offloaded, stepped on the CPU)" : "the optimizer offloaded to the CPU)"));
    } else {
      defaults.push_back("note: the notes offload the optimizer, not modelled with zero 0");
    }
  }
  if (params_offloaded && pl["offload_optimizer"] && pl["offload_optimizer"].as<bool>()) {
    pl["offload_params"] = true;
    defaults.push_back("parallelism.offload_params: true (the notes: the parameter shards offloaded to the CPU)");
  }
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
      const int n = std::stoi(hit[1].str()), chunk = positive<int>(m, "layers") / (pl["pp"].as<int>() * pl["vp"].as<int>());
      if (n >= 1 && chunk / n >= 1) {
        pl["recompute"] = "full";
        pl["recompute_layers"] = chunk / n;
        defaults.push_back("parallelism.recompute_layers: " + std::to_string(chunk / n) +
                           " per model chunk (the notes: checkpointing of every " + hit[1].str() + hit[2].str() + " layer)");
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
  s["parallelism"] = pl;
  return s;
}

}  // namespace

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
      if (stacks.entry(*family, version, year)) out["version"] = version;
      else defaults.push_back("software.version: '" + version + "' is not in the " + framework + " catalogue; the " +
                              (year ? "year" : "newest entry") + " chooses the profile");
    }
    return out;
  }
  const hw::GpuCatalog& gpus = hw::bundled_gpus();
  const std::string arch = gpus.has(gpu) ? gpus.get(gpu).architecture : "";
  const auto [framework, year] = stacks.era_default(arch);
  out["framework"] = framework;
  if (has(sw, "year")) out["year"] = get<int>(sw, "year");
  else if (year) out["year"] = year;
  defaults.push_back("software: " + framework + (out["year"] ? " " + out["year"].as<std::string>() : std::string()) +
                     " (the source does not say: the stack of the GPU's era, stacks/eras.yaml)");
  return out;
}

YAML::Node training_case_scenario(const YAML::Node& c, std::vector<std::string>& defaults) {
  YAML::Node s = case_scenario(with_catalogue_shape(c, defaults), defaults);
  s["software"] = case_software(c, s["cluster"]["gpu"] ? s["cluster"]["gpu"].as<std::string>() : std::string(), defaults);
  // A published run fitted in its GPUs' memory: where the era's default (no sharding) does not
  // but the distributed optimizer / ZeRO-1 (the sharding of Megatron-LM's and Megatron-DeepSpeed's
  // large runs) does, the case ran with it, as recompute: auto takes the least recomputation.
  const YAML::Node p = c["parallelism"];
  if (p && !has(p, "zero") && s["parallelism"]["zero"].as<int>() == 0 && s["parallelism"]["dp"].as<int>() > 1) {
    try {
      if (!fits_in_memory(scenario_from_yaml(YAML::Clone(s), "case").training)) {
        YAML::Node sharded = YAML::Clone(s);
        sharded["parallelism"]["zero"] = 1;
        if (fits_in_memory(scenario_from_yaml(YAML::Clone(sharded), "case").training)) {
          defaults.push_back("parallelism.zero: 1 (unsharded it does not fit in memory; ZeRO-1 does)");
          return sharded;
        }
      }
    } catch (const std::exception&) {
      // an unbuildable scenario is reported by the caller's own parse
    }
  }
  return s;
}

void predict_training_case(const YAML::Node& c, CaseOutcome& out, const ValidationFilter& options) {
  const YAML::Node meas = c["measured"];
  const YAML::Node scenario_yaml = training_case_scenario(c, out.defaults);
  YAML::Emitter emitted;
  emitted << scenario_yaml;
  out.scenario_yaml = std::string(emitted.c_str()) + "\n";
  Scenario scenario = scenario_from_yaml(scenario_yaml, "case " + out.id);
  SoftwareStack& sw = scenario.training.software;
  if (options.stack_params == ValidationFilter::StackParams::Reference) {
    sw.params = StackParameters{};
  } else if (options.stack_params == ValidationFilter::StackParams::PerSource) {
    sw.params = StackParameters{};
    if (const auto src = options.per_source.find(out.source); src != options.per_source.end())
      if (const auto fam = src->second.find(sw.framework); fam != src->second.end()) sw.params = fam->second;
  }
  const TrainingResult r = simulate_training(scenario.training, RunOptions{});
  out.family = sw.framework;
  out.architecture = hw::bundled_gpus().get(scenario.training.gpu).architecture;
  out.num_gpus = r.num_gpus;
  out.step_time_s = r.step_time_s;
  out.kernels_per_step = r.host_launches_per_step;
  out.breakdown = r.breakdown;
  if (r.oom) out.defaults.push_back("note: predicted out of memory (" + r.oom_detail + ")");
  // The sequences the run trains per step over those replayed (a partial last micro-batch).
  const YAML::Node cp = c["parallelism"];
  const double trained_fraction =
      has(cp, "global_batch") ? get<double>(cp, "global_batch") / scenario_yaml["parallelism"]["global_batch"].as<double>() : 1.0;
  // Model FLOPs the source's way, for a published FLOP rate: the ratio of its count to the
  // replay's (full attention core).
  const auto source_flop_count = [&]() {
    if (!counts_causal_attention_half(c, scenario.training.gpu)) return 1.0;
    out.defaults.push_back("model FLOPs: the causal attention core counted at half (the source's Megatron-LM "
                           "2025+ / Megatron-Bridge count)");
    const workload::ModelConfig& m = scenario.training.model;
    const int64_t batch = scenario.training.plan.global_batch;
    return workload::model_flops_per_step(m, batch, workload::AttentionCount::CausalHalf) /
           workload::model_flops_per_step(m, batch);
  };
  if (has(meas, "step_time_s")) {
    out.metric = "step_time_s";
    out.predicted = r.step_time_s * trained_fraction;
    out.measured = get<double>(meas, "step_time_s");
  } else if (has(meas, "tokens_per_s_per_gpu")) {
    out.metric = "tokens_per_s_per_gpu";
    out.predicted = r.tokens_per_s_per_gpu;
    out.measured = get<double>(meas, "tokens_per_s_per_gpu");
  } else if (has(meas, "model_tflops_per_gpu")) {
    out.metric = "model_tflops_per_gpu";
    out.predicted = r.model_tflops_per_gpu * source_flop_count();
    out.measured = get<double>(meas, "model_tflops_per_gpu");
  } else if (has(meas, "hardware_tflops_per_gpu")) {
    // Published with the SC'21 recompute-inclusive count: compute it the same way.
    out.metric = "hardware_tflops_per_gpu (SC'21 count)";
    out.predicted = r.sc21_tflops_per_gpu;
    out.measured = get<double>(meas, "hardware_tflops_per_gpu");
  } else if (has(meas, "mfu")) {
    out.metric = "mfu";
    out.predicted = r.mfu * source_flop_count();
    out.measured = get<double>(meas, "mfu");
  } else if (has(meas, "hfu")) {
    // Hardware FLOPs (recomputation included) over the peak.
    out.metric = "hfu";
    out.predicted = r.hfu * source_flop_count();
    out.measured = get<double>(meas, "hfu");
  } else if (has(meas["other"], "tokens_per_s")) {
    out.metric = "tokens_per_s (the whole job's)";
    out.predicted = r.tokens_per_s;
    out.measured = get<double>(meas["other"], "tokens_per_s");
  } else if (has(meas["other"], "samples_per_s")) {
    out.metric = "samples_per_s (the whole job's)";
    out.predicted = r.tokens_per_s / scenario.training.model.seq_len;
    out.measured = get<double>(meas["other"], "samples_per_s");
  } else if (publishes_layer_time(c)) {
    // One transformer layer, forward + backward (with recomputation), as a per-layer timer sees it.
    const YAML::Node other = meas["other"];
    out.metric = "layer_fwd+bwd_ms";
    out.predicted = 1e3 * (r.layer.forward_s + r.layer.backward_s);
    out.measured = has(other, "layer_combined_ms")
                       ? get<double>(other, "layer_combined_ms")
                       : get<double>(other, "layer_forward_ms") + get<double>(other, "layer_backward_ms");
    char detail[160];
    std::snprintf(detail, sizeof detail, "note: forward %.3g ms, backward %.3g ms predicted", 1e3 * r.layer.forward_s,
                  1e3 * r.layer.backward_s);
    out.defaults.push_back(detail);
  } else {
    out.error = "the case publishes no step time, throughput, TFLOP/s or MFU (only: see measured.other)";
  }
  // The interval: the step time's band, turned for a rate (which falls as the step grows).
  out.time_like = out.metric == "step_time_s" || out.metric == "layer_fwd+bwd_ms";
  if (r.step_time_interval_s.second > 0 && out.error.empty()) {
    const double lo = r.step_time_interval_s.first / r.step_time_s, hi = r.step_time_interval_s.second / r.step_time_s;
    out.interval = out.time_like ? std::make_pair(out.predicted * lo, out.predicted * hi)
                                 : std::make_pair(out.predicted / hi, out.predicted / lo);
  }
}

}  // namespace stacksim::analysis
