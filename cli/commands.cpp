#include "cli/commands.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "config/error.hpp"
#include "config/output_file.hpp"
#include "models/calibration/calibrate.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/workload/model_catalog.hpp"
#include "services/compare.hpp"
#include "services/output.hpp"
#include "services/plan_search.hpp"
#include "services/purchase.hpp"
#include "services/scenario.hpp"
#include "services/serving_commands.hpp"
#include "services/serving_purchase.hpp"
#include "services/serving_run.hpp"
#include "services/sweep.hpp"
#include "services/training.hpp"
#include "validate/serving_result_file.hpp"
#include "validate/stack_fit.hpp"
#include "validate/validation.hpp"

namespace stacksim::analysis {
namespace {

struct Args {
  std::vector<std::string> positional;
  std::vector<std::string> sets;
  std::string json, trace, output, scenarios_dir, rows;
  std::string serving_result, scenario;  // validate --serving-result FILE --scenario S.yaml
  std::vector<std::string> kinds, sources, ids;
  std::string gpu;
  std::vector<std::vector<std::string>> variants;
  bool elasticity = false;
  int threads = 0;
  int top = 5;
  int replay_top = 10;    // plan: -k
  std::string purchase;   // plan: --purchase
  int replay_sample = 0;  // plan: --replay-sample
  bool verbose = false, help = false;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// A whole number for an option ("--threads 4"): anything else is an input error, not 0.
int int_option(const std::string& flag, const std::string& text, int min_value) {
  size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != text.size() || v < min_value || v > 1 << 20)
    throw config::InputError("command line", 0, flag,
                             "expected a whole number from " + std::to_string(min_value) + ", got '" + text + "'",
                             "write e.g. " + flag + " 4");
  return static_cast<int>(v);
}

Args parse_args(const std::string& command, const std::vector<std::string>& args,
                const std::vector<std::string>& allowed) {
  Args a;
  auto allowed_flag = [&](const std::string& f) {
    for (const auto& x : allowed)
      if (x == f) return true;
    return false;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& x = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size())
        throw config::InputError("command line", 0, x, "needs a value", "write " + x + " VALUE");
      return args[++i];
    };
    if (x == "--help" || x == "-h") {
      a.help = true;
      continue;
    }
    if (x.rfind("-", 0) == 0 && x.size() > 1 && !allowed_flag(x)) {
      std::string valid;
      for (const auto& f : allowed) valid += (valid.empty() ? "" : ", ") + f;
      const std::string near = config::nearest(x, allowed);
      throw config::InputError("command line", 0, x, "unknown option for '" + command + "'",
                               near.empty() ? "valid options: " + valid : "did you mean " + near + "?");
    }
    if (x == "--set")
      a.sets.push_back(value());
    else if (x == "--json")
      a.json = value();
    else if (x == "--trace")
      a.trace = value();
    else if (x == "-o" || x == "--output")
      a.output = value();
    else if (x == "--kind")
      for (auto& k : split_commas(value())) a.kinds.push_back(k);
    else if (x == "--source")
      for (auto& k : split_commas(value())) a.sources.push_back(k);
    else if (x == "--scenarios")
      a.scenarios_dir = value();
    else if (x == "--rows")
      a.rows = value();
    else if (x == "--serving-result")
      a.serving_result = value();
    else if (x == "--scenario")
      a.scenario = value();
    else if (x == "--id")
      for (auto& k : split_commas(value())) a.ids.push_back(k);
    else if (x == "-v" || x == "--verbose")
      a.verbose = true;
    else if (x == "--gpu")
      a.gpu = value();
    else if (x == "--variant")
      a.variants.push_back(split_commas(value()));
    else if (x == "--elasticity")
      a.elasticity = true;
    else if (x == "--threads")
      a.threads = int_option(x, value(), 1);
    else if (x == "-n" || x == "--top")
      a.top = int_option(x, value(), 1);
    else if (x == "-k")
      a.replay_top = int_option(x, value(), 1);
    else if (x == "--purchase")
      a.purchase = value();
    else if (x == "--replay-sample")
      a.replay_sample = int_option(x, value(), 0);
    else
      a.positional.push_back(x);
  }
  return a;
}

