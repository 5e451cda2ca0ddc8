#include "validate/serving_engine_flags.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>

#include "models/serving/engine_profile.hpp"

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
    const std::regex re(
        "(^|[^A-Za-z0-9_-])(--)?(no[-_])?" + flag_pattern(s.flag) +
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

std::string engine_named_in(const std::string& text) {
  struct Named {
    std::string engine;
    std::regex pattern;
  };
  std::vector<Named> names;
  for (const std::string& e : serving::engine_names()) {
    std::vector<std::string> spellings = serving::load_engine_profile(e).aliases;
    spellings.push_back(e);
    for (const std::string& sp : spellings) {
      std::string escaped;
      for (char ch : sp) escaped += std::string(std::strchr(".^$|()[]{}*+?\\/", ch) && ch ? "\\" : "") + ch;
      names.push_back({e, std::regex("(^|[^A-Za-z0-9])" + escaped + "($|[^A-Za-z0-9])", std::regex::icase)});
    }
  }
  static const std::regex stated(R"(\bEngine:\s*([^,;(]+))", std::regex::icase);
  std::smatch m;
  if (std::regex_search(text, m, stated)) {
    const std::string phrase = m[1].str();
    for (const Named& n : names)
      if (std::regex_search(phrase, n.pattern)) return n.engine;
  }
  std::string found;
  for (const Named& n : names)
    if (std::regex_search(text, n.pattern)) {
      if (!found.empty() && found != n.engine) return "";
      found = n.engine;
    }
  return found;
}

bool states_attention_dp(const std::string& text) {
  static const std::regex re(
      R"(enable[-_]attention[-_]dp\s*[=:]?\s*(true|True)|enable[-_]dp[-_]attention|attention[ -](DP|data[ -]parallel))",
      std::regex::icase);
  return std::regex_search(text, re);
}

bool states_expert_load_balancer(const std::string& text) {
  static const std::regex re(R"(\bEPLB\b|expert[ -]parallel(ism)? load balancer|load_balancer\s*:)", std::regex::icase);
  static const std::regex negated(R"((without|no|w/o)\s+(an?\s+)?(EPLB|expert[ -]parallel))", std::regex::icase);
  return std::regex_search(text, re) && !std::regex_search(text, negated);
}

}  // namespace stacksim::analysis
