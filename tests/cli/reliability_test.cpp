// Issue 37's reproductions, each a clear InputError (exit 2) or correct output: sweeps that stream,
// stop on a signal and resume, and refuse a CSV that is not theirs; results that would not be
// finite; option values that are not numbers; typos that plan search used to swallow; case ids
// that would write outside --scenarios; traces that would grow without bound; GPU names that are
// no catalogue entry.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "config/error.hpp"
#include "services/plan_search.hpp"
#include "services/scenario.hpp"
#include "services/sweep.hpp"
#include "services/training.hpp"
#include "tests/cli/cli_helpers.hpp"
#include "tests/test_tmp.hpp"
#include "validate/validation.hpp"

using namespace stacksim;
using stacksim::cli_test::input_error;
using stacksim::cli_test::kTraining;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A sweep over `grid` of the small scenario, in folder `d`.
std::string sweep_file(const std::string& d, const std::string& grid) {
  std::ofstream(d + "/s.yaml") << kTraining;
  std::ofstream(d + "/sweep.yaml") << "scenario: s.yaml\ngrid: " << grid << "\n";
  return d + "/sweep.yaml";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A progress stream that raises `sig` the first time the sweep reports progress: an interrupt
// while rows are in flight.
struct InterruptingBuf : std::stringbuf {
  int sig;
  bool raised = false;
  explicit InterruptingBuf(int s) : sig(s) {}
  int sync() override {
    if (!raised && str().find('/') != std::string::npos) {
      raised = true;
      std::raise(sig);
    }
    return 0;
  }
};

const char* kGrid40 =
    "{parallelism.micro_batch: [1, 2], model.layers: [4, 8, 12, 16, 20],"
    " parallelism.global_batch: [16, 32, 48, 64]}";

}  // namespace

TEST(Reliability, SweepRefusesToOverwriteACsvThatIsNotASweeps) {
  const std::string d = fresh_test_dir("d");
  std::ofstream(d + "/mine.csv") << "name,salary\nann,100\n";
  const std::string m = input_error("sweep", {sweep_file(d, "{parallelism.tp: [2, 4]}"), "-o", d + "/mine.csv"});
  EXPECT_TRUE(has(m, "not this sweep's header")) << m;
  EXPECT_EQ(read_text(d + "/mine.csv"), "name,salary\nann,100\n");
}

TEST(Reliability, SweepStoppedBySignalKeepsItsRowsInGridOrderAndResumes) {
  for (int sig : {SIGTERM}) {  // SIGINT: SweepCommandSaysHowToResumeAfterASignal
    const std::string d = fresh_test_dir("d");
    const std::string sweep = sweep_file(d, kGrid40), out = d + "/r.csv", fresh = d + "/fresh.csv";
    InterruptingBuf buf(sig);
    std::ostream progress(&buf);
    const analysis::SweepSummary stopped = analysis::run_sweep(sweep, out, 2, progress);
    EXPECT_EQ(stopped.interrupted_by, sig);
    ASSERT_LT(stopped.written, 40u);
    EXPECT_GE(stopped.written, 16u);  // the rows reported before the signal are on disk
    EXPECT_EQ(lines_of(read_text(out)).size(), stopped.written + 1);
    std::ostringstream quiet;
    const analysis::SweepSummary resumed = analysis::run_sweep(sweep, out, 2, quiet);
    EXPECT_EQ(resumed.interrupted_by, 0);
    EXPECT_EQ(resumed.resumed, stopped.written);  // none simulated again
    EXPECT_EQ(resumed.simulated, 40u - stopped.written);
    analysis::run_sweep(sweep, fresh, 1, quiet);
    EXPECT_EQ(read_text(out), read_text(fresh));  // the same file as one uninterrupted run
  }
}

TEST(Reliability, SweepCommandSaysHowToResumeAfterASignal) {
  const std::string d = fresh_test_dir("d");
  const std::string sweep = sweep_file(d, kGrid40);
  InterruptingBuf buf(SIGINT);
  std::ostream err(&buf);
  std::ostringstream out;
  EXPECT_EQ(analysis::run_command("sweep", {sweep, "-o", d + "/r.csv", "--threads", "2"}, out, err), 128 + SIGINT);
  EXPECT_TRUE(has(buf.str(), "Rerun the same command to resume")) << buf.str();
}

