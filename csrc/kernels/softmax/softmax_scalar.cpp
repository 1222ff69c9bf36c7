// Scalar (baseline x86-64) softmax kernels: the reference forms themselves.
// Changes with: softmax_generic_impl.h, softmax.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/softmax/softmax_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace softmax {
namespace scalar {

const Table& make_table() {
  static const Table t = {{&generic::cols<uint8_t>, &generic::rows<uint8_t>},
                          {&generic::cols<int8_t>, &generic::rows<int8_t>}};
  return t;
}

}  // namespace scalar
}  // namespace softmax
}  // namespace kernels
}  // namespace qplugin
