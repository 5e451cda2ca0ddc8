// Megatron-Core's DDP buffers cut the layers' parameters (gathers) or gradients (reductions) into
// buckets of whole layers: bytes accumulate until a bucket holds at least the bucket size, and the
// run's last layer closes whatever is left. One rule for the replay and the fast tier.
#pragma once

namespace stacksim::workload {

class BucketFill {
 public:
  // `leading`: bytes already in the first bucket (the embedding travels with the first layers).
  explicit BucketFill(double bucket_bytes, double leading = 0) : size_(bucket_bytes), bytes_(leading) {}

  // Adds one layer's bytes; true when that closes the bucket (full, or `last` ends the run): take()
  // then hands over its bytes and starts the next one.
  bool add(double bytes, bool last) {
    bytes_ += bytes;
    return bytes_ >= size_ || last;
  }
  double take() {
    const double b = bytes_;
    bytes_ = 0;
    return b;
  }

 private:
  double size_;
  double bytes_;
};

}  // namespace stacksim::workload
