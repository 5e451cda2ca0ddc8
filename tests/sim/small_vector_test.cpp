// SmallVector: the inline-then-heap list behind task successors and activity usages.
#include "sim/small_vector.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "sim/engine.hpp"

namespace stacksim::sim {
namespace {

using Ids = SmallVector<uint32_t, 2>;

std::vector<uint32_t> items(const Ids& v) { return {v.begin(), v.end()}; }

TEST(SmallVector, KeepsOrderAcrossTheInlineToHeapSwitch) {
  Ids v;
  EXPECT_TRUE(v.empty());
  std::vector<uint32_t> expected;
  for (uint32_t i = 0; i < 37; ++i) {
    v.push_back(i * 3);
    expected.push_back(i * 3);
    ASSERT_EQ(items(v), expected) << "after " << i + 1 << " pushes";
  }
  EXPECT_GE(v.capacity(), 37u);
  v.pop_back();
  EXPECT_EQ(v.size(), 36u);
  EXPECT_EQ(v.back(), 35u * 3);
}

TEST(SmallVector, CopiesAndMovesBothInlineAndHeapContents) {
  for (uint32_t n : {0u, 1u, 2u, 3u, 9u}) {
    Ids a;
    for (uint32_t i = 0; i < n; ++i) a.push_back(100 + i);
    const std::vector<uint32_t> want = items(a);
    Ids copy(a);
    EXPECT_EQ(items(copy), want);
    EXPECT_EQ(copy, a);
    copy.push_back(7);  // a copy owns its storage
    EXPECT_EQ(items(a), want);
    Ids moved(std::move(copy));
    EXPECT_EQ(moved.size(), n + 1);
    EXPECT_TRUE(copy.empty());
    Ids assigned = {1, 2, 3, 4};
    assigned = a;
    EXPECT_EQ(items(assigned), want);
    assigned = std::move(moved);
    EXPECT_EQ(assigned.size(), n + 1);
    EXPECT_EQ(assigned.back(), 7u);
    std::vector<Ids> many(5, a);  // regrowth of a std::vector moves them
    many.resize(500);
    EXPECT_EQ(items(many[4]), want);
  }
}

TEST(SmallVector, ResizeValueInitialisesAndReleaseEmpties) {
  Ids v = {5};
  v.resize(4);
  EXPECT_EQ(items(v), (std::vector<uint32_t>{5, 0, 0, 0}));
  v.release();
  EXPECT_TRUE(v.empty());
  v.push_back(9);
  EXPECT_EQ(items(v), std::vector<uint32_t>{9});
}

TEST(SmallVector, UsagesTakeBraceListsAsActivitySpecsAreWritten) {
  ActivitySpec a;
  a.usages = {{3, 0.5}, {4}};
  ASSERT_EQ(a.usages.size(), 2u);
  EXPECT_EQ(a.usages[0].resource, 3u);
  EXPECT_EQ(a.usages[0].weight, 0.5);
  EXPECT_EQ(a.usages[1].weight, 1.0);
  ActivitySpec b = a;
  b.usages.push_back({5, 2.0});
  EXPECT_EQ(a.usages.size(), 2u);
  EXPECT_EQ(b.usages.size(), 3u);
}

}  // namespace
}  // namespace stacksim::sim
