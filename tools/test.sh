#!/usr/bin/env bash
# Installs what the tests need, builds qplugin in place and runs the tests (README command 2).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
$PY -m pip install -q --disable-pip-version-check "torch==2.13.0" ninja "pytest>=7" expecttest numpy
start=$(date +%s)
MAX_JOBS=${MAX_JOBS:-2} $PY setup.py -q build_ext --inplace
echo "qplugin: build took $(( $(date +%s) - start )) s"
$PY -m pytest -q -p no:cacheprovider tests "$@"
# Scalar-only pass over the op tests: the path a plain x86-64 machine takes.
QPLUGIN_CPU_ISA=scalar $PY -m pytest -q -p no:cacheprovider tests/norm tests/activation tests/normalization \
    tests/pooling tests/upsample tests/elementwise tests/linear tests/conv tests/embedding
