// Input handling: every bad input becomes an InputError naming the file, the line, the key and a
// fix; --set overrides edit the tree.
#include <gtest/gtest.h>

#include <functional>

#include "config/yaml.hpp"

using namespace stacksim::config;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Yaml, MalformedYamlNamesTheLine) {
  const std::string m = message_of([] { Node::load_string("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml"); });
  EXPECT_NE(m.find("bad.yaml:"), std::string::npos) << m;
  EXPECT_NE(m.find("malformed YAML"), std::string::npos) << m;
}

TEST(Yaml, UnknownKeySuggestsTheNearestValidKey) {
  const Node n = Node::load_string("cluster:\n  nodess: 4\n", "s.yaml");
  try {
    n["cluster"].check_keys({"node", "nodes", "fabric"});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "s.yaml");
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.key(), "cluster.nodess");
    EXPECT_NE(e.fix().find("did you mean 'nodes'"), std::string::npos) << e.fix();
  }
}

TEST(Yaml, QuantitiesWithUnitsAndTheirErrors) {
  const Node n = Node::load_string("bw: 450 GB/s\nlat: 2 us\nbad: 450 GB\n", "q.yaml");
  EXPECT_DOUBLE_EQ(n.required_quantity("bw", stacksim::sim::Dimension::Bandwidth), 450e9);
  EXPECT_DOUBLE_EQ(n.required_quantity("lat", stacksim::sim::Dimension::Time), 2e-6);
  const std::string m = message_of([&] { n.required_quantity("bad", stacksim::sim::Dimension::Bandwidth); });
  EXPECT_NE(m.find("q.yaml:3"), std::string::npos) << m;
  EXPECT_NE(m.find("key 'bad'"), std::string::npos) << m;
}

TEST(Yaml, MissingAndNonPositiveValues) {
  const Node n = Node::load_string("x: -3\ny: abc\n", "v.yaml");
  EXPECT_NE(message_of([&] { n.required_number("z"); }).find("key 'z': missing"), std::string::npos);
  EXPECT_NE(message_of([&] { n.positive("x", n.required_number("x")); }).find("must be positive"), std::string::npos);
  EXPECT_NE(message_of([&] { n.required_number("y"); }).find("expected a number"), std::string::npos);
}

TEST(Yaml, OverridesEditNestedKeysAndRejectBadSyntax) {
  YAML::Node root = YAML::Load("cluster: {nodes: 4}\n");
  apply_override(root, "cluster.nodes=16", "--set");
  apply_override(root, "hardware.gpu=H200-SXM-141GB", "--set");
  EXPECT_EQ(root["cluster"]["nodes"].as<int>(), 16);
  EXPECT_EQ(root["hardware"]["gpu"].as<std::string>(), "H200-SXM-141GB");
  EXPECT_NE(message_of([&] { apply_override(root, "novalue", "--set"); }).find("KEY=VALUE"), std::string::npos);
  EXPECT_NE(message_of([&] { apply_override(root, "cluster.nodes.x=1", "--set"); }).find("holds a value"),
            std::string::npos);
}

TEST(Yaml, OverridesInvalidUtf8AreRefusedNotDropped) {
  YAML::Node root = YAML::Load("model: {name: a}\n");
  const std::string latin1 = "model.name=caf\xe9";  // Latin-1, not UTF-8
  const std::string why = message_of([&] { apply_override(root, latin1, "--set"); });
  EXPECT_NE(why.find("model.name"), std::string::npos) << why;
  EXPECT_NE(why.find("UTF-8"), std::string::npos) << why;
  EXPECT_EQ(root["model"]["name"].as<std::string>(), "a");  // the tree is left as it was
  apply_override(root, "model.name=caf\xc3\xa9", "--set");  // the same word in UTF-8 is fine
  EXPECT_EQ(root["model"]["name"].as<std::string>(), "caf\xc3\xa9");
}

TEST(Yaml, NearestOnlySuggestsCloseNames) {
  EXPECT_EQ(nearest("H100-SXM-80GB", {"H100-SXM5-80GB", "A100-SXM4-80GB"}), "H100-SXM5-80GB");
  EXPECT_EQ(nearest("zzzzzz", {"tp", "pp"}), "");
  EXPECT_EQ(nearest("overlap_p2p", {"overlap_p2p_comm", "overlap_grad_reduce"}), "overlap_p2p_comm");  // a prefix
  EXPECT_EQ(nearest("over", {"overlap_p2p_comm", "overlap_grad_reduce"}), "");  // ambiguous prefix
}

TEST(Yaml, OverrideErrorsAreBlamedOnTheOverrideOnly) {
  const std::vector<std::string> sets{"cluster.nodes=4", "cluster.nodess=8"};
  const InputError typo("s.yaml", 3, "cluster.nodess", "unknown key", "did you mean 'nodes'?", "cluster.nodes");
  try {
    rethrow_for_overrides(typo, sets, "--set");
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "--set cluster.nodess=8");
    EXPECT_EQ(e.line(), 0);  // the file's line means nothing for an override
    EXPECT_EQ(e.fix(), "did you mean --set cluster.nodes=8?");
  }
  // An error about a key no override touched keeps its file and line.
  const InputError file_error("s.yaml", 5, "model.layers", "must be positive", "use layers: 1 or more");
  try {
    rethrow_for_overrides(file_error, sets, "--set");
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "s.yaml");
    EXPECT_EQ(e.line(), 5);
    EXPECT_EQ(e.fix(), "use layers: 1 or more");
  }
}
