// Library-level ops: the ISA in use, the torch version qplugin was built against, the pool of
// output buffers, and which path some 8-bit kernels took.
// Changes with: kernels/dispatch.{h,cpp}, qplugin/_loader.py.
#include <torch/library.h>
#include <torch/version.h>

#include <string>
#include <vector>

#include "driver/output_pool.h"
#include "kernels/dispatch.h"
#include "ops/quantized_cpu/path_counts.h"
#include "ops/schemas.h"

namespace qplugin {
namespace ops {
namespace {

std::string cpu_isa() { return kernels::isa_name(kernels::current_isa()); }

// Test/benchmark hook: lower the ISA (or restore, never above what the CPU has). Returns the ISA
// now in use. Packed objects keep the kernels chosen at their prepack time.
std::string set_cpu_isa(const std::string& isa) {
  kernels::Isa want;
  if (isa == "auto") {
    want = kernels::ceiling_isa();
  } else {
    TORCH_CHECK(kernels::parse_isa(isa.c_str(), &want),
                "qplugin::_set_cpu_isa: expected one of scalar, avx2, avx512vnni, auto, got '",
                isa, "'");
  }
  return kernels::isa_name(kernels::set_isa(want));
}

// Test/benchmark hook: turn the AMX form of the avx512vnni GEMM off or back on (never on without
// AMX, or with QPLUGIN_AMX=0); returns whether it is on now. The same bytes either way.
bool set_amx(bool on) { return kernels::set_amx(on); }
bool amx_enabled() { return kernels::amx_enabled(); }

std::string detected_cpu_isa() { return kernels::isa_name(kernels::detected_isa()); }

std::string build_torch_version() { return TORCH_VERSION; }

// The pool of large output buffers (driver/output_pool.h): idle bytes, idle buffers, reused and
// fresh allocations, limit in bytes.
std::vector<int64_t> output_pool_stats() {
  const driver::OutputPoolStats s = driver::output_pool_stats();
  return {s.idle_bytes, s.idle_buffers, s.reused, s.fresh, s.limit_bytes};
}

int64_t release_output_pool() { return driver::release_output_pool(); }

// Calls since load per kernel path (ops/quantized_cpu/path_counts.h, PathCount order): 8-bit
// unary maps and cat's requantized inputs looked up, computed in each PwAffine8 form (one
// piece, select, max, min, keep); add/mul with and without the per-lane tie check, mul by the
// scaled rational form; last, the computed maps whose plan was in fixed point.
std::vector<int64_t> kernel_path_counts() {
  std::vector<int64_t> v;
  for (int i = 0; i < kNumPathCounts; ++i) v.push_back(path_counts()[i].load());
  return v;
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

namespace qplugin {
namespace schemas {

void define_misc(torch::Library& m) {
  m.def("_cpu_isa() -> str", &qplugin::ops::cpu_isa);
  m.def("_detected_cpu_isa() -> str", &qplugin::ops::detected_cpu_isa);
  m.def("_set_cpu_isa(str isa) -> str", &qplugin::ops::set_cpu_isa);
  m.def("_set_amx(bool on) -> bool", &qplugin::ops::set_amx);
  m.def("_amx_enabled() -> bool", &qplugin::ops::amx_enabled);
  m.def("_build_torch_version() -> str", &qplugin::ops::build_torch_version);
  m.def("_output_pool_stats() -> int[]", &qplugin::ops::output_pool_stats);
  m.def("_release_output_pool() -> int", &qplugin::ops::release_output_pool);
  m.def("_kernel_path_counts() -> int[]", &qplugin::ops::kernel_path_counts);
}

}  // namespace schemas
}  // namespace qplugin
