#!/usr/bin/env bash
# Installs what the tests need, builds qplugin in place and runs the tests (README command 2).
#
#   bash tools/test.sh [--torch VERSION] [pytest args...]
#
# --torch VERSION (or QPLUGIN_TORCH=VERSION): the torch to build and test against. The default,
# 2.13.0, is installed into the running Python (its CPU wheel lies on this machine's disk). Any
# other version gets its own venv, .venv/torch-VERSION (torch 2.14.1 on disk is a CUDA build that
# runs on the CPU; keeping it apart leaves the 2.13.0 install alone). Tested: 2.13.0, 2.14.1.
# The in-place build (qplugin/_C.abi3.so) is then for that torch: rerun without --torch to get
# back a 2.13.0 build.
#
# Stages: (1) the whole suite on the best ISA; (2) the op folders on the scalar ISA (the path a
# plain x86-64 machine takes); (3) the folders whose oracle is PyTorch's GEMM/conv again, with
# PyTorch's own kernels forced to their AVX2 paths (FBGEMM_ENABLE_INSTRUCTIONS, ONEDNN_MAX_CPU_ISA,
# ATEN_CPU_CAPABILITY), so an AVX-512 machine proves the suite does not depend on the CPU's torch
# kernels (docs/oracle.md); on an AVX2-only machine stage 1 already runs them that way; (4) the
# workflow and model tests with torch.ao blocked (QPLUGIN_BLOCK_TORCH_AO=1); (5) the
# op tests under AddressSanitizer + UndefinedBehaviorSanitizer (tools/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH=${QPLUGIN_TORCH:-2.13.0}
if [ "${1:-}" = "--torch" ]; then
    TORCH=$2
    shift 2
fi
PY=${PYTHON:-python3}
if [ "$TORCH" != "2.13.0" ]; then
    VENV=.venv/torch-$TORCH
    [ -x "$VENV/bin/python" ] || $PY -m venv "$VENV"
    PY=$VENV/bin/python
fi
$PY -m pip install -q --disable-pip-version-check "torch==$TORCH" ninja "pytest>=7" expecttest numpy
echo "qplugin: testing against torch $($PY -c 'import torch; print(torch.__version__)')"
start=$(date +%s)
MAX_JOBS=${MAX_JOBS:-2} $PY setup.py -q build_ext --inplace
echo "qplugin: build took $(( $(date +%s) - start )) s"
$PY -m pytest -q -p no:cacheprovider tests "$@"
# Scalar-only pass over the op tests: the path a plain x86-64 machine takes.
QPLUGIN_CPU_ISA=scalar $PY -m pytest -q -p no:cacheprovider tests/batch_norm tests/activation tests/normalization \
    tests/pooling tests/upsample tests/elementwise tests/linear tests/conv tests/embedding tests/dynamic
# On a CPU with AMX-INT8 the passes above run the avx512vnni GEMM in its AMX form; the zmm form
# once more over the GEMM users (QPLUGIN_AMX=0; elsewhere it is what the passes above ran).
if [ "$($PY -c 'import torch, qplugin; print(torch.ops.qplugin._amx_enabled())')" = "True" ]; then
    QPLUGIN_AMX=0 $PY -m pytest -q -p no:cacheprovider tests/linear tests/conv tests/dynamic tests/models
fi
# PyTorch's quantized kernels on their AVX2 paths (saturating u8 x s8 pair sums): the oracle
# must decide per case (tests/_reference.py gemm_oracle) and the suite pass all the same.
FBGEMM_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 \
    $PY -m pytest -q -p no:cacheprovider tests/linear tests/conv tests/models tests/upsample tests/dynamic
# Legacy-blocked mode: the calibration workflow and the model tests once more with torch.ao's
# quantization stack unimportable and torch.ops.quantized hidden (tests/_block_torch_ao.py); the
# tests that need torch.ao as the oracle skip.
QPLUGIN_BLOCK_TORCH_AO=1 $PY -m pytest -q -p no:cacheprovider tests/quantization tests/models
# ASan + UBSan over a CI-sized subset of the op tests (a sanitized build in build/sanitize-tree;
# the in-place build is untouched). QPLUGIN_SKIP_SANITIZE=1 skips it for a quick local run.
if [ "${QPLUGIN_SKIP_SANITIZE:-0}" != "1" ]; then
    PYTHON=$PY MAX_JOBS=${MAX_JOBS:-2} bash tools/sanitize.sh
fi