const char* kRunHelp =
    "usage: stacksim run SCENARIO.yaml [--set KEY=VALUE]... [--json FILE] [--trace FILE] [-v]\n"
    "  Simulates one training step of the scenario (or its collective benchmark) and prints the\n"
    "  step time, throughput, TFLOP/s per GPU, MFU, memory per GPU and where the time goes.\n"
    "  A serving scenario (serving:, workload:, slo:) is replayed request by request: TTFT, TPOT and\n"
    "  end-to-end latency percentiles, throughput, goodput and the max rate under the SLO, KV-cache\n"
    "  pressure, cost per million output tokens and the bottleneck (--json: ttft_ms, tpot_ms, ...).\n"
    "  --set KEY=VALUE  override any scenario key, e.g. --set hardware.gpu=H200-SXM-141GB\n"
    "                   --set parallelism.tp=4 --set cluster.nodes=16 (repeatable)\n"
    "  --json FILE      write the result as JSON (step_time_s, tokens_per_s, tflops_per_gpu, mfu,\n"
    "                   memory_per_gpu_bytes, breakdown, bottleneck, ...)\n"
    "  --trace FILE     write the step's timeline as Chrome-trace JSON (open in ui.perfetto.dev)\n"
    "  -v               print engine statistics (events, solves, simulated seconds per wall second)\n";

const char* kValidateHelp =
    "usage: stacksim validate CASES.yaml [--json FILE] [--kind K,...] [--source KEY,...] [--id SUBSTR,...]\n"
    "                                    [--scenarios DIR]\n"
    "  Predicts every case of a stacksim-validation/1 file and prints predicted vs measured per\n"
    "  case, then MAPE and max error per kind and source. Cases that cannot be built are listed\n"
    "  with the reason and counted apart.\n"
    "  --scenarios DIR  write the scenario built for each training or serving case to DIR/<id>.yaml,\n"
    "                   to rerun and inspect it with `stacksim run` (breakdown, trace, --set what-ifs)\n"
    "  Serving cases (kind: serving) compare every measured figure (throughput, TTFT, TPOT, e2e).\n"
    "usage: stacksim validate --serving-result RESULT --scenario DEPLOYMENT.yaml [--set K=V]... [--json FILE]\n"
    "  Compares your own benchmark run (vLLM benchmark_serving --save-result JSON, SGLang bench_serving\n"
    "  JSONL, GenAI-Perf profile_export_genai_perf.json, AIPerf profile_export_aiperf.json; told by\n"
    "  content) with the prediction for the deployment the scenario describes, figure by figure.\n";

int cmd_run(const std::vector<std::string>& raw, std::ostream& out, std::ostream& err) {
  const Args a = parse_args("run", raw, {"--set", "--json", "--trace", "-v", "--verbose"});
  if (a.help) {
    out << kRunHelp;
    return 0;
  }
  if (a.positional.size() != 1)
    throw config::InputError("command line", 0, "SCENARIO", "run takes exactly one scenario file",
                             "write: stacksim run scenarios/llama3-70b-64xh100.yaml");
  const Scenario s = load_scenario(a.positional[0], a.sets);
  RunOptions options;
  options.trace_path = a.trace;
  if (s.kind == WorkloadKind::Serving) {
    ServingRunOptions so;
    so.record_steps = !a.trace.empty();
    const ServingRun r = run_serving(s.serving, so);
    print_serving(s, r, a.verbose, out);
    if (!a.json.empty()) write_json_atomically(a.json, serving_json(s, r));
    if (!a.trace.empty()) write_serving_trace(a.trace, s, r);
    return 0;
  }
  if (s.kind == WorkloadKind::CollectiveBenchmark) {
    const auto rows = run_collective_benchmark(s.bench);
    print_collective_table(s, rows, out);
    if (!a.json.empty()) write_json_atomically(a.json, collective_table_json(s, rows));
    return 0;
  }
  const TrainingResult r = simulate_training(s.training, options);
  print_training(s, r, a.verbose, out);
  if (!a.json.empty()) write_json_atomically(a.json, training_json(s, r));
  return 0;
}

