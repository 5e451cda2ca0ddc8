// The CLI's contracts: bad input is an InputError (exit 2) naming file, line, key and fix; a plan
// that does not fit memory still runs and says so; run/validate JSON carries the contract fields.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/commands.hpp"
#include "config/error.hpp"
#include "config/yaml.hpp"
#include "services/scenario.hpp"
#include "tests/cli/cli_helpers.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;
using stacksim::cli_test::input_error;
using stacksim::cli_test::kTraining;

namespace {

std::string write(const std::string& name, const std::string& text) {
  const std::string path = test_tmp(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(Cli, RunWritesTheJsonContractAndATrace) {
  const std::string s = write("ok.yaml", kTraining);
  const std::string json = test_tmp("ok.json"), trace = test_tmp("ok.trace.json");
  std::ostringstream out, err;
  EXPECT_EQ(analysis::run_command("run", {s, "--json", json, "--trace", trace}, out, err), 0);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  for (const char* k : {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "memory_per_gpu_bytes", "breakdown",
                        "bottleneck", "oom"})
    EXPECT_TRUE(j.contains(k)) << k;
  double sum = 0;
  for (auto& [k, v] : j["breakdown"].items()) sum += v.get<double>();
  EXPECT_NEAR(sum, j["step_time_s"].get<double>(), 1e-9 * sum);
  std::ifstream tr(trace);
  const auto t = nlohmann::json::parse(tr);
  EXPECT_GT(t["traceEvents"].size(), 10u);
}

TEST(Cli, RunNamesANon1F1BScheduleInItsPlanLine) {
  const std::string s = write("schedule.yaml", kTraining);
  auto plan_line = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args{s};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out, err;
    EXPECT_EQ(analysis::run_command("run", args, out, err), 0) << err.str();
    const std::string text = out.str();
    const size_t at = text.find("plan:");
    return text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(plan_line({}).find("("), std::string::npos) << plan_line({});  // 1F1B: nothing to say
  EXPECT_NE(plan_line({"--set", "parallelism.schedule=dualpipe", "--set", "parallelism.global_batch=32"})
                .find("pp 2 (dualpipe)"),
            std::string::npos);
  EXPECT_NE(plan_line({"--set", "parallelism.schedule=gpipe"}).find("pp 2 (gpipe)"), std::string::npos);
  // What lives on the host is part of the plan too.
  EXPECT_EQ(plan_line({}).find("host"), std::string::npos);
  EXPECT_NE(plan_line({"--set", "parallelism.zero=3", "--set", "parallelism.offload_optimizer=true", "--set",
                       "parallelism.offload_params=true"})
                .find("zero 3, optimizer and parameters on the host"),
            std::string::npos);
  EXPECT_NE(plan_line({"--set", "parallelism.zero=1", "--set", "parallelism.offload_optimizer=true", "--set",
                       "parallelism.offload_activations=true"})
                .find("zero 1, optimizer on the host, activations offloaded"),
            std::string::npos);
}

TEST(Cli, TraceSlicesOnOneTrackNestOrFollowEachOther) {
  // Perfetto draws a track's complete events as a stack: two slices that overlap without one
  // containing the other are drawn wrongly. DualPipe runs a forward and a backward chunk at once
  // (the backward on a track of its own), pipeline receives have their own track.
  const std::string s = write("tracks.yaml", kTraining);
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{},
        {"--set", "parallelism.schedule=dualpipe", "--set", "parallelism.global_batch=32"},
        {"--set", "parallelism.p2p_scatter_gather=true"}}) {
    const std::string trace = test_tmp("tracks.trace.json");
    std::vector<std::string> args{s, "--trace", trace};
    args.insert(args.end(), sets.begin(), sets.end());
    std::ostringstream out, err;
    ASSERT_EQ(analysis::run_command("run", args, out, err), 0) << err.str();
    const auto t = nlohmann::json::parse(std::ifstream(trace));
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
    for (const auto& e : t["traceEvents"])
      if (e["ph"] == "X")
        slices[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
            {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    ASSERT_FALSE(slices.empty());
    for (auto& [track, list] : slices) {
      std::sort(list.begin(), list.end());
      for (size_t i = 1; i < list.size(); ++i) {
        const bool follows = list[i].first >= list[i - 1].second - 1e-3;
        const bool nested = list[i].second <= list[i - 1].second + 1e-3;
        EXPECT_TRUE(follows || nested) << "track " << track.first << "/" << track.second << " at " << list[i].first
                                       << (sets.empty() ? " (1F1B)" : " (" + sets[1] + ")");
      }
    }
  }
}

TEST(Cli, MalformedYamlNamesTheFileAndLine) {
  const std::string s = write("bad.yaml", "name: x\ncluster: {node: dgx-h100, nodes: 2\nmodel: {}\n");
  const std::string m = input_error("run", {s});
  EXPECT_NE(m.find("bad.yaml:"), std::string::npos) << m;
  EXPECT_NE(m.find("malformed YAML"), std::string::npos) << m;
  EXPECT_NE(input_error("run", {write("empty.yaml", "")}).find("is empty"), std::string::npos);
  const std::string dir = input_error("run", {std::filesystem::path(s).parent_path().string()});
  EXPECT_NE(dir.find("is a directory"), std::string::npos) << dir;
}

TEST(Cli, UnknownKeysSuggestTheNearest) {
  std::string text = kTraining;
  text.replace(text.find("global_batch"), 12, "global_bath");
  const std::string m = input_error("run", {write("typo.yaml", text)});
  EXPECT_NE(m.find("did you mean 'global_batch'"), std::string::npos) << m;
  EXPECT_NE(input_error("run", {write("ok2.yaml", kTraining), "--set", "parallelism.tpp=2"})
                .find("did you mean --set parallelism.tp=2?"),
            std::string::npos);
}

TEST(Cli, BadPlansSayWhatToChange) {
  const std::string s = write("plan.yaml", kTraining);
  EXPECT_NE(input_error("run", {s, "--set", "parallelism.dp=3"}).find("use dp: 4"), std::string::npos);
  EXPECT_NE(input_error("run", {s, "--set", "parallelism.tp=8", "--set", "parallelism.dp=1", "--set", "model.heads=4"})
                .find("not divisible by tp"),
            std::string::npos);
  EXPECT_NE(input_error("run", {s, "--set", "model.layers=5"}).find("not divisible by pp"), std::string::npos);
  EXPECT_NE(input_error("run", {s, "--set", "parallelism.global_batch=10"}).find("use global_batch 8 or 12"),
            std::string::npos);
  EXPECT_NE(input_error("run", {s, "--set", "parallelism.vp=2", "--set", "parallelism.global_batch=12"})
                .find("multiple of pp"),
            std::string::npos);
  const std::string gpu = input_error("run", {s, "--set", "hardware.gpu=H101"});
  EXPECT_NE(gpu.find("unknown GPU"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("key 'hardware.gpu'"), std::string::npos) << gpu;  // where the name was written
  // MXFP8 needs Blackwell: on an H100 it is an input error at the key; on a B200 it runs.
  const std::string mx =
      input_error("run", {s, "--set", "parallelism.precision=fp8", "--set", "parallelism.fp8_recipe=mxfp8"});
  EXPECT_NE(mx.find("'parallelism.fp8_recipe'"), std::string::npos) << mx;
  EXPECT_NE(mx.find("Blackwell"), std::string::npos) << mx;
  EXPECT_EQ(input_error("run", {s, "--set", "parallelism.precision=fp8", "--set", "parallelism.fp8_recipe=mxfp8",
                                "--set", "hardware.gpu=B200"}),
            "");
  // FP8 on a GPU without FP8 tensor cores (Ampere) is an input error at the precision key.
  const std::string ampere =
      input_error("run", {s, "--set", "parallelism.precision=fp8", "--set", "hardware.gpu=A100"});
  EXPECT_NE(ampere.find("'parallelism.precision'"), std::string::npos) << ampere;
  EXPECT_NE(ampere.find("no FP8 tensor cores"), std::string::npos) << ampere;
}

TEST(Cli, CollectiveGroupNamingAMissingGpuIsAnInputError) {
  const std::string s =
      write("coll.yaml", "cluster: {node: dgx-h100, nodes: 1}\ncollective: {op: all_reduce, ranks: [0, 1, 9]}\n");
  const std::string m = input_error("run", {s});
  EXPECT_NE(m.find("GPU 9 does not exist"), std::string::npos) << m;
  EXPECT_NE(m.find("coll.yaml:2"), std::string::npos) << m;
}

TEST(Cli, AnOutOfMemoryPlanRunsAndSaysSo) {
  // A 70B-class model on 8 GPUs without sharding cannot fit in 80 GB.
  const std::string s =
      write("oom.yaml",
            "cluster: {node: dgx-h100, nodes: 1}\n"
            "model: {layers: 80, hidden: 8192, heads: 64, ffn_hidden: 28672, vocab: 32000, seq_len: 4096}\n"
            "parallelism: {tp: 8, dp: 1, micro_batch: 1, global_batch: 1}\n");
  std::ostringstream out, err;
  EXPECT_EQ(analysis::run_command("run", {s}, out, err), 0);
  EXPECT_NE(out.str().find("OUT OF MEMORY"), std::string::npos) << out.str();
}

TEST(Cli, UnknownCommandsAndOptions) {
  EXPECT_NE(input_error("runn", {}).find("did you mean 'run'"), std::string::npos);
  EXPECT_NE(input_error("run", {"x.yaml", "--jsn", "f"}).find("did you mean --json"), std::string::npos);
}

TEST(Cli, OverrideErrorsNameTheOverrideAndSuggestTheWholeCorrectedOne) {
  const std::string s = write("ov.yaml", kTraining);
  // run, and compare's --set and --variant, share the scenario loader: the same message.
  for (const auto& [cmd, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"run", {s, "--set", "cluster.fabric.oversubscriptoin=4"}},
           {"compare", {s, "--set", "cluster.fabric.oversubscriptoin=4"}},
           {"compare", {s, "--variant", "hardware.gpu=B200,cluster.fabric.oversubscriptoin=4"}}}) {
    const std::string m = input_error(cmd, args);
    EXPECT_EQ(m.rfind("--set cluster.fabric.oversubscriptoin=4: key 'cluster.fabric.oversubscriptoin': unknown key", 0),
              0u)
        << cmd << ": " << m;
    EXPECT_NE(m.find("did you mean --set cluster.fabric.oversubscription=4?"), std::string::npos) << m;
  }
  // A top-level typo too.
  EXPECT_NE(input_error("run", {s, "--set", "hardwre.gpu=B200"}).find("did you mean --set hardware.gpu=B200?"),
            std::string::npos);
}

TEST(Cli, BadValuesThroughSetGetTheSameErrorAsInAFile) {
  const std::string s = write("vals.yaml", kTraining);
  for (const std::string& bad :
       {std::string("host.loader_workers=-1"), std::string("host.storage_read_bandwidth=0 GB/s"),
        std::string("cluster.nodes=0"), std::string("host.cpu_seconds_per_sample=1e6"),
        std::string("cluster.fabric.oversubscription=1e9")}) {
    const std::string key = bad.substr(0, bad.find('=')), value = bad.substr(bad.find('=') + 1);
    // The same value written in the file.
    YAML::Node root = YAML::Load(kTraining);
    stacksim::config::apply_override(root, bad, "test");
    const std::string in_file = write("vals_file.yaml", YAML::Dump(root));
    std::string file_reason, set_reason;
    try {
      analysis::load_scenario(in_file, {});
    } catch (const config::InputError& e) {
      file_reason = e.reason();
    }
    try {
      analysis::load_scenario(s, {bad});
    } catch (const config::InputError& e) {
      set_reason = e.reason();
      EXPECT_EQ(e.file(), "--set " + bad);
      EXPECT_EQ(e.key(), key);
    }
    EXPECT_FALSE(file_reason.empty()) << bad;
    EXPECT_EQ(set_reason, file_reason) << bad;
  }
}

TEST(Cli, MalformedOverridesAreInputErrors) {
  const std::string s = write("mal.yaml", kTraining);
  EXPECT_NE(input_error("run", {s, "--set", "parallelism.tp"}).find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(input_error("run", {s, "--set", "=4"}).find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(input_error("run", {s, "--set", "parallelism.tp="}).find("has no value"), std::string::npos);
  EXPECT_NE(input_error("run", {s, "--set", "parallelism..tp=2"}).find("empty path component"), std::string::npos);
  EXPECT_NE(input_error("compare", {s, "--variant", "parallelism.tp=2,oops"}).find("KEY=VALUE"), std::string::npos);
}

TEST(Cli, ValidateWritesEachTrainingCaseScenarioRunnableAsIs) {
  const std::string dir = test_tmp("scenarios");
  std::ostringstream out, err;
  ASSERT_EQ(analysis::run_command("validate",
                                  {std::string(STACKSIM_SOURCE_DIR) + "/validation/cases.yaml", "--id",
                                   "narayanan2021-t1-1.7b", "--scenarios", dir},
                                  out, err),
            0);
  const std::string scenario = dir + "/narayanan2021-t1-1.7b.yaml";
  ASSERT_TRUE(std::ifstream(scenario).good());
  std::ostringstream run_out;
  EXPECT_EQ(analysis::run_command("run", {scenario}, run_out, err), 0);
  EXPECT_NE(run_out.str().find("step time"), std::string::npos);
  // A directory that cannot be made fails before any case is predicted.
  EXPECT_NE(input_error("validate", {std::string(STACKSIM_SOURCE_DIR) + "/validation/cases.yaml", "--scenarios",
                                     "/proc/stacksim-cannot-write-here"}),
            "");
}

TEST(Cli, CatalogListsTheModelsAScenarioCanNameAsPreset) {
  std::ostringstream out, err;
  EXPECT_EQ(analysis::run_command("catalog", {"models"}, out, err), 0);
  EXPECT_NE(out.str().find("Llama 3 70B"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("671.0B params (37.6B active)"), std::string::npos) << out.str();  // DeepSeek-V3
  EXPECT_EQ(out.str().find("GPUs:"), std::string::npos);
  // A scenario naming one runs.
  const std::string s = write("preset.yaml",
                              "name: p\ncluster: {node: dgx-h100, nodes: 1}\n"
                              "model: {preset: Llama 3 8B, seq_len: 2048}\n"
                              "parallelism: {tp: 1, pp: 1, dp: 8, micro_batch: 1, global_batch: 8, zero: 3}\n");
  EXPECT_EQ(analysis::run_command("run", {s}, out, err), 0);
  EXPECT_NE(input_error("catalog", {"model"}).find("gpus, nodes, nics, models, engines or datasets"),
            std::string::npos);
}

TEST(Cli, SettingAPresetSwapsTheModelAndKeepsTheTrainingChoices) {
  // The bundled FSDP scenario spells out an MPT-7B; --set model.preset swaps in Llama 3 8B whole,
  // not a hybrid of the file's shape and the preset's other keys; its sequence length stays.
  const analysis::Scenario s =
      analysis::load_scenario(STACKSIM_SOURCE_DIR "/scenarios/fsdp-7b-8xh100.yaml", {"model.preset=Llama 3 8B"});
  const workload::ModelConfig& m = s.training.model;
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.ffn_hidden, 14336);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.mlp, workload::Mlp::SwiGlu);
  EXPECT_EQ(m.seq_len, 2048);  // the scenario's, not the preset's 8192
  // A later --set of a shape key still overrides the preset.
  const analysis::Scenario t = analysis::load_scenario(STACKSIM_SOURCE_DIR "/scenarios/fsdp-7b-8xh100.yaml",
                                                       {"model.preset=Llama 3 8B", "model.layers=16"});
  EXPECT_EQ(t.training.model.layers, 16);
  EXPECT_EQ(t.training.model.vocab, 128256);
}
