// Wall time of simulating one training step of the bundled scenarios (targets: GPT-3 175B on 1,024
// GPUs <= 2 s; Llama-3 405B on 16,384 GPUs <= 30 s and <= 4 GiB RSS), and scenario evaluations
// per second for a 64-GPU Llama-3 8B plan (sweep throughput); DeepSeek-V3's DualPipe step on 2,048 GPUs.
#include <benchmark/benchmark.h>

#include "services/scenario.hpp"
#include "services/training.hpp"
#include "sim/allocator.hpp"

using namespace stacksim::analysis;

namespace {

void run_scenario(benchmark::State& state, const std::string& file, const std::vector<std::string>& sets,
                  const RunOptions& options = {}) {
  const Scenario s = load_scenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + file, sets);
  double step = 0;
  for (auto _ : state) {
    const TrainingResult r = simulate_training(s.training, options);
    step = r.step_time_s;
    state.counters["tasks"] = static_cast<double>(r.tasks);
  }
  state.counters["step_time_s"] = step;
  state.SetItemsProcessed(state.iterations());  // scenario evaluations
}

void BM_Gpt3_175B_1024xA100(benchmark::State& state) { run_scenario(state, "gpt3-175b-1024xa100.yaml", {}); }
void BM_Llama3_70B_64xH100(benchmark::State& state) { run_scenario(state, "llama3-70b-64xh100.yaml", {}); }
void BM_Llama3_405B_16384xH100(benchmark::State& state) { run_scenario(state, "llama3-405b-16384xh100.yaml", {}); }
void BM_DeepSeekV3_2048xH800(benchmark::State& state) { run_scenario(state, "deepseek-v3-2048xh800.yaml", {}); }
void BM_Llama3_8B_64xH100(benchmark::State& state) {
  // A sweep-sized evaluation: Llama-3 8B, TP2 PP2 DP16 on 8 nodes, global batch 128, run as
  // `stacksim sweep` runs it (no one-layer timing).
  run_scenario(state, "llama3-70b-64xh100.yaml",
               {"model.layers=32", "model.hidden=4096", "model.heads=32", "model.kv_heads=8", "model.ffn_hidden=14336",
                "parallelism.tp=2", "parallelism.pp=2", "parallelism.cp=1", "parallelism.dp=16", "parallelism.vp=1",
                "model.seq_len=8192"},
               RunOptions::step_only());
}

}  // namespace

BENCHMARK(BM_Gpt3_175B_1024xA100)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_Llama3_70B_64xH100)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_Llama3_8B_64xH100)->Unit(benchmark::kMillisecond)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_Llama3_405B_16384xH100)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_DeepSeekV3_2048xH800)->Unit(benchmark::kSecond)->Iterations(1);

// The allocator tuned as the CLI and the Python module tune it (sim/allocator.hpp).
int main(int argc, char** argv) {
  stacksim::sim::tune_allocator_for_replays();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
