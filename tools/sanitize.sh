#!/usr/bin/env bash
# Builds qplugin with AddressSanitizer + UndefinedBehaviorSanitizer (QPLUGIN_SANITIZE, setup.py)
# in a copy of the tree, so the normal in-place build (qplugin/_C.abi3.so, build/) is untouched,
# then runs a CI-sized subset of the op tests under both sanitizers. Any ASan or UBSan report
# aborts the test process, so this script fails. Sized for ~15 min on 2 cores, build included.
#
#   bash tools/sanitize.sh                 # the CI subset
#   bash tools/sanitize.sh tests/conv -k transpose   # other pytest arguments instead
#
# Env: PYTHON, MAX_JOBS (default 2), QPLUGIN_SANITIZE (default address,undefined),
#      QPLUGIN_SANITIZE_TREE (default build/sanitize-tree; kept between runs so rebuilds are
#      incremental).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
SAN=${QPLUGIN_SANITIZE:-address,undefined}
TREE=${QPLUGIN_SANITIZE_TREE:-$ROOT/build/sanitize-tree}

# The copy: the sources and tests as they are on disk (tracked or not), without build outputs.
# tar keeps mtimes, so ninja rebuilds only what changed. csrc, qplugin and tests are replaced
# whole, so a file deleted or renamed here does not linger in the copy (setup.py would compile a
# stale csrc/*.cpp, or reject it as outside its source folders); the objects in $TREE/build stay.
mkdir -p "$TREE"
rm -rf "$TREE/csrc" "$TREE/qplugin" "$TREE/tests"
tar -C "$ROOT" --exclude=./build --exclude=./.git --exclude='*.so' --exclude='*.o' \
    --exclude=__pycache__ --exclude=.pytest_cache -cf - . | tar -C "$TREE" -xf -
cd "$TREE"

start=$(date +%s)
QPLUGIN_SANITIZE=$SAN MAX_JOBS=${MAX_JOBS:-2} $PY setup.py -q build_ext --inplace
echo "qplugin sanitize: build ($SAN) took $(( $(date +%s) - start )) s"

# The sanitizer runtimes must come first in the process (Python and torch are not instrumented).
PRELOAD=""
case ",$SAN," in *,address,*) PRELOAD="$(gcc -print-file-name=libasan.so)";; esac
case ",$SAN," in *,undefined,*) PRELOAD="$PRELOAD $(gcc -print-file-name=libubsan.so)";; esac
for lib in $PRELOAD; do
  [ -f "$lib" ] || { echo "qplugin sanitize: $lib not found (gcc's sanitizer runtime)"; exit 1; }
done

if [ $# -eq 0 ]; then
  # The CI subset: one file per op family, chosen for coverage of the kernels' edge sweeps
  # (every ISA through the `isa` fixture) at a size that runs in minutes at -O1 under ASan.
  set -- tests/conv/test_conv2d.py tests/conv/test_conv_transpose.py tests/conv/test_depthwise.py \
         tests/conv/test_depthwise_pair_rows.py tests/conv/test_depthwise_5x5_quads.py \
         tests/conv/test_conv1d_3d.py tests/conv/test_conv_fast_paths.py \
         tests/linear/test_linear_ops.py tests/linear/test_linear_gemm_edges.py \
         tests/pooling/test_max_pool.py tests/pooling/test_avg_pool.py \
         tests/pooling/test_adaptive_pool.py tests/upsample tests/batch_norm tests/normalization \
         tests/elementwise/test_binary.py tests/elementwise/test_cat.py \
         tests/activation tests/embedding/test_embedding_ops.py \
         tests/embedding/test_embedding_nbit.py tests/dynamic/test_linear_dynamic_ops.py \
         tests/dynamic/test_rnn_dynamic.py tests/test_hostile_sizes.py
fi

start=$(date +%s)
# detect_leaks=0: Python and torch keep allocations until exit by design.
# UBSan: halt and print a stack on the first report (also for checks built recoverable).
# QPLUGIN_SANITIZE_RUN: tests that need a real allocation failure skip (ASan aborts on a failed
# operator new instead of throwing std::bad_alloc).
# --capture=sys: pytest captures Python's sys.stdout / sys.stderr only, so a sanitizer report
# (written to fd 2 just before the process aborts) reaches the log; with fd capture it was lost
# and the run ended with exit code 1 and no message.
env LD_PRELOAD="${PRELOAD# }" QPLUGIN_SANITIZE_RUN=1 \
    ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    $PY -m pytest -q -p no:cacheprovider --capture=sys -x "$@"
echo "qplugin sanitize: tests took $(( $(date +%s) - start )) s"