TEST(Reliability, SweepCutsATornLastRowAndResumesAfterTheRowsBeforeIt) {
  const std::string d = fresh_test_dir("d");
  const std::string sweep = sweep_file(d, "{parallelism.tp: [2, 4, 3], parallelism.dp: [2, 4]}");
  std::ostringstream quiet;
  analysis::run_sweep(sweep, d + "/whole.csv", 2, quiet);
  const std::string whole = read_text(d + "/whole.csv");
  const std::vector<std::string> lines = lines_of(whole);
  // Header, two rows and half of the third: what a kill -9 in mid-write leaves.
  std::ofstream(d + "/torn.csv") << lines[0] << "\n" << lines[1] << "\n" << lines[2] << "\n" << lines[3].substr(0, 7);
  const analysis::SweepSummary s = analysis::run_sweep(sweep, d + "/torn.csv", 2, quiet);
  EXPECT_EQ(s.resumed, 2u);
  EXPECT_EQ(s.simulated, 4u);
  EXPECT_EQ(read_text(d + "/torn.csv"), whole);
}

TEST(Reliability, AnEditedGridKeepsTheRowsItStillHas) {
  const std::string d = fresh_test_dir("d");
  std::ostringstream quiet;
  analysis::run_sweep(sweep_file(d, "{parallelism.tp: [2, 4], parallelism.dp: [2, 4]}"), d + "/r.csv", 2, quiet);
  // The same rows are now not the first points of the grid: looked up, not simulated.
  const std::string sweep = sweep_file(d, "{parallelism.tp: [3, 2, 4], parallelism.dp: [2, 4]}");
  const analysis::SweepSummary s = analysis::run_sweep(sweep, d + "/r.csv", 2, quiet);
  EXPECT_EQ(s.resumed, 4u);
  EXPECT_EQ(s.simulated, 2u);
  analysis::run_sweep(sweep, d + "/fresh.csv", 1, quiet);
  EXPECT_EQ(read_text(d + "/r.csv"), read_text(d + "/fresh.csv"));
}

TEST(Reliability, SweepSetGivenAsAListIsRefused) {
  const std::string d = fresh_test_dir("d");
  std::ofstream(d + "/s.yaml") << kTraining;
  std::ofstream(d + "/sweep.yaml") << "scenario: s.yaml\nset: [model.layers=8]\ngrid: {parallelism.tp: [2]}\n";
  const std::string m = input_error("sweep", {d + "/sweep.yaml", "-o", d + "/r.csv"});
  EXPECT_TRUE(has(m, "key 'set'") && has(m, "map")) << m;
}

TEST(Reliability, OptionValuesThatAreNotNumbersAreRefused) {
  const std::string d = fresh_test_dir("d");
  const std::string m =
      input_error("sweep", {sweep_file(d, "{parallelism.tp: [2]}"), "-o", d + "/r.csv", "--threads", "abc"});
  EXPECT_TRUE(has(m, "'--threads'") && has(m, "abc")) << m;
  EXPECT_TRUE(has(input_error("plan", {d + "/s.yaml", "-n", "5x"}), "'-n'"));
}

TEST(Reliability, ResultsThatWouldNotBeFiniteNameTheSectionThatDroveThem) {
  const std::string d = fresh_test_dir("d");
  std::ofstream(d + "/p.yaml") << kTraining << "prices: {gpu_hour_usd: 1e308}\n";
  const std::string prices = input_error("run", {d + "/p.yaml"});
  EXPECT_TRUE(has(prices, "key 'prices'") && has(prices, "inf")) << prices;
  std::ofstream(d + "/f.yaml") << kTraining
                               << "checkpoint: {every_steps: 100, write_bandwidth: 10 GB/s}\n"
                                  "failures: {mtbf_hours_per_gpu: 1000, restart_s: 1e308}\n";
  const std::string failures = input_error("run", {d + "/f.yaml"});
  EXPECT_TRUE(has(failures, "key 'failures'")) << failures;
}

