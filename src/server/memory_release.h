// Returning request memory to the system. A large request body (up to 16 MB of JSON,
// parsed into a tree several times its size) is freed when the request ends, but glibc
// keeps freed memory in the arena of the thread that freed it: below its trim threshold
// (dynamic, up to 64 MB) an arena's top is never returned, and malloc_trim does not
// touch the top of per-thread arenas. With one arena per HTTP worker, resident memory
// grew from 0.48 to 2.4 GB over ~60 maximum-size bodies (issue #17).
//
// tune_allocator_for_serving (process-wide, once): allocations of 1 MiB or more are
// mmapped (so freeing them unmaps them), arena tops above 8 MiB are returned, and there
// are at most 8 arenas. Small allocations are unaffected; the engine allocates nothing
// per step. The price: a large body's buffers are fresh pages every time (parsing a 4 MB
// body took ~0.6 s instead of ~0.4 s on a loaded 2-core machine). release_memory_after(bytes): after a request of at least 1 MiB, malloc_trim
// returns free pages inside the arenas too (at most once a second).
#pragma once

#include <cstdint>

namespace dspark {

void tune_allocator_for_serving();
void release_memory_after(uint64_t request_bytes);

}  // namespace dspark
