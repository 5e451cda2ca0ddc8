// The notes reader: what a case's free-text notes state about its run (flash-attention kernels,
// named frameworks, settings stated for this run and not as advice, counts after a phrase).
#include "validate/case_policy.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

namespace stacksim::analysis::case_policy {

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
  static const std::regex negated(
      "(\\bno|\\bnot|\\bwithout|\\bdisabled?)[ -](using |use of |the )?(flash[ -_]?attn|flash[ -]?attention)");
  static const std::regex switched_off(
      "(flash[ -_]?attn|flash[ -]?attention)[^.;,]{0,24}(disabled|switched off|turned off|not used|: ?false)");
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
  if (names({"cudnn fused attention", "cudnn flash attention", "cudnn fmha", "cudnn_fmha", "cudnn attention"}))
    return "flash";
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
  static const std::regex advice(
      R"(\bprefer(red|s)?\b|\brecommend|\bshould\b|\bsuggest|\bneeds? to be\b|\bnecessity\b)", std::regex::icase);
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
  for (auto it = std::sregex_iterator(low_notes.begin(), low_notes.end(), pattern); it != std::sregex_iterator();
       ++it) {
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
    const auto part_of_name = [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '/';
    };
    if (at > 0 && (part_of_name(t[at - 1]) || t[at - 1] == '-' || t[at - 1] == '.')) continue;
    if (end < t.size() && (part_of_name(t[end]) || (t[end] == '.' && end + 1 < t.size() &&
                                                    std::isalpha(static_cast<unsigned char>(t[end + 1])))))
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
  static const std::regex untied(
      R"(\buntied\b|\buntie[_-]embeddings|tie_word_embeddings\s*[=:]\s*false|share_embeddings_and_output_weights\s*[=:]\s*false)");
  static const std::regex tied(
      R"((^|[^a-z])tied (input[ /-]output |word |input and output )?embeddings?\b|tie_word_embeddings\s*[=:]\s*true|share_embeddings_and_output_weights\s*[=:]\s*true)");
  const bool says_untied = std::regex_search(t, untied), says_tied = std::regex_search(t, tied);
  if (says_untied == says_tied) return std::nullopt;
  return says_tied;
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

// Whether `pattern` matches the notes in a clause (between '.' and ';') that says something of
// this run: not one that leaves it unstated ("ZeRO stage: not stated"), cites an example or a
// possibility ("the guide's example launch uses deepspeed_zero2", "can be combined with ZeRO-3").
bool said_of_this_run(const std::string& notes, const std::regex& pattern, std::smatch* first) {
  // Another row's settings quoted ("the table's final row", "the previous row") are not this run's.
  static const std::regex hedged(
      R"(\bnot (stated|given|specified|known|published|printed)\b|\bunstated\b|\bexample\b|\bcan be\b|\bcould\b|\bmay\b|\bwhether\b|\b(final|last|other|next|previous|later) rows?\b)",
      std::regex::icase);
  // Clauses end at ';' and at a full stop before a space: not inside "dataset.packed" or "2.5".
  const auto boundary = [&](size_t i) {
    return notes[i] == ';' ||
           (notes[i] == '.' && (i + 1 == notes.size() || std::isspace(static_cast<unsigned char>(notes[i + 1]))));
  };
  for (auto it = std::sregex_iterator(notes.begin(), notes.end(), pattern); it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position()), end = at + static_cast<size_t>(it->length());
    size_t from = at, close = end;
    while (from > 0 && !boundary(from - 1)) --from;
    while (close < notes.size() && !boundary(close)) ++close;
    if (std::regex_search(notes.substr(from, close - from), hedged)) continue;
    static const std::regex negated(R"((\bno|\bnot|\bwithout|instead of|rather than)( the| a| an)?\s*$)",
                                    std::regex::icase);
    if (std::regex_search(notes.substr(at >= 24 ? at - 24 : 0, at >= 24 ? 24 : at), negated)) continue;
    if (first) *first = *it;
    return true;
  }
  return false;
}

// The ZeRO stage the notes state for this run ("ZeRO-2", "ZeRO stage 3", "zero_stage: 2",
// DeepSpeed's "deepspeed_zero3" config names), or -1.
int zero_stage_said(const std::string& notes) {
  static const std::regex stage(
      R"(\bzero[-_ ]?(stage[-_ :=]*)?([0-3])\b|deepspeed_zero([0-3])\b|zero_optimization\W+stage\W{0,3}([0-3])\b)",
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

}  // namespace stacksim::analysis::case_policy