int cmd_validate(const std::vector<std::string>& raw, std::ostream& out, std::ostream& err) {
  const Args a =
      parse_args("validate", raw,
                 {"--json", "--kind", "--source", "--id", "--scenarios", "--serving-result", "--scenario", "--set"});
  if (a.help) {
    out << kValidateHelp;
    return 0;
  }
  if (!a.serving_result.empty() || !a.scenario.empty()) {  // a user's own benchmark run
    if (a.serving_result.empty() || a.scenario.empty() || !a.positional.empty())
      throw config::InputError("command line", 0, a.serving_result.empty() ? "--serving-result" : "--scenario",
                               "a benchmark result is compared with the deployment a serving scenario describes",
                               "write: stacksim validate --serving-result result.json --scenario deployment.yaml");
    const auto outcomes = validate_serving_result(a.serving_result, a.scenario, a.sets);
    print_validation(outcomes, out);
    if (!a.json.empty()) write_json_atomically(a.json, validation_json(outcomes));
    return 0;
  }
  if (a.positional.size() != 1)
    throw config::InputError("command line", 0, "CASES", "validate takes exactly one case file",
                             "write: stacksim validate ../shared/validation/cases.yaml");
  if (!a.scenarios_dir.empty()) {  // before the (long) validation, so that a bad directory fails fast
    std::error_code ec;
    std::filesystem::create_directories(a.scenarios_dir, ec);
    if (ec)
      throw config::InputError("command line", 0, "--scenarios",
                               "cannot create directory '" + a.scenarios_dir + "': " + ec.message(),
                               "name a writable directory");
  }
  ValidationFilter f;
  f.kinds = a.kinds;
  f.sources = a.sources;
  f.ids = a.ids;
  const auto outcomes = validate_file(a.positional[0], f);
  print_validation(outcomes, out);
  if (!a.json.empty()) write_json_atomically(a.json, validation_json(outcomes));
  if (!a.scenarios_dir.empty()) {
    for (const auto& o : outcomes)
      if (!o.scenario_yaml.empty())
        config::write_output_text(
            (std::filesystem::path(a.scenarios_dir) / config::safe_file_name(o.id + ".yaml")).string(), o.scenario_yaml,
            {a.scenarios_dir});
  }
  return 0;
}

const char* kFitHelp =
    "usage: stacksim fit CASES.yaml... -o stacks/fitted.yaml\n"
    "  Fits the software-stack parameters per framework family (compute efficiency, per-kernel gap,\n"
    "  communication efficiency; docs/stacks.md) to the training cases of the files, judged by\n"
    "  leave-one-source-out cross-validation: prints per family the fitted values, rows, sources and\n"
    "  the errors of the real simulator (reference, in-sample, CV), and writes the fit with each\n"
    "  family's 80 % interval band.\n"
    "  --rows ROWS.csv  also write the rows the fit used (breakdown shares, CV log errors), for audit\n";

int cmd_fit(const std::vector<std::string>& raw, std::ostream& out, std::ostream& err) {
  const Args a = parse_args("fit", raw, {"-o", "--output", "--rows"});
  if (a.help) {
    out << kFitHelp;
    return 0;
  }
  if (a.positional.empty() || a.output.empty())
    throw config::InputError("command line", 0, a.positional.empty() ? "CASES" : "-o",
                             "fit needs case files and -o FILE",
                             "write: stacksim fit validation/cases.yaml validation/extra/*.yaml -o stacks/fitted.yaml");
  for (const auto& f : a.positional)
    if (!std::filesystem::exists(f))
      throw config::InputError(f, 0, "CASES", "no such case file", "name stacksim-validation/1 files");
  if (!a.rows.empty()) write_text_atomically(a.rows, "");  // a bad path fails before the long fit
  const FitReport rep = fit_stacks(a.positional, err, isatty(STDERR_FILENO), a.rows);
  for (const auto& l : rep.lines) out << l << "\n";
  std::string command = "stacksim fit";
  for (const auto& f : a.positional) command += " " + f;
  command += " -o " + a.output;
  write_stack_fit(rep.fit, command, a.output);
  out << "wrote " << a.output << "\n";
  return 0;
}

