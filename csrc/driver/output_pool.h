// A bounded pool of large, already-mapped output buffers for qplugin's float-output ops
// (dynamic linear, #17). Why: a fresh multi-megabyte tensor from PyTorch's CPU allocator is
// usually a fresh mapping from glibc, and its first write page-faults on every 4 KB page; in a
// BERT-base forward at batch 8 that was 6,000-13,000 faults and 9-20 ms of kernel time per
// forward (of 50-75 ms) on the Zen 4/5 VMs, varying from run to run with glibc's heap state.
// Buffers of >= kMinPooledBytes that qplugin hands out come from here and return here when the
// tensor dies; a returned buffer is reused for the next request of the same size class, so its
// pages are already mapped (and often still in cache).
//
// The tensors are ordinary CPU tensors (resizable: the storage keeps this allocator). The pool
// holds at most QPLUGIN_OUTPUT_POOL_MB megabytes of free buffers (default 256; 0 turns the pool
// off, every buffer then comes from PyTorch's CPU allocator), releasing the least recently
// returned first; qplugin.release_output_pool() frees the idle ones (torch.cuda.empty_cache's
// counterpart). Thread-safe (one mutex, taken once per allocation and per release, and around
// fork so that a child does not inherit it locked).
// Changes with: output_pool.cpp, qplugin/__init__.py (release_output_pool, output_pool_stats).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>

namespace qplugin {
namespace driver {

// Requests below this go straight to PyTorch's CPU allocator (glibc serves them from its heap
// without new mappings).
constexpr int64_t kMinPooledBytes = 1 << 20;

// A contiguous float32 CPU tensor of `sizes` whose storage comes from the pool.
at::Tensor empty_pooled_float(c10::IntArrayRef sizes);

struct OutputPoolStats {
  int64_t idle_bytes;     // free buffers held by the pool
  int64_t idle_buffers;
  int64_t reused;         // allocations served from the pool since start
  int64_t fresh;          // pooled-size allocations that needed a new buffer
  int64_t limit_bytes;    // QPLUGIN_OUTPUT_POOL_MB
};
OutputPoolStats output_pool_stats();
// Frees every idle buffer; returns the bytes released.
int64_t release_output_pool();

}  // namespace driver
}  // namespace qplugin
