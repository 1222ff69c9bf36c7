// Kernel table of the embedding-bag lookups over row-wise quantized tables (8-bit rows: codes then
// fp32 scale, fp32 bias; 4-bit rows: packed nibbles then fp16 scale, fp16 bias; 2-bit rows: four
// 2-bit codes per byte then fp16 scale, fp16 bias; PyTorch's fused layouts). Torch-free: raw
// pointers, sizes only.
// Changes with: kernels/dispatch.cpp (table choice), embedding_generic_impl.h (the loop),
// embedding_{scalar,avx2,avx512vnni}.cpp, ops/cpu/embedding_kernel.cpp (validation, threading).
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {

enum class BagMode : int { kSum = 0, kMean = 1, kMax = 2 };

// One call reduces bags [b0, b1). Everything here has been validated by the caller: offsets are
// non-decreasing and inside [0, n_indices], every index used is < num_rows (or < the mapping's
// length when mapping != nullptr), and every mapping value used is in [-1, num_rows).
//
// Row r of the table starts at table + r * row_bytes; its value in column d is
//   v = scale_r * q_r[d] + bias_r
// Bag b covers positions i in [offsets[b], offsets[b+1]); row(i) = indices[i], or
// mapping[indices[i]] when mapping is given (-1: a pruned row, which contributes nothing).
//   sum:  out[b][d] = sum_i fma(w_i * scale, q[d], .) accumulated in order, then + sum_i w_i * bias
//         (w_i = per_sample_weights[i], or 1 and no multiplication when weights == nullptr);
//   mean: the sum (no weights) divided by the number of non-pruned rows of the bag (pruned rows
//         neither add nor count, like padding_idx entries in torch.nn.functional.embedding_bag);
//   max:  max_i fma(scale, q[d], bias) over the non-pruned rows;
// An empty bag (or one whose rows are all pruned) gives zeros. Every ISA gives the scalar bytes:
// per element the same IEEE operations in the same order (fma is fused everywhere).
struct BagArgs {
  const uint8_t* table;
  int64_t row_bytes;
  int64_t dim;             // embedding_dim (even for 4-bit tables, a multiple of 4 for 2-bit)
  const void* indices;     // int32 or int64
  bool indices_64;
  const int64_t* offsets;  // [nbags + 1]
  const int32_t* mapping;  // nullable
  const float* weights;    // nullable (sum mode only)
  BagMode mode;
  float* out;              // [nbags][dim]
  int64_t prefetch;        // positions prefetched ahead (0: none; see kNearPrefetch)
  // On a walk that prefetches far (prefetch > kNearPrefetch): whether rows whose accumulators
  // partly live in memory (avx2: 4-bit rows of 96 and 128 columns) may still reduce as they come
  // rather than in batches (kernels::embedding_far_regs(); the same bytes either way).
  bool far_regs = true;
};

// A prefetch distance of at most kNearPrefetch marks a table the caches hold (0: within L2):
// without mapping or weights the kernels then walk the rows with one prefetch stage and no
// per-row checks.
constexpr int64_t kNearPrefetch = 16;

struct EmbeddingKernelTable {
  Isa isa;
  void (*bag_8bit)(const BagArgs& a, int64_t b0, int64_t b1);
  void (*bag_4bit)(const BagArgs& a, int64_t b0, int64_t b1);
  // 2-bit rows: element 4k + j in bits [2j, 2j + 2) of byte k, i.e. element i at bit 2i of the
  // little-endian row: the vector forms broadcast 2 (avx2) or 4 (avx512vnni) bytes and shift
  // each lane by 2i; register-blocked like the other widths, the same fma per element.
  void (*bag_2bit)(const BagArgs& a, int64_t b0, int64_t b1);
  // True when indices[i0, i1) (int32 or int64) all lie in [0, limit): the validation of every
  // lookup, one branch-free min/max scan the compiler vectorizes per tier (a scalar check per
  // index was ~12% of a lookup of 81,920 rows from a cached table).
  bool (*indices_in_range)(const void* indices, bool indices_64, int64_t i0, int64_t i1,
                           int64_t limit);
  const char* name_8bit;
  const char* name_4bit;
  const char* name_2bit;
};

// The table of kernels::current_isa() (QPLUGIN_CPU_ISA / _set_cpu_isa apply as for table()).
const EmbeddingKernelTable& embedding_table();

QPLUGIN_ISA_TABLES(EmbeddingKernelTable, make_embedding_table);

}  // namespace kernels
}  // namespace qplugin
