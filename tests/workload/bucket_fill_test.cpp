// The bucket rule the replay and the fast tier share (bucket_fill.hpp).
#include "models/workload/bucket_fill.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace stacksim::workload {
namespace {

std::vector<double> buckets(const std::vector<double>& layers, double size, double leading = 0) {
  std::vector<double> out;
  BucketFill fill(size, leading);
  for (size_t i = 0; i < layers.size(); ++i)
    if (fill.add(layers[i], i + 1 == layers.size())) out.push_back(fill.take());
  return out;
}

TEST(BucketFill, WholeLayersUntilTheSizeAndTheRestAtTheEnd) {
  // 10 + 20 reaches 25: one bucket of 30; 5 + 5 is left for the last one.
  EXPECT_EQ(buckets({10, 20, 5, 5}, 25), (std::vector<double>{30, 10}));
  // A layer larger than the size is a bucket of its own.
  EXPECT_EQ(buckets({40, 1, 40}, 25), (std::vector<double>{40, 41}));
  // Leading bytes (the embedding) ride in the first bucket.
  EXPECT_EQ(buckets({10, 10}, 25, 10), (std::vector<double>{30}));
  // Bytes are conserved whatever the size.
  double total = 0;
  for (double b : buckets({3, 7, 11, 13, 17, 19}, 12)) total += b;
  EXPECT_DOUBLE_EQ(total, 70);
}

}  // namespace
}  // namespace stacksim::workload
