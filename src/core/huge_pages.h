// Memory for the buffers that every decoding step reads end to end (packed weights, KV
// pools), in 2 MB pages where the kernel allows them (transparent huge pages, asked for with
// madvise; without them it is ordinary memory).
//
// Why: a step streams every weight once. In 4 KB pages that is one TLB miss per 4 KB read
// (tiny-target's bf16 weights: 14,000 pages a step, against a second-level TLB of about
// 2,000 entries), and a miss inside a virtual machine walks two page tables. 2 MB pages leave
// a few dozen. Most weight matrices of small models are under 2 MB, so they are cut as
// slices from shared 2 MB-aligned regions rather than given a 2 MB page each.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace dspark {

// A slice of a region: 64-byte aligned, zero-initialised, valid while `region` lives.
struct HugePageSlice {
  std::byte* data = nullptr;
  std::shared_ptr<void> region;  // the region stays allocated until its last slice is dropped
};

// num_bytes > 0. Thread-safe. Slices are cut in order from the current 32 MB region; one that
// does not fit starts the next, one over 16 MB gets a region of its own (rounded up to 2 MB).
// Space freed inside a region is not reused: meant for buffers that live as long as a model.
HugePageSlice take_huge_page_slice(size_t num_bytes);

// What the regions alive now hold: the mappings /proc/self/smaps marks as advised for 2 MB
// pages (zeros where it cannot be read).
struct HugePageReport {
  size_t resident_bytes = 0;  // bytes of the live regions in memory (their Rss)
  size_t huge_bytes = 0;      // of them, bytes in 2 MB pages (their AnonHugePages)
  std::string mode;           // the choice in /sys/kernel/mm/transparent_hugepage/enabled ("madvise", ...)
};
HugePageReport huge_page_report();

}  // namespace dspark
