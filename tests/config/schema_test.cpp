// The scenario schema (config/schema.hpp): its table is well formed, and checking a scenario
// against it names the file, line, key, expected type/unit/range and the nearest declared key.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "config/schema.hpp"

using namespace stacksim::config;

namespace {

InputError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError("", 0, "", "", "");
}

void check_text(const std::string& yaml) { check_scenario(Node::load_string(yaml, "s.yaml")); }

const char* kValid =
    "name: x\ncluster: {node: dgx-h100, nodes: 8, fabric: {topology: fat_tree, switch_latency: 600 ns}}\n"
    "model: {preset: llama3-8b, seq_len: 4096, moe: {experts: 8, top_k: 2}}\n"
    "parallelism: {tp: 4, dp: 2, global_batch: 16, zero: fsdp, cuda_graphs: [attn, mlp], recompute: auto}\n"
    "host: {cpu_seconds_per_sample: 0.02, storage_read_bandwidth: 5 GB/s, pinned: yes}\n"
    "storage: {read_GBps: 20}\n"
    "slo: {ttft_ms: {p99: 2000}, tpot_ms.p50: 40, e2e_latency_s: 30}\n"
    "workload: {mode: poisson, rate_per_s: 4, input: 1024, output: {dist: normal, mean: 200, stdev: 20}}\n"
    "purchase: {tokens: 2e12, nodes: [16, 32], fabrics: [{topology: fat_tree}],\n"
    "           options: [{name: H100, node: dgx-h100, prices: {gpu_hour_usd: 6.2}}]}\n";

}  // namespace

TEST(Schema, EveryRowIsWellFormedAndDeclaredOnce) {
  std::set<std::string> seen;
  for (const auto& k : scenario_schema()) {
    EXPECT_TRUE(seen.insert(std::string(k.path)).second) << "declared twice: " << k.path;
    EXPECT_FALSE(k.doc.empty()) << k.path << " has no description";
    EXPECT_LE(k.min, k.max) << k.path;
    const auto dot = k.path.rfind('.');
    if (dot != std::string_view::npos) {  // its section is declared, and holds keys
      std::string parent(k.path.substr(0, dot));
      if (parent.size() > 2 && parent.compare(parent.size() - 2, 2, "[]") == 0) parent.resize(parent.size() - 2);
      const KeySpec* p = find_key(parent);
      ASSERT_NE(p, nullptr) << k.path << ": section " << parent << " is not declared";
      EXPECT_NE(p->type, KeyType::String) << k.path;
    }
    if (k.type == KeyType::Quantity) EXPECT_FALSE(k.unit.empty()) << k.path;
  }
  EXPECT_GT(scenario_schema().size(), 200u);
}

TEST(Schema, SectionKeysComeFromTheTable) {
  const auto top = scenario_keys("");
  for (const char* k : {"cluster", "model", "parallelism", "serving", "workload", "slo", "purchase", "software"})
    EXPECT_NE(std::find(top.begin(), top.end(), k), top.end()) << k;
  EXPECT_EQ(scenario_keys("storage"), (std::vector<std::string>{"read_GBps", "write_GBps"}));
  // A section that takes another's keys: purchase options' prices are the prices section's.
  EXPECT_EQ(scenario_keys("purchase.options[].prices"), scenario_keys("prices"));
  EXPECT_EQ(scenario_keys("workload.output"), scenario_keys("workload.input"));
  EXPECT_NE(find_key("purchase.fabrics[].oversubscription"), nullptr);
  EXPECT_NE(find_key("slo.tpot_ms.p99"), nullptr);
  EXPECT_EQ(find_key("parallelism.tpp"), nullptr);
}

TEST(Schema, AValidScenarioPasses) { EXPECT_NO_THROW(check_text(kValid)); }

TEST(Schema, UnknownKeyNamesFileLineKeyAndTheNearestWithItsType) {
  const InputError e =
      error_of([] { check_text("cluster: {node: a, nodes: 1}\nparallelism:\n  tp: 2\n  micro_batchh: 1\n"); });
  EXPECT_EQ(e.file(), "s.yaml");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.key(), "parallelism.micro_batchh");
  EXPECT_EQ(e.suggestion(), "parallelism.micro_batch");
  EXPECT_NE(e.fix().find("did you mean 'micro_batch' (a whole number (sequences, from 1 to"), std::string::npos)
      << e.fix();
  // Deep in a list of maps: the item's path, and the suggestion from the section it takes keys from.
  const InputError d = error_of([] { check_text("purchase: {options: [{node: a, prices: {gpu_hour_ud: 1}}]}\n"); });
  EXPECT_EQ(d.key(), "purchase.options[0].prices.gpu_hour_ud");
  EXPECT_EQ(d.suggestion(), "purchase.options[0].prices.gpu_hour_usd");
}

// A key of many dots (a fuzzer's find): resolving each prefix recursively took 2^dots steps (25
// dots: 2.5 s, 30: minutes); resolved top-down it is refused at once. A regression hangs here.
TEST(Schema, AKeyOfManyDotsIsRefusedNotExplored) {
  const std::string key = "s" + std::string(200, '.') + "s";
  const InputError e = error_of([&] { check_text("slo:\n" + key + ": 1\n"); });
  EXPECT_EQ(e.key(), key);
  EXPECT_NE(e.reason().find("unknown key"), std::string::npos) << e.reason();
  EXPECT_EQ(find_key("slo." + std::string(200, '.')), nullptr);
  EXPECT_NE(find_key("slo.ttft_ms.p99"), nullptr);                         // a nested key still resolves
  EXPECT_NE(find_key("purchase.options[].prices.gpu_hour_usd"), nullptr);  // and one under a list's alias
}

