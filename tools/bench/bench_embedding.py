"""Benchmark (not a test): torch.ops.qplugin.embedding_bag_{byte,4bit}_rowwise_offsets vs
torch.ops.quantized (same fused tables) vs fp32 torch.nn.functional.embedding_bag on the
dequantized table, one process, sum mode, with and without per_sample_weights.

The issue's bar cases: a 1,000,000 x 128 table, 4096 bags of 20 uniformly random indices
(DRAM-latency bound: every row is a cache miss; each call takes the next of 8 index sets so
that no call finds the previous call's rows in the last-level cache). Bar at 1 thread: qplugin <= torch.ops.quantized
and <= 0.5x fp32 in every case. Then narrow rows (16 and 64 columns) of a 20,000-row table
that stays in the caches, where the per-row work counts.

Usage:  python tools/bench/bench_embedding.py [--threads 1 2] [--repeat 3]

Also provides cases() in the tuple format of tools/bench.py's op families:
(name, qplugin_fn, torch_quantized_fn, fp32_fn, bytes_moved).
"""
import argparse
import os
import statistics
import sys
import warnings

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))  # _timing

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import qplugin  # noqa: E402,F401
from _timing import interleaved_medians  # noqa: E402  (tools/_timing.py)

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")

ROWS, DIM, BAGS, BAG_SIZE = 1_000_000, 128, 4096, 20


def _tables(seed=0):
    """The fp32 table (512 MB) and its 8-bit and 4-bit fused forms (packed by qplugin; the
    layouts are PyTorch's, byte for byte)."""
    g = torch.Generator().manual_seed(seed)
    w = torch.empty(ROWS, DIM)
    for r0 in range(0, ROWS, 100_000):  # chunked: no second 512 MB temporary
        w[r0:r0 + 100_000].normal_(generator=g)
    t8 = torch.ops.qplugin.embedding_bag_byte_prepack(w)
    t4 = torch.ops.qplugin.embedding_bag_4bit_prepack(w)
    return w, t8, t4


# Index sets a case cycles through, one per call: one call touches ~11 MB of 8-bit rows (81,920
# random rows), which a repeated call with the same indices would find in the last-level cache;
# eight sets (~90 MB) keep every call DRAM-bound, as the workload is. Every implementation
# cycles through the same sets, each with its own counter.
N_SETS = 8


def _inputs(seed=1):
    g = torch.Generator().manual_seed(seed)
    idxs = [torch.randint(0, ROWS, (BAGS * BAG_SIZE,), generator=g) for _ in range(N_SETS)]
    off = torch.arange(0, BAGS * BAG_SIZE, BAG_SIZE)
    psw = torch.rand(BAGS * BAG_SIZE, generator=g)
    return idxs, off, psw


def _cycling(fn, idxs, phase):
    """fn(idx) called with the next index set on every call, starting at set `phase` (the three
    implementations start 3 sets apart: with interleaved timing, none runs on the rows the
    previous call just brought into the cache)."""
    state = [phase % len(idxs)]

    def call():
        i = state[0]
        state[0] = (i + 1) % len(idxs)
        return fn(idxs[i])
    return call


def cases():
    """The bar cases for tools/bench.py (its own timing loop)."""
    w, t8, t4 = _tables()
    idxs, off, psw = _inputs()
    out = []
    for bits, t in ((8, t8), (4, t4)):
        q = (torch.ops.qplugin.embedding_bag_byte_rowwise_offsets if bits == 8
             else torch.ops.qplugin.embedding_bag_4bit_rowwise_offsets)
        r = (torch.ops.quantized.embedding_bag_byte_rowwise_offsets if bits == 8
             else torch.ops.quantized.embedding_bag_4bit_rowwise_offsets)
        row_bytes = t.shape[1]
        for weights in (None, psw):
            name = (f"embedding_bag {bits}-bit {ROWS}x{DIM} {BAGS}x{BAG_SIZE} sum"
                    + (" psw" if weights is not None else ""))
            nbytes = BAGS * BAG_SIZE * (row_bytes + 8) + BAGS * DIM * 4
            out.append((
                name,
                _cycling(lambda i, q=q, t=t, pw=weights: q(t, i, off, False, 0, False, pw, None,
                                                             False), idxs, 0),
                _cycling(lambda i, r=r, t=t, pw=weights: r(t, i, off, False, 0, False, pw, None,
                                                             False), idxs, 3),
                _cycling(lambda i, pw=weights: F.embedding_bag(i, w, off, mode="sum",
                                                               per_sample_weights=pw), idxs, 6),
                nbytes))
    out += _cached_cases()
    return out


# Narrow rows of a table the caches hold (20,000 rows; 0.5-1.6 MB at 8 bits): the per-row work
# dominates, not DRAM latency (the rows reduce in registers as they come; see
# docs/benchmarks.md, "Embedding bags").
CACHED_ROWS = 20_000


def _cached_cases():
    g = torch.Generator().manual_seed(2)
    off = torch.arange(0, BAGS * BAG_SIZE, BAG_SIZE)
    idx = torch.randint(0, CACHED_ROWS, (BAGS * BAG_SIZE,), generator=g)
    out = []
    for dim in (16, 64):
        w = torch.randn(CACHED_ROWS, dim, generator=g)
        for bits in (8, 4):
            pre = "byte" if bits == 8 else "4bit"
            t = getattr(torch.ops.qplugin, f"embedding_bag_{pre}_prepack")(w)
            q = getattr(torch.ops.qplugin, f"embedding_bag_{pre}_rowwise_offsets")
            r = getattr(torch.ops.quantized, f"embedding_bag_{pre}_rowwise_offsets")
            nbytes = BAGS * BAG_SIZE * (t.shape[1] + 8) + BAGS * dim * 4
            out.append((
                f"embedding_bag {bits}-bit {CACHED_ROWS}x{dim} {BAGS}x{BAG_SIZE} sum",
                lambda q=q, t=t: q(t, idx, off, False, 0, False, None, None, False),
                lambda r=r, t=t: r(t, idx, off, False, 0, False, None, None, False),
                lambda w=w: F.embedding_bag(idx, w, off, mode="sum"),
                nbytes))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=1.0)
    args = ap.parse_args(argv)
    torch.backends.quantized.engine = "x86"
    cs = cases()
    print(f"qplugin {qplugin.__version__}, ISA {qplugin.cpu_isa()}, torch {torch.__version__}\n")
    print("| case | threads | qplugin ms | torch.ops.quantized ms | fp32 ms | qplugin/quantized "
          "| qplugin/fp32 |")
    print("|---|---|---|---|---|---|---|")
    for t in args.threads:
        torch.set_num_threads(t)
        for name, fq, fr, ff, _ in cs:
            # A fresh order every round: whichever call runs after the fp32 one finds the caches
            # (and the page-table entries of its table) evicted; no implementation always does.
            runs = [interleaved_medians([fq, fr, ff], args.min_time, max_reps=500, shuffle_seed=0)
                    for _ in range(args.repeat)]
            tq, tr, tf = (statistics.median(r[i] for r in runs) for i in range(3))
            print(f"| {name} | {t} | {tq*1e3:.3f} | {tr*1e3:.3f} | {tf*1e3:.3f} | {tq/tr:.2f} | "
                  f"{tq/tf:.2f} |", flush=True)


if __name__ == "__main__":
    main()
