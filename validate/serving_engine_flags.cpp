#include "validate/serving_engine_flags.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

namespace stacksim::analysis {
namespace {

struct Spelling {
  const char* flag;  // dashes or underscores, either is accepted
  const char* key;
};

// vLLM, SGLang, TensorRT-LLM (trtllm-bench / LLM API) and TGI spellings of the same limits.
constexpr Spelling kSpellings[] = {
    {"max-num-seqs", "max_num_seqs"},
    {"max-batch-size", "max_num_seqs"},
    {"max-running-requests", "max_num_seqs"},
    {"max-num-batched-tokens", "max_num_batched_tokens"},
    {"max-num-tokens", "max_num_batched_tokens"},
    {"chunked-prefill-size", "max_num_batched_tokens"},
    {"max-batch-prefill-tokens", "max_num_batched_tokens"},
    {"enable-chunked-prefill", "chunked_prefill"},
    {"gpu-memory-utilization", "gpu_memory_utilization"},
    {"mem-fraction-static", "gpu_memory_utilization"},
    {"kv-cache-free-gpu-mem-fraction", "kv_free_memory_fraction"},
    {"free-gpu-memory-fraction", "kv_free_memory_fraction"},
};

std::string flag_pattern(const std::string& flag) {
  std::string p;
  for (char ch : flag) p += ch == '-' ? std::string("[-_]") : std::string(1, ch);
  return p;
}

}  // namespace

std::vector<EngineFlag> engine_flags_in(const std::string& text) {
  std::vector<EngineFlag> out;
  for (const Spelling& s : kSpellings) {
    if (std::any_of(out.begin(), out.end(), [&](const EngineFlag& f) { return f.key == s.key; })) continue;
    const bool boolean = std::string(s.key) == "chunked_prefill";
    // "--flag 12", "--flag=12", "flag: 12", "flag 12"; a boolean flag alone means true.
    const std::regex re("(^|[^A-Za-z0-9_-])(--)?(no[-_])?" + flag_pattern(s.flag) +
                            (boolean ? R"((\s*[=:]?\s*(true|false|True|False))?)" : R"(\s*[=:]?\s*(-?[0-9]+(\.[0-9]+)?))") +
                            R"((\s*\(?per[ _-]rank\)?)?)",
                        std::regex::icase);
    std::smatch m;
    if (!std::regex_search(text, m, re)) continue;
    EngineFlag f;
    f.key = s.key;
    f.spelling = m[0].str().substr(m[1].length());
    f.per_rank = m[6].matched;
    if (boolean) {
      const std::string word = m[5].str();
      const bool negated = m[3].matched;
      const bool stated_false = !word.empty() && (word[0] == 'f' || word[0] == 'F');
      f.value = (negated != stated_false) ? 0 : 1;
      if (!m[2].matched && word.empty()) continue;  // a bare word in prose, not a flag
    } else {
      f.value = std::stod(m[4].str());
    }
    out.push_back(f);
  }
  return out;
}

bool states_attention_dp(const std::string& text) {
  static const std::regex re(
      R"(enable[-_]attention[-_]dp\s*[=:]?\s*(true|True)|enable[-_]dp[-_]attention|attention[ -](DP|data[ -]parallel))",
      std::regex::icase);
  return std::regex_search(text, re);
}

}  // namespace stacksim::analysis
