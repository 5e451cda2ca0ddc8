// libFuzzer target: the scenario reader (config::Node::load_string + scenario_from_yaml), as
// `stacksim run` reads a file, without simulating. Bad input must end in InputError (exit 2) or
// HorizonError; any other exception is an "internal error" (exit 1) and aborts here as a finding,
// as do the sanitizers' reports. Seeds: scenarios/; dictionary: fuzz/scenario.dict (docs/reliability.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/error.hpp"
#include "config/yaml.hpp"
#include "services/scenario.hpp"
#include "sim/engine.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto file = stacksim::config::Node::load_string(text, "<fuzz>");
    stacksim::analysis::scenario_from_yaml(file.yaml(), "<fuzz>", STACKSIM_SOURCE_DIR "/scenarios");
  } catch (const stacksim::config::InputError&) {
  } catch (const stacksim::sim::HorizonError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error (exit 1 in the CLI): %s\n", e.what());
    std::abort();
  }
  return 0;
}
