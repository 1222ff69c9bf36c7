#!/usr/bin/env bash
# Builds tools/cpp_loader/qplugin_loader with g++ against the installed torch (Python is used only
# here, to ask torch where its headers and libraries are; the loader itself has no Python).
#   tools/cpp_loader/build.sh            # -> tools/cpp_loader/qplugin_loader (dlopens qplugin)
#   LINKED=1 tools/cpp_loader/build.sh   # -> qplugin_loader_linked (links qplugin's library)
# The same line is in docs/deployment.md; tests/test_cpp_loader.py builds with the same flags.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PY=${PYTHON:-python3}
CXX=${CXX:-g++}
read -r ABI INC LIB QLIB <<<"$($PY -c '
import torch, torch.utils.cpp_extension as c
print(int(torch._C._GLIBCXX_USE_CXX11_ABI), ":".join(c.include_paths()), ":".join(c.library_paths()), end=" ")
try:
    import qplugin; print(qplugin.library_path())
except Exception:
    print("-")')"
CFLAGS=(-std=c++20 -O2 -D_GLIBCXX_USE_CXX11_ABI=$ABI)
for d in ${INC//:/ }; do CFLAGS+=(-I"$d"); done
LDFLAGS=()
for d in ${LIB//:/ }; do LDFLAGS+=(-L"$d" -Wl,-rpath,"$d"); done
LDFLAGS+=(-Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed -ldl)
if [[ "${LINKED:-0}" == 1 ]]; then
  [[ "$QLIB" != "-" ]] || { echo "build.sh: LINKED=1 needs an importable qplugin" >&2; exit 2; }
  set -x
  "$CXX" "${CFLAGS[@]}" -I"$HERE/../../csrc" "$HERE/main.cpp" "$HERE/linked.cpp" \
    -o "$HERE/qplugin_loader_linked" -Wl,--no-as-needed "$QLIB" -Wl,-rpath,"$(dirname "$QLIB")" \
    "${LDFLAGS[@]}"
else
  set -x
  "$CXX" "${CFLAGS[@]}" "$HERE/main.cpp" -o "$HERE/qplugin_loader" "${LDFLAGS[@]}"
fi