int cmd_catalog(const std::vector<std::string>& raw, std::ostream& out) {
  const Args a = parse_args("catalog", raw, {});
  if (a.help) {
    out << "usage: stacksim catalog [gpus|nodes|nics|models|engines|datasets]\n  Lists the bundled hardware catalogue "
           "(models/hardware) and\n"
           "  the bundled model architectures (models/workload/architectures; a scenario names one as model.preset),\n"
           "  the serving engine profiles (models/serving/engines; serving.engine) and the serving datasets'\n"
           "  length statistics (models/workload/serving_datasets.yaml; workload.dataset).\n";
    return 0;
  }
  const std::string what = a.positional.empty() ? "all" : a.positional[0];
  if (what == "engines" || what == "datasets") return print_serving_catalog(what, out);
  if (what != "all" && what != "gpus" && what != "nodes" && what != "nics" && what != "models")
    throw config::InputError("command line", 0, what, "unknown catalogue section",
                             "use gpus, nodes, nics, models, engines or datasets");
  char line[256];
  if (what == "all" || what == "gpus") {
    out << "GPUs:\n";
    for (const auto& n : hw::bundled_gpus().names()) {
      const auto& g = hw::bundled_gpus().get(n);
      std::snprintf(line, sizeof line, "  %-20s %-10s %4d SMs  bf16/fp16 %6.0f TFLOP/s  HBM %5.0f GB at %5.0f GB/s\n",
                    n.c_str(), g.architecture.c_str(), g.sm_count, std::max(g.peak("bf16"), g.peak("fp16")) / 1e12,
                    g.memory_bytes / 1e9, g.hbm_Bps / 1e9);
      out << line;
    }
  }
  if (what == "all" || what == "nodes") {
    out << "nodes:\n";
    for (const auto& n : hw::bundled_nodes().node_names()) {
      const auto& s = hw::bundled_nodes().node(n);
      std::snprintf(line, sizeof line, "  %-14s %2d x %-16s %-8s %5.0f GB/s/GPU  %d x %s\n", n.c_str(), s.gpus_per_node,
                    s.gpu.c_str(), s.intra_type.c_str(), s.intra_bandwidth_Bps / 1e9, s.nics, s.nic.c_str());
      out << line;
    }
  }
  if (what == "all" || what == "nics") {
    out << "NICs:\n";
    for (const auto& n : hw::bundled_nodes().nic_names()) {
      const auto& s = hw::bundled_nodes().nic(n);
      std::snprintf(line, sizeof line, "  %-12s %6.0f Gb/s  %s (%s)\n", n.c_str(), s.bandwidth_Bps * 8 / 1e9,
                    s.fabric.c_str(), s.generation.c_str());
      out << line;
    }
  }
  if (what == "all" || what == "models") {
    out << "models (model.preset):\n";
    for (const auto& e : workload::bundled_models().models()) {
      const workload::ModelConfig& m = e.config;
      const std::string seq = m.seq_len > 0 ? std::to_string(m.seq_len) : std::string("-");
      std::snprintf(line, sizeof line, "  %-20s %7.1fB params", e.name.c_str(), m.total_params() / 1e9);
      out << line;
      if (m.is_moe()) {
        std::snprintf(line, sizeof line, " (%.1fB active)", m.active_params() / 1e9);
        out << line;
      }
      std::snprintf(line, sizeof line, "  %3d layers  hidden %5lld  heads %3lld/%-3lld  seq %s\n", m.layers,
                    static_cast<long long>(m.hidden), static_cast<long long>(m.heads),
                    static_cast<long long>(m.kv_heads), seq.c_str());
      out << line;
    }
  }
  return 0;
}

const char* kCompareHelp =
    "usage: stacksim compare SCENARIO.yaml [--set KEY=VALUE]... [--variant 'K=V,K=V']... [--elasticity] [--json FILE]\n"
    "  Simulates the scenario as it is (baseline) and changed: all --set overrides together form one\n"
    "  variant, each --variant another. Prints the step time, throughput and breakdown side by side,\n"
    "  the shift of the bottleneck and the reason in plain words.\n"
    "  --elasticity  also the step speedup if only one resource class were 2x faster (GPU FLOP/s,\n"
    "                HBM bandwidth, NVLink, NIC/fabric, PCIe, CPU loader, storage), ranked: which\n"
    "                upgrade pays\n"
    "  With a prices: section (gpu_hour_usd, node_hour_usd, nic_hour_usd) every result carries its\n"
    "  cost per million tokens; --set prices.gpu_hour_usd=... reprices a variant.\n"
    "  On a serving scenario the figure compared is the max request rate under its SLO (output tokens/s\n"
    "  without one), with TTFT/TPOT p99, KV-cache capacity, batch, preemptions and $/M output tokens;\n"
    "  --elasticity there scales GPU FLOP/s, HBM, NVLink, network and the engine's host overhead.\n";

