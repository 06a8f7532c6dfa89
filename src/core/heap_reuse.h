// Keeps freed memory in the process for reuse instead of handing it back to the system. glibc serves
// large blocks (above 128 KB, raised up to 32 MB as they are freed) with mmap and returns them on free, so every training step
// page-faults its activations in again, and the kernel zeroes each page: a bf16 step of yolov5n at
// 640, batch 16, took 2.8-3.8 s that way here against 1.3-1.6 s with the memory kept (GLIBC_TUNABLES
// A/B in one session). What this costs is the peak a step needs staying resident, which training
// needs again at the next step anyway.
#pragma once

namespace kestrel {

// No mmap for heap blocks and no trimming of the heap top (glibc mallopt); a no-op elsewhere.
// Call at start-up, before the large allocations.
void keep_freed_memory();

}  // namespace kestrel
