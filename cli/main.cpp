// stacksim command line: parses arguments, calls the analysis library, formats output.
// Exit codes (DESIGN.md): 0 success, 2 bad input (file, key, reason named), 1 internal error.

#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "config/error.hpp"
#include "sim/allocator.hpp"
#include "sim/engine.hpp"

namespace {

const char* kUsage =
    "usage: stacksim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO.yaml [--set KEY=VALUE]... [--json FILE] [--trace FILE] [-v]\n"
    "      simulate one training step (or the collective benchmark) the scenario describes\n"
    "  compare SCENARIO.yaml --set KEY=VALUE... [--variant 'K=V,K=V']... [--elasticity] [--json FILE]\n"
    "      baseline vs changed: speedup, breakdowns side by side, bottleneck shift, the reason\n"
    "  sweep SWEEP.yaml -o RESULTS.csv [--threads N]\n"
    "      the cartesian grid over any keys, in parallel, resumable; invalid points keep their reason\n"
    "  plan SCENARIO.yaml [--set KEY=VALUE]... [-n N]\n"
    "      search the parallel plans for this model and cluster; the fastest that fit in memory\n"
    "  plot {breakdown RESULT.json...|compare COMPARE.json|scaling SWEEP.csv|serving SWEEP.csv} -o FILE.png|svg\n"
    "      matplotlib plots of run, compare and sweep outputs\n"
    "  validate CASES.yaml [--json FILE] [--kind KIND,...] [--source KEY,...]\n"
    "      predict every published case and print predicted vs measured with the error summary\n"
    "  fit CASES.yaml... -o stacks/fitted.yaml\n"
    "      fit the software-stack parameters per framework family under leave-one-source-out CV\n"
    "  calibrate MEASUREMENTS.yaml -o PROFILE.yaml [--gpu NAME]\n"
    "      fit the hardware model to stacksim-probe measurements; write a calibrated GPU profile\n"
    "  catalog [gpus|nodes|nics|models]\n"
    "      list the bundled hardware catalogue and model architectures\n"
    "  schema [--markdown]\n"
    "      every key a scenario may hold: type, unit, default, range (docs/scenario.md's reference)\n"
    "\n"
    "Run 'stacksim <command> --help' for the options of one command.\n";

}  // namespace

int main(int argc, char** argv) {
  stacksim::sim::tune_allocator_for_replays();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    return stacksim::analysis::run_command(command, args, std::cout, std::cerr);
  } catch (const stacksim::config::InputError& e) {
    std::cerr << "stacksim " << command << ": error: " << e.what() << "\n";
    return 2;
  } catch (const stacksim::sim::HorizonError& e) {
    std::cerr << "stacksim " << command << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "stacksim " << command << ": internal error: " << e.what() << "\n";
    return 1;
  }
}
