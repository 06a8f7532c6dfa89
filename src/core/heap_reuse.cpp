// Heap reuse (see heap_reuse.h).
#include "core/heap_reuse.h"

#include <climits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kestrel {

void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);              // every block from the heap, where free keeps it
  mallopt(M_TRIM_THRESHOLD, INT_MAX);  // ... and only a free top of over 2 GiB is given back
#endif
}

}  // namespace kestrel
