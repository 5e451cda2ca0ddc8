// The schema's word lists (config/scenario_schema_*.cpp) against the parsers that read the words:
// every word the table allows must be one its parser knows. A word the table lists but the parser
// refuses as unknown would pass the schema check and then fail late; this test finds it.
#include <gtest/gtest.h>

#include <string>

#include "config/error.hpp"
#include "config/schema.hpp"
#include "config/yaml.hpp"
#include "services/scenario.hpp"

using namespace stacksim;

namespace {

const char* kTraining =
    "cluster: {node: dgx-b200, nodes: 2}\n"
    "model: {preset: Llama 3 8B, seq_len: 4096}\n"
    "parallelism: {tp: 2, pp: 2, dp: 4, vp: 2, micro_batch: 1, global_batch: 16}\n";
const char* kCollective = "cluster: {node: dgx-h100, nodes: 2}\ncollective: {op: all_reduce, gpus: 16}\n";
const char* kServing =
    "cluster: {node: dgx-h100, nodes: 1}\nmodel: {preset: Llama 3 8B}\nserving: {tp: 1}\n"
    "workload: {mode: poisson, rate_per_s: 2, requests: 20, input: {tokens: 512}, output: {tokens: 64}}\n";

// The parser's verdict on `key` set to `word`: "" when the scenario parses.
std::string verdict(const char* base, const std::string& key, const std::string& word) {
  YAML::Node root = config::Node::load_string(base, "t.yaml").yaml();
  analysis::apply_scenario_override(root, key + "=" + word, "t");
  try {
    analysis::scenario_from_yaml(root, "t.yaml");
  } catch (const config::InputError& e) {
    return e.key() + ": " + e.reason();
  }
  return "";
}

}  // namespace

TEST(SchemaWords, EveryWordTheTableAllowsIsOneItsParserKnows) {
  size_t checked = 0;
  for (const auto& k : config::scenario_schema()) {
    if (k.values.empty() || (k.type != config::KeyType::Enum && k.type != config::KeyType::EnumOrList &&
                             k.type != config::KeyType::IntOrEnum && k.type != config::KeyType::List))
      continue;
    const std::string path(k.path);
    const char* base = path.rfind("collective.", 0) == 0                                   ? kCollective
                       : path.rfind("serving.", 0) == 0 || path.rfind("workload.", 0) == 0 ? kServing
                                                                                           : kTraining;
    std::string_view rest = k.values;
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      const std::string word(rest.substr(0, bar));
      rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
      const std::string value = k.type == config::KeyType::List ? "[" + word + "]" : word;
      const std::string v = verdict(base, path, value);
      // Another rule may refuse the word here (fp8 needs its recipe, a mode needs its rate): fine;
      // "unknown" or "expected one of" would mean the parser does not know the word at all.
      EXPECT_EQ(v.find("unknown"), std::string::npos) << path << "=" << value << " -> " << v;
      EXPECT_EQ(v.find("expected one of"), std::string::npos) << path << "=" << value << " -> " << v;
      ++checked;
    }
  }
  EXPECT_GT(checked, 80u);
}