TEST(Reliability, ValidateWithAnInfiniteMeasuredValueReportsTheCase) {
  const std::string d = fresh_test_dir("d");
  YAML::Node all = YAML::LoadFile(STACKSIM_SOURCE_DIR "/validation/cases.yaml");
  YAML::Node c;
  for (const auto& x : all["cases"])
    if (x["kind"].as<std::string>() == "training" && x["measured"]["step_time_s"] &&
        !x["measured"]["step_time_s"].IsNull()) {
      c = YAML::Clone(x);
      break;
    }
  ASSERT_TRUE(c);
  c["measured"]["step_time_s"] = ".inf";
  YAML::Node file;
  file["format"] = "stacksim-validation/1";
  file["cases"].push_back(c);
  std::ofstream(d + "/inf.yaml") << file;
  const auto outcomes = analysis::validate_file(d + "/inf.yaml", {});
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(has(outcomes[0].error, "finite")) << outcomes[0].error;
}

TEST(Reliability, ValidateScenariosNeverWriteOutsideTheirFolder) {
  const std::string d = fresh_test_dir("d");
  YAML::Node all = YAML::LoadFile(STACKSIM_SOURCE_DIR "/validation/cases.yaml");
  YAML::Node c;
  for (const auto& x : all["cases"])
    if (x["kind"].as<std::string>() == "training") {
      c = YAML::Clone(x);
      break;
    }
  c["id"] = "../escaped";
  YAML::Node file;
  file["format"] = "stacksim-validation/1";
  file["cases"].push_back(c);
  std::ofstream(d + "/cases.yaml") << file;
  fs::create_directories(d + "/out");
  std::ostringstream out, err;
  ASSERT_EQ(analysis::run_command("validate", {d + "/cases.yaml", "--scenarios", d + "/out"}, out, err), 0);
  EXPECT_FALSE(fs::exists(d + "/escaped.yaml"));
  size_t inside = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d + "/out")) ++inside;
  EXPECT_EQ(inside, 1u);
}

TEST(Reliability, PlanReportsAMisspelledSetKeyInsteadOfNoValidPlan) {
  const std::string d = fresh_test_dir("d");
  std::ofstream(d + "/s.yaml") << kTraining;
  const std::string m = input_error("plan", {d + "/s.yaml", "--set", "model.layerz=8"});
  EXPECT_TRUE(has(m, "did you mean --set model.layers=8?")) << m;
  // A key every plan reads: each plan failed on it, which was "0 plans valid" without the reason.
  const std::string p = input_error("plan", {d + "/s.yaml", "--set", "parallelism.zer0=1"});
  EXPECT_TRUE(has(p, "did you mean --set parallelism.zero=1?")) << p;
}

TEST(Reliability, ATraceOfThousandsOfMicroBatchesIsRefused) {
  const std::string d = fresh_test_dir("d");
  std::ofstream(d + "/s.yaml") << kTraining;
  const std::string m =
      input_error("run", {d + "/s.yaml", "--set", "parallelism.global_batch=8000", "--trace", d + "/t.json"});
  EXPECT_TRUE(has(m, "--trace") && has(m, "micro-batches")) << m;
  EXPECT_FALSE(fs::exists(d + "/t.json"));
}

TEST(Reliability, AnUnknownGpuNameIsRefusedWithTheNearestNames) {
  const std::string d = fresh_test_dir("d");
  std::ofstream(d + "/s.yaml") << kTraining;
  const std::string m = input_error("run", {d + "/s.yaml", "--set", "hardware.gpu=H100-FAKE-1TB"});
  EXPECT_TRUE(has(m, "unknown GPU 'H100-FAKE-1TB'") && has(m, "did you mean")) << m;
  // Spellings of catalogue parts still resolve.
  EXPECT_EQ(input_error("run", {d + "/s.yaml", "--set", "hardware.gpu=NVIDIA H100 80GB HBM3"}), "");
}
