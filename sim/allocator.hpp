// The process's allocator, tuned for replays. A step builds and frees hundreds of thousands of
// tasks and activities in vectors of up to hundreds of MB; glibc's defaults hand each big vector
// its own mmap and give freed heap back to the kernel at once, so every evaluation of a sweep
// faults its memory in page by page again (on a 2-core VM: Llama-3 8B evaluations 42/s -> 128/s,
// GPT-3 175B's step 1.85 -> 1.28 s with the tuning). The CLI, the Python module and the step
// benchmark call it once at start.
#pragma once

namespace stacksim::sim {

// Grows the heap 256 MB at a time (untouched pad costs no memory), keeps up to 512 MB of freed
// heap for the next evaluation instead of trimming it, and serves allocations below 32 MB from
// the heap rather than from fresh mappings. A no-op where the C library is not glibc.
void tune_allocator_for_replays();

}  // namespace stacksim::sim