TEST(Schema, WrongTypesNameTheExpectedTypeUnitAndRange) {
  InputError e = error_of([] { check_text("parallelism:\n  tp: four\n"); });
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.key(), "parallelism.tp");
  EXPECT_EQ(e.reason(), "expected a whole number (GPUs, from 1 to 16777216), got 'four'");
  e = error_of([] { check_text("parallelism: {tp: 2.5}\n"); });
  EXPECT_NE(e.reason().find("expected a whole number"), std::string::npos) << e.reason();
  e = error_of([] { check_text("parallelism: {sequence_parallel: maybe}\n"); });
  EXPECT_EQ(e.reason(), "expected true or false, got 'maybe'");
  e = error_of([] { check_text("parallelism: {precision: bf61}\n"); });
  EXPECT_NE(e.reason().find("one of fp32, tf32, fp16, bf16, fp8"), std::string::npos) << e.reason();
  EXPECT_NE(e.fix().find("did you mean 'bf16'"), std::string::npos) << e.fix();
  e = error_of([] { check_text("host: {kernel_launch: 5}\n"); });  // a duration needs its unit
  EXPECT_NE(e.reason().find("a duration with its unit"), std::string::npos) << e.reason();
  e = error_of([] { check_text("cluster: [1, 2]\n"); });
  EXPECT_EQ(e.reason(), "expected a map of keys, got a list");
  e = error_of([] { check_text("parallelism: {cuda_graphs: [attn, mpl]}\n"); });
  EXPECT_EQ(e.key(), "parallelism.cuda_graphs[1]");
}

TEST(Schema, RangesComeFromTheTable) {
  InputError e = error_of([] { check_text("parallelism: {tp: 0}\n"); });
  EXPECT_EQ(e.reason(), "must be from 1 to 16777216, got 0 GPUs");
  e = error_of([] { check_text("serving: {gpu_memory_utilization: 1.5}\n"); });
  EXPECT_EQ(e.reason(), "must be above 0 and at most 1, got 1.5");
  e = error_of([] { check_text("parallelism: {zero: 4}\n"); });  // a whole number or fsdp, 0..3
  EXPECT_NE(e.reason().find("must be from 0 to 3"), std::string::npos) << e.reason();
  e = error_of([] { check_text("storage: {read_GBps: 0.0001}\n"); });  // bare GB/s, at least 1 MB/s
  EXPECT_NE(e.reason().find("must be at least"), std::string::npos) << e.reason();
  e = error_of([] { check_text("workload: {input: 0}\n"); });
  EXPECT_NE(e.reason().find("must be at least 1"), std::string::npos) << e.reason();
  EXPECT_NO_THROW(check_text("parallelism: {zero: 3}\nstorage: {read_GBps: 0.001}\n"));
  // A checkpoint of 1e308 bytes is refused (at most 1 EB), not simulated as a 1e296-second stall.
  EXPECT_THROW(check_text("checkpoint: {every_steps: 10, bytes: 1e308}\n"), InputError);
  EXPECT_NO_THROW(check_text("checkpoint: {every_steps: 10, bytes: 1.4e15}\n"));
  // Each row's own bounds: its lower bound passes, a value below it fails.
  for (const auto& k : scenario_schema()) {
    if (k.type != KeyType::Int || !std::isfinite(k.min)) continue;
    const std::string key(k.path);
    YAML::Node lo(static_cast<long long>(k.min)), below(static_cast<long long>(k.min) - 1);
    EXPECT_NO_THROW(check_scenario_value(key, lo, "t")) << key;
    EXPECT_THROW(check_scenario_value(key, below, "t"), InputError) << key;
  }
}

TEST(Schema, OneKeyAndValueAsPythonSetsThem) {
  EXPECT_NO_THROW(check_scenario_value("parallelism.tp", YAML::Load("8"), "<scenario>"));
  EXPECT_NO_THROW(check_scenario_value("model", YAML::Load("{preset: llama3-8b}"), "<scenario>"));
  EXPECT_NO_THROW(check_scenario_value("slo.ttft_ms.p99", YAML::Load("2000"), "<scenario>"));
  InputError e = error_of([] { check_scenario_value("parallelism.tpp", YAML::Load("8"), "<scenario>"); });
  EXPECT_EQ(e.key(), "parallelism.tpp");
  EXPECT_EQ(e.suggestion(), "parallelism.tp");
  e = error_of([] { check_scenario_value("paralelism.tp", YAML::Load("8"), "<scenario>"); });
  EXPECT_EQ(e.suggestion(), "parallelism");
  e = error_of([] { check_scenario_value("parallelism.tp.x", YAML::Load("8"), "<scenario>"); });
  EXPECT_NE(e.reason().find("not a map of keys"), std::string::npos) << e.reason();
  e = error_of([] { check_scenario_value("cluster", YAML::Load("{nodes: many}"), "<scenario>"); });
  EXPECT_EQ(e.key(), "cluster.nodes");
}

TEST(Schema, MarkdownListsEveryKeyOnce) {
  const std::string md = schema_markdown();
  for (const auto& k : scenario_schema()) {
    const std::string cell = "| `" + std::string(k.path) + "` |";
    const auto at = md.find(cell);
    EXPECT_NE(at, std::string::npos) << k.path;
    EXPECT_EQ(md.find(cell, at + 1), std::string::npos) << k.path;
  }
  EXPECT_NE(md.find("### `parallelism:`"), std::string::npos);
}