int cmd_compare(const std::vector<std::string>& raw, std::ostream& out) {
  Args a = parse_args("compare", raw, {"--set", "--variant", "--elasticity", "--json"});
  if (a.help) {
    out << kCompareHelp;
    return 0;
  }
  if (a.positional.size() != 1)
    throw config::InputError(
        "command line", 0, "SCENARIO", "compare takes exactly one scenario file",
        "write: stacksim compare scenarios/llama3-70b-64xh100.yaml --set hardware.gpu=H200-SXM-141GB");
  if (!a.sets.empty()) a.variants.insert(a.variants.begin(), a.sets);
  if (a.variants.empty() && !a.elasticity)
    throw config::InputError("command line", 0, "--set", "nothing to compare",
                             "give at least one --set KEY=VALUE (or --variant, or --elasticity)");
  if (load_scenario(a.positional[0], {}).kind == WorkloadKind::Serving) {
    const ServingComparison sc = compare_serving(a.positional[0], a.variants, a.elasticity);
    print_serving_comparison(sc, out);
    if (!a.json.empty()) write_json_atomically(a.json, serving_comparison_json(sc));
    return 0;
  }
  const Comparison c = compare(a.positional[0], {}, a.variants, a.elasticity);
  print_comparison(c, out);
  if (!a.json.empty()) write_json_atomically(a.json, comparison_json(c));
  return 0;
}

const char* kSweepHelp =
    "usage: stacksim sweep SWEEP.yaml -o RESULTS.csv [--threads N]\n"
    "  Runs the cartesian grid of a sweep file (scenario, optional fixed set:, grid: {key: [values]})\n"
    "  in parallel and writes one CSV row per point in grid order; invalid points carry their reason\n"
    "  in the error column. Re-running with the same output resumes: finished rows are kept.\n";

int cmd_sweep(const std::vector<std::string>& raw, std::ostream& out, std::ostream& err) {
  const Args a = parse_args("sweep", raw, {"-o", "--output", "--threads"});
  if (a.help) {
    out << kSweepHelp;
    return 0;
  }
  if (a.positional.size() != 1 || a.output.empty())
    throw config::InputError("command line", 0, "SWEEP", "sweep takes one sweep file and -o RESULTS.csv",
                             "write: stacksim sweep sweeps/tp-pp.yaml -o results.csv");
  const SweepSummary s = run_sweep(a.positional[0], a.output, a.threads, err);
  out << s.points << " points: " << s.simulated << " simulated, " << s.resumed << " resumed, " << s.invalid
      << " invalid -> " << a.output << "\n";
  if (s.interrupted_by) {
    err << "stacksim sweep: interrupted by " << (s.interrupted_by == SIGINT ? "SIGINT" : "SIGTERM") << " after "
        << s.written << " of " << s.points << " points; the finished rows are in " << a.output
        << ". Rerun the same command to resume from there.\n";
    return 128 + s.interrupted_by;
  }
  return 0;
}

const char* kPlanHelp =
    "usage: stacksim plan SCENARIO.yaml [--set KEY=VALUE]... [-n N] [-k K] [--json FILE]\n"
    "                                   [--purchase PURCHASE.yaml]\n"
    "  Enumerates the (tp, pp, vp or DualPipe, cp, dp, ep, micro-batch, recompute, ZeRO) plans that\n"
    "  use every GPU of the cluster, drops invalid and out-of-memory plans, ranks the rest with the\n"
    "  fast tier (closed forms over the replay's own op costs and collective model), replays the\n"
    "  best K (default 10) to confirm them and prints the N fastest (default 5) with both numbers.\n"
    "  --replay-sample N  also replay about N plans spread over the fast ranking (to check it)\n"
    "  --json FILE      write {evaluated, fit, replayed, seconds, plans: [{tp, pp, ..., fast_step_time_s,\n"
    "                   step_time_s (replayed plans)}]}\n"
    "  --purchase FILE  purchase search (or a purchase: section in the scenario): the cheapest (or\n"
    "                   fastest) GPU type x cluster size x plan that trains the token budget in time;\n"
    "                   on a serving scenario the cheapest GPU type x TP size x replicas that serves\n"
    "                   purchase.rate_per_s within the scenario's slo:\n";

