// `stacksim schema [--markdown]` and the schema's errors as the CLI reports them (run, --set,
// plan --purchase FILE).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "config/schema.hpp"
#include "tests/cli/cli_helpers.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;
using cli_test::kTraining;

namespace {

std::string error_of(const std::string& cmd, const std::vector<std::string>& args) {
  return cli_test::input_error(cmd, args);
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = test_tmp(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(SchemaCommand, ListsEveryKeyAndPrintsTheMarkdownReference) {
  std::ostringstream out, err;
  ASSERT_EQ(analysis::run_command("schema", {}, out, err), 0);
  size_t lines = 0;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines += !l.empty() && l[0] != ' ';
  EXPECT_EQ(lines, config::scenario_schema().size());
  EXPECT_NE(out.str().find("parallelism.tp: a whole number, GPUs, from 1 to 16777216, default 1"), std::string::npos);
  std::ostringstream md;
  ASSERT_EQ(analysis::run_command("schema", {"--markdown"}, md, err), 0);
  EXPECT_EQ(md.str(), config::schema_markdown());
  EXPECT_NE(error_of("schema", {"--markdwn"}).find("did you mean --markdown?"), std::string::npos);
}

TEST(SchemaCommand, RunReportsFileLineKeyExpectationAndSuggestion) {
  const std::string s = write("schema_cmd.yaml", std::string(kTraining) + "host:\n  prefetch: two\n");
  std::string m = error_of("run", {s});
  EXPECT_NE(
      m.find("schema_cmd.yaml:6: key 'host.prefetch': expected a whole number (batches, from 0 to 1024), got 'two'"),
      std::string::npos)
      << m;
  m = error_of("run", {write("schema_cmd2.yaml", kTraining), "--set", "parallelism.micro_bach=2"});
  EXPECT_NE(m.find("did you mean --set parallelism.micro_batch=2?"), std::string::npos) << m;
  m = error_of("run", {write("schema_cmd3.yaml", kTraining), "--set", "cluster.fabric.oversubscription=0.5"});
  EXPECT_NE(m.find("key 'cluster.fabric.oversubscription': must be from 1 to 1024, got 0.5"), std::string::npos) << m;
}

TEST(SchemaCommand, APurchaseFileIsCheckedAsThePurchaseSection) {
  const std::string s = write("schema_purchase_s.yaml", kTraining);
  const std::string p = write("schema_purchase.yaml",
                              "tokens: 1e12\ndeadline_days: 30\nnodes: [2]\nreplay_top: many\n"
                              "options: [{node: dgx-h100, prices: {gpu_hour_usd: 2}}]\n");
  const std::string m = error_of("plan", {s, "--purchase", p});
  EXPECT_NE(
      m.find("schema_purchase.yaml:4: key 'replay_top': expected a whole number (plans, from 0 to 100), got 'many'"),
      std::string::npos)
      << m;
}
