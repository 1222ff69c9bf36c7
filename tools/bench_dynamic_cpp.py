"""Dynamic-quantized BERT deployed from C++ (a benchmark, not a test): torch.ao's
quantize_dynamic model as TorchScript (what such deployments run today) vs qplugin's
quantize_dynamic model as TorchScript and as an AOTInductor package (.pt2), each run by
tools/cpp_loader/qplugin_loader with no Python in the process.

    tools/cpp_loader/build.sh && python tools/bench_dynamic_cpp.py [--layers 12] [--batch 8]
        [--threads 1] [--runs 12] [--rounds 2]

The BERT-base encoder of tools/bench_dynamic.py (random weights, sequence 128). Each deployment
is its own process (as a service would be), `--bench RUNS` forwards after a first one, median;
the three processes alternate for --rounds rounds. One model per process means torch.ao's fresh
multi-megabyte outputs page-fault as in a service (docs/notes/dynamic.md); set
GLIBC_TUNABLES=glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=268435456 in the
environment to time compute only.
"""
import argparse
import copy
import os
import re
import subprocess
import sys
import tempfile
import warnings

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "tools"))
sys.path.insert(0, os.path.join(_ROOT, "tests", "models"))

import torch  # noqa: E402

import qplugin  # noqa: E402
import qplugin.quantization as qq  # noqa: E402
from bench_dynamic import bert  # noqa: E402

warnings.filterwarnings("ignore")
LOADER = os.path.join(_ROOT, "tools", "cpp_loader", "qplugin_loader")


def _files(d, layers, batch):
    """(input.pt, {deployment: loader arguments}) in directory d."""
    import torch.ao.quantization as tq
    torch.backends.quantized.engine = "x86"
    fm = bert(layers)
    qp = qq.quantize_dynamic(copy.deepcopy(fm))
    ao = tq.quantize_dynamic(copy.deepcopy(fm))
    x = torch.randn(batch, 128, 768, generator=torch.Generator().manual_seed(1))
    inp = os.path.join(d, "input.pt")
    torch.save(x, inp)
    ao_ts, qp_ts, qp_pt2 = (os.path.join(d, n) for n in ("ao.pt", "qplugin.pt", "qplugin.pt2"))
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(ao, x), ao_ts)  # torch.ao's modules script too; trace
        torch.jit.save(torch.jit.script(qp), qp_ts)
        ep = torch.export.export(qp, (x,), strict=False)
        torch._inductor.aoti_compile_and_package(ep, package_path=qp_pt2)
    return inp, {"torch.ao TorchScript": [ao_ts], "qplugin TorchScript": [qp_ts],
                 "qplugin AOTInductor .pt2": ["--pt2", qp_pt2]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=12, help="timed forwards per process")
    ap.add_argument("--rounds", type=int, default=2, help="processes per deployment")
    args = ap.parse_args()
    if not os.access(LOADER, os.X_OK):
        sys.exit(f"bench_dynamic_cpp: build the loader first (tools/cpp_loader/build.sh): "
                 f"{LOADER} not found")
    with tempfile.TemporaryDirectory() as d:
        inp, deps = _files(d, args.layers, args.batch)
        out = os.path.join(d, "out.pt")
        times = {k: [] for k in deps}
        for _ in range(args.rounds):
            for name, files in deps.items():
                r = subprocess.run([LOADER, "--lib", qplugin.library_path(), "--threads",
                                    str(args.threads), "--bench", str(args.runs), *files, inp,
                                    out], capture_output=True, text=True, timeout=1800)
                m = re.search(r"bench: \d+ runs, median ([0-9.e+-]+) ms", r.stdout)
                if r.returncode != 0 or m is None:
                    sys.exit(f"bench_dynamic_cpp: {name}: loader failed\n{r.stdout}{r.stderr}")
                times[name].append(float(m.group(1)))
    base = times["torch.ao TorchScript"]
    print(f"BERT-base {args.layers}-layer, seq 128, batch {args.batch}, {args.threads} thread(s), "
          f"qplugin ISA {qplugin.cpu_isa()}, GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '-')}")
    print("| deployment (C++, qplugin_loader) | median ms per process | / torch.ao TorchScript |")
    print("|---|---|---|")
    for name, ts in times.items():
        ratio = ", ".join(f"{t / b:.2f}" for t, b in zip(ts, base))
        print(f"| {name} | {', '.join(f'{t:.1f}' for t in ts)} | {ratio} |")


if __name__ == "__main__":
    main()
