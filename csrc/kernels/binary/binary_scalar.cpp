// Scalar (baseline x86-64 / portable) add/mul kernels: the reference every ISA must match byte
// for byte. Changes with: binary_impl.h, binary.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/binary/binary_impl.h"

namespace qplugin {
namespace kernels {
namespace binary {
namespace scalar {

const Table& make_table() {
  static const Table t = {&generic::run<uint8_t, false>, &generic::run<uint8_t, true>,
                          &generic::run<int8_t, false>, &generic::run<int8_t, true>};
  return t;
}

}  // namespace scalar
}  // namespace binary
}  // namespace kernels
}  // namespace qplugin
