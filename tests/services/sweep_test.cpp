// stacksim sweep: grid order and size, invalid points as rows with reasons, identical files for
// 1 and 2 threads, and resumption from an existing output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "services/sweep.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim::analysis;

namespace {

std::string sweep_file() {
  const std::string dir = test_dir("sweep");
  std::ofstream(dir + "/s.yaml")
      << "cluster: {node: dgx-h100, nodes: 2}\n"
         "model: {layers: 4, hidden: 1024, heads: 16, ffn_hidden: 4096, vocab: 32000, seq_len: 1024}\n"
         "parallelism: {tp: 2, pp: 2, dp: 4, micro_batch: 1, global_batch: 16}\n";
  std::ofstream(dir + "/sweep.yaml") << "scenario: s.yaml\nset: {parallelism.micro_batch: 2}\n"
                                        "grid: {parallelism.tp: [2, 4, 3], parallelism.dp: [2, 4]}\n";
  return dir + "/sweep.yaml";
}

}  // namespace

TEST(Sweep, GridOrderInvalidRowsAndThreadIndependence) {
  std::ostringstream progress;
  const std::string one = test_dir("sweep") + "/one.csv", two = test_dir("sweep") + "/two.csv";
  std::remove(one.c_str());
  std::remove(two.c_str());
  const SweepSummary s1 = run_sweep(sweep_file(), one, 1, progress);
  const SweepSummary s2 = run_sweep(sweep_file(), two, 2, progress);
  EXPECT_EQ(s1.points, 6u);
  // Valid: tp*pp*dp = 16 -> (2, 4) and (4, 2); the other four are rows with their reason.
  EXPECT_EQ(s1.invalid, 4u);
  EXPECT_EQ(read_text(one), read_text(two));
  std::istringstream lines(read_text(one));
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  EXPECT_EQ(header.rfind("parallelism.tp,parallelism.dp,num_gpus,step_time_s", 0), 0u);
  EXPECT_EQ(first.rfind("2,2,", 0), 0u);
  EXPECT_NE(first.find("GPUs"), std::string::npos);
}

TEST(Sweep, ResumesFromItsOutput) {
  std::ostringstream progress;
  const std::string out = test_dir("sweep") + "/resume.csv";
  std::remove(out.c_str());
  run_sweep(sweep_file(), out, 2, progress);
  const std::string before = read_text(out);
  const SweepSummary again = run_sweep(sweep_file(), out, 2, progress);
  EXPECT_EQ(again.resumed, 6u);
  EXPECT_EQ(again.simulated, 0u);
  EXPECT_EQ(read_text(out), before);
}

TEST(Sweep, AMisspelledGridKeyIsReportedWithTheNearestKey) {
  const std::string dir = test_dir("sweep");
  sweep_file();  // writes s.yaml
  std::ofstream(dir + "/typo.yaml") << "scenario: s.yaml\ngrid: {parallelism.tpp: [2]}\n";
  const std::string out = dir + "/typo.csv";
  std::remove(out.c_str());
  std::ostringstream progress;
  run_sweep(dir + "/typo.yaml", out, 1, progress);
  EXPECT_NE(read_text(out).find("did you mean --set parallelism.tp=2?"), std::string::npos) << read_text(out);
}

TEST(Sweep, ScalingEfficiencyAgainstTheSmallestRunOfEachGroup) {
  const std::string dir = test_dir("sweep");
  sweep_file();  // writes s.yaml (16 GPUs per scenario: 2 nodes of 8)
  // Weak scaling: nodes and dp together (the off-diagonal points are invalid rows), for two GPUs.
  std::ofstream(dir + "/weak.yaml") << "scenario: s.yaml\n"
                                       "grid: {hardware.gpu: [H100-SXM5-80GB, B200], cluster.nodes: [1, 4],"
                                       " parallelism.dp: [2, 8]}\n";
  const std::string out = dir + "/weak.csv";
  std::remove(out.c_str());
  std::ostringstream progress;
  const SweepSummary s = run_sweep(dir + "/weak.yaml", out, 2, progress);
  EXPECT_EQ(s.invalid, 4u);
  std::istringstream lines(read_text(out));
  std::string line;
  std::getline(lines, line);
  const std::string header = line;
  EXPECT_NE(header.find("scaling_efficiency"), std::string::npos);
  int checked = 0;
  double base_per_gpu = 0;
  while (std::getline(lines, line)) {
    // gpu, nodes, dp, num_gpus, step, tokens/s, tokens/s/GPU, tflops, mfu, memory, oom, bottleneck, efficiency, error
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() < 13 || f[3].empty()) continue;  // invalid combination
    const double per_gpu = std::stod(f[6]), efficiency = std::stod(f[12]);
    if (f[1] == "1") {
      base_per_gpu = per_gpu;
      EXPECT_DOUBLE_EQ(efficiency, 1.0) << line;
    } else {
      ASSERT_GT(base_per_gpu, 0);
      EXPECT_NEAR(efficiency, per_gpu / base_per_gpu, 1e-5) << line;
      EXPECT_LE(efficiency, 1.0 + 1e-9) << line;  // more nodes never make a GPU faster
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}