int cmd_plan(const std::vector<std::string>& raw, std::ostream& out) {
  const Args a = parse_args("plan", raw, {"--set", "-n", "--top", "-k", "--json", "--purchase", "--replay-sample"});
  if (a.help) {
    out << kPlanHelp;
    return 0;
  }
  if (a.positional.size() != 1)
    throw config::InputError("command line", 0, "SCENARIO", "plan takes exactly one scenario file",
                             "write: stacksim plan scenarios/llama3-70b-64xh100.yaml -n 5");
  if (a.top < 1) throw config::InputError("command line", 0, "-n", "must be at least 1", "write e.g. -n 5");
  if (a.replay_top < 0) throw config::InputError("command line", 0, "-k", "must be 0 or more", "write e.g. -k 10");
  const config::Node scenario_file = config::Node::load_file(a.positional[0]);
  const bool purchase_section = scenario_file.has("purchase");
  if ((!a.purchase.empty() || purchase_section) && scenario_file.has("serving")) {
    const ServingPurchaseResult r = search_serving_purchase(a.positional[0], a.sets, a.purchase, true);
    print_serving_purchase(r, out);
    if (!a.json.empty()) write_json_atomically(a.json, serving_purchase_json(r));
    return 0;
  }
  if (!a.purchase.empty() || purchase_section) {
    const PurchaseResult r = search_purchase(a.positional[0], a.sets, a.purchase, true);
    print_purchase(r, out);
    if (!a.json.empty()) write_json_atomically(a.json, purchase_json(r));
    return 0;
  }
  PlanSearchOptions options;
  options.replay_top = static_cast<size_t>(a.replay_top);
  options.progress = true;
  options.replay_sample = static_cast<size_t>(std::max(0, a.replay_sample));
  const PlanSearchResult r = search_plans(a.positional[0], a.sets, options);
  print_plans(r, static_cast<size_t>(a.top), out);
  if (!a.json.empty()) write_json_atomically(a.json, plans_json(r));
  return 0;
}

// Plots are matplotlib's: the CLI runs the Python package's plot module (build/python next to
// the binary's folder, or an installed stacksim) with Debian's interpreter.
int cmd_plot(const std::vector<std::string>& raw, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string pkg = ec ? std::string() : (exe.parent_path().parent_path() / "python").string();
  const std::string py = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::vector<std::string> argv_s{py, "-m", "stacksim.plot_cli"};
  argv_s.insert(argv_s.end(), raw.begin(), raw.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  out.flush();
  const pid_t pid = fork();
  if (pid == 0) {
    if (!pkg.empty()) {
      const char* old = std::getenv("PYTHONPATH");
      const std::string path = pkg + (old && *old ? std::string(":") + old : std::string());
      setenv("PYTHONPATH", path.c_str(), 1);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) throw std::runtime_error("cannot start " + py);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    err << "stacksim plot: needs " << py << " with python3-matplotlib and the built stacksim package\n";
    return 1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

const char* kCalibrateHelp =
    "usage: stacksim calibrate MEASUREMENTS.yaml -o PROFILE.yaml [--gpu NAME]\n"
    "  Fits the hardware model (HBM, launch overhead, GEMM efficiency, PCIe, P2P, NCCL) to a\n"
    "  stacksim-probe measurement file by least squares, reports each fit's cross-validated error\n"
    "  and writes a calibrated GPU profile that scenarios can use (docs/calibration.md).\n"
    "  --gpu NAME  the catalogue GPU the measurements refine (default: from the file's machine section)\n";

int cmd_calibrate(const std::vector<std::string>& raw, std::ostream& out) {
  const Args a = parse_args("calibrate", raw, {"-o", "--output", "--gpu"});
  if (a.help) {
    out << kCalibrateHelp;
    return 0;
  }
  if (a.positional.size() != 1 || a.output.empty())
    throw config::InputError("command line", 0, "MEASUREMENTS",
                             "calibrate takes one measurement file and -o PROFILE.yaml",
                             "write: stacksim calibrate measurements.yaml -o profile.yaml");
  const calib::CalibrationReport report = a.gpu.empty()
                                              ? calib::calibrate(a.positional[0], hw::bundled_gpus())
                                              : calib::calibrate(a.positional[0], &hw::bundled_gpus().get(a.gpu));
  calib::write_profile(report, a.output);
  out << calib::format_report(report);
  return 0;
}

}  // namespace

int run_command(const std::string& command, const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  if (command == "run") return cmd_run(args, out, err);
  if (command == "validate") return cmd_validate(args, out, err);
  if (command == "catalog") return cmd_catalog(args, out);
  if (command == "calibrate") return cmd_calibrate(args, out);
  if (command == "compare") return cmd_compare(args, out);
  if (command == "sweep") return cmd_sweep(args, out, err);
  if (command == "plan") return cmd_plan(args, out);
  if (command == "plot") return cmd_plot(args, out, err);
  if (command == "fit") return cmd_fit(args, out, err);
  if (command == "schema") return cmd_schema(args, out);
  const std::vector<std::string> commands{"run",      "compare",   "sweep",   "plan", "plot",
                                          "validate", "calibrate", "catalog", "fit",  "schema"};
  const std::string near = config::nearest(command, commands);
  throw config::InputError("command line", 0, command, "unknown command",
                           near.empty() ? "run 'stacksim --help' for the list" : "did you mean '" + near + "'?");
}

}  // namespace stacksim::analysis
