// glibc's mallopt knobs behind tune_allocator_for_replays (allocator.hpp). Setting any of them turns
// off glibc's dynamic mmap threshold, so all three are set together.
#include "sim/allocator.hpp"

#include <cstdlib>  // defines __GLIBC__ on glibc systems

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace stacksim::sim {

void tune_allocator_for_replays() {
#if defined(__GLIBC__)
  mallopt(M_TOP_PAD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest on 64-bit systems
#endif
}

}  // namespace stacksim::sim
