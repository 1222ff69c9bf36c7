// Planning of one add/mul call: float constants and error bound for the fast path (binary.h),
// and the exact per-pair fallback with its cache. Not included by the ISA files.
// Changes with: binary_plan.cpp, binary.h, exact.{h,cpp}.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "kernels/binary/binary.h"

namespace qplugin {
namespace kernels {
namespace binary {

struct SharedExact;  // binary_plan.cpp: the per-qparams cache and full table

// The exact fallback of one add/mul call: the op's qparams and a lazily allocated cache of
// results per (a, b) code pair (8-bit inputs have 65536 pairs), shared by the threads.
class ExactCtx {
 public:
  ExactCtx(bool is_mul, bool is_signed, double sa, int64_t za, double sb, int64_t zb, double so,
           int64_t zo, int64_t lo, int64_t hi)
      : is_mul_(is_mul), is_signed_(is_signed), sa_(sa), sb_(sb), so_(so), za_(za), zb_(zb),
        zo_(zo), lo_(lo), hi_(hi) {}
  // Exact output code for raw codes a, b (for 8-bit types, the byte's value in the type).
  int64_t compute(int64_t a, int64_t b) const;
  // Cached compute() for 8-bit codes.
  int32_t cached(int32_t a, int32_t b) const;
  static int32_t fix(const void* ctx, int32_t a, int32_t b) {
    return static_cast<const ExactCtx*>(ctx)->cached(a, b);
  }
  static void note(const void* ctx, int64_t undecided) {
    static_cast<const ExactCtx*>(ctx)->undecided_.fetch_add(undecided, std::memory_order_relaxed);
  }
  // Sets p.table when an earlier call with these qparams built the table.
  void use_table(Params* p) const;
  // After a call over n elements (n >= 4096) that left more than 1 lane in 64 undecided (tie-heavy
  // scales, e.g. 0.03 + 0.025 -> 0.05 or 0.05 * 0.05 -> 0.1, where the float fast path lands on
  // or next to ties): builds the full table (once per qparams; ~65536 exact results), which the
  // next calls look up for every lane. Fewer undecided lanes are cheaper on the fast path.
  void after_call(int64_t n) const;
  // Sets *p to run `kern` (this ISA's kernel for the op and dtype) without the per-lane tie
  // check (thr = 1) and returns true when that gives the exact result on all 65536 code pairs:
  // p's float constants as planned, else with c moved by up to four ulps or ra, rb by one (v's
  // float error can put a pair just across a rounding tie; a shift often moves it back). Once per
  // qparams and kernel, by running kern over all pairs: as planned (undecided lanes fixed
  // exactly, so exact by construction) against each unchecked candidate, byte for byte. Most
  // qparams a calibrated model carries pass; tie-heavy decimal scales mostly do not.
  template <typename T>
  bool use_no_check(Kernel<T> kern, Params* p) const;

 private:
  const std::shared_ptr<SharedExact>& shared() const;
  bool is_mul_, is_signed_;
  double sa_, sb_, so_;
  int64_t za_, zb_, zo_, lo_, hi_;
  mutable std::once_flag once_;
  // Shared with earlier calls of the same op and qparams (a small process-wide registry,
  // binary_plan.cpp): a model calls each add/mul with the same qparams every time, and building
  // a fresh cache cost 128 KiB of allocation and 65536 stores per call.
  mutable std::shared_ptr<SharedExact> shared_;
  mutable std::atomic<int64_t> undecided_{0};  // this call's (note)
  mutable std::shared_ptr<SharedExact> table_owner_;  // keeps use_table's table for the call
};

extern template bool ExactCtx::use_no_check<uint8_t>(Kernel<uint8_t>, Params*) const;
extern template bool ExactCtx::use_no_check<int8_t>(Kernel<int8_t>, Params*) const;

// Plans for 8-bit operands of one signedness; lo/hi are the output code bounds.
Params plan_add(const ExactCtx& ctx, bool is_signed, double sa, int64_t za, double sb, int64_t zb,
                double so, int64_t zo, int64_t lo, int64_t hi);
Params plan_mul(const ExactCtx& ctx, bool is_signed, double sa, int64_t za, double sb, int64_t zb,
                double so, int64_t zo, int64_t lo, int64_t hi);

}  // namespace binary
}  // namespace kernels
}  // namespace qplugin
