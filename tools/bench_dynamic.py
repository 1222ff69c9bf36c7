"""Dynamic-quantization benchmark (a benchmark, not a test): fp32 torch vs torch.ao's
quantize_dynamic vs qplugin.quantization.quantize_dynamic, same process, same inputs.

    python tools/bench_dynamic.py                      # BERT-base slice, LSTM, dynamic linear;
                                                       # batch 1/8 (BERT), 1/16 (LSTM); 1, 2 threads
    python tools/bench_dynamic.py --only bert --threads 1 --layers 12
    python tools/bench_dynamic.py --isa avx2           # qplugin's AVX2 tier (torch's AVX2 paths too)
    python tools/bench_dynamic.py --only bert --compile  # also all three under torch.compile

Models (random weights, nothing downloaded): a BERT-base encoder built from plain torch.nn
modules (hidden 768, 12 heads, FFN 3072, GELU, post-LayerNorm; --layers, default a 2-layer slice),
sequence 128, batch 1 and 8, and, when `transformers` imports, also its BertModel encoder of the
same size (BertConfig, SDPA attention); an LSTM (2 layers, input 256, hidden 512), sequence 50, batch 1 and
16, with int8 and with float16 weights. Plus one step of LSTMCell / GRUCell (256->512, batch 1 and 16, int8 and fp16 weights;
--only cells), a dynamic conv (64->64 3x3, 1x64x56x56; --only conv) and the dynamic linear op at M = 1, 32, 256 for 768->3072 and 4096->4096 (qplugin's
linear_dynamic vs torch.ops.quantized.linear_dynamic, both reduce_range=True as the modules;
and linear_dynamic_fp16 vs torch.ops.quantized.linear_dynamic_fp16 on the same weights).
When torchao imports (it installs from PyPI beside torch; the default environment does not have
it), the model rows also time torchao's `quantize_(model, Int8DynamicActivationInt8WeightConfig())`
-- PyTorch's recommended successor -- in the same interleaved rounds, eager and, with
--torchao-compile, under torch.compile as torchao recommends; a second table lists them (torchao
has no LSTM path: its quantize_ leaves nn.LSTM in fp32, so those rows say so).
Calls of the implementations are interleaved round by round (machine noise hits all alike);
medians. Ratio columns: qplugin / torch.ao and qplugin / fp32 (the issue-17 bars, 1 thread:
BERT batch 8 <= 0.85 and <= 0.5, batch 1 <= 1.0; LSTM <= 1.0 and <= 0.7; linear <= 1.0).
"""
import argparse
import copy
import os
import sys
import warnings

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "tools"))
sys.path.insert(0, os.path.join(_ROOT, "tests", "models"))

from _isa_env import apply_isa_from_argv  # noqa: E402

apply_isa_from_argv()  # before torch and qplugin load

import torch  # noqa: E402
from torch import nn  # noqa: E402

import qplugin  # noqa: E402
import qplugin.quantization as qq  # noqa: E402
from _models import EncoderBlock  # noqa: E402  (tests/models/_models.py)
from _timing import interleaved_medians  # noqa: E402  (tools/_timing.py)

warnings.filterwarnings("ignore")

try:
    import torch.ao.quantization as tq
    torch.backends.quantized.engine = "x86"
except ImportError:  # pragma: no cover
    tq = None


def bert(layers):
    torch.manual_seed(0)
    return nn.Sequential(*(EncoderBlock(768, 12, 3072) for _ in range(layers))).eval()


class HFBertEncoder(nn.Module):
    """transformers' BertModel encoder (random weights from BertConfig, nothing downloaded),
    returning the last hidden state: the BERT users run, SDPA attention by default."""

    def __init__(self, layers):
        super().__init__()
        from transformers import BertConfig, BertModel
        cfg = BertConfig(hidden_size=768, num_hidden_layers=layers, num_attention_heads=12,
                         intermediate_size=3072, attn_implementation="sdpa")
        self.enc = BertModel(cfg, add_pooling_layer=False).encoder

    def forward(self, x):
        return self.enc(x)[0]


def hf_bert(layers):
    """HFBertEncoder in eval mode, or None when transformers does not import."""
    try:
        import transformers
    except ImportError:
        return None, None
    torch.manual_seed(0)
    return HFBertEncoder(layers).eval(), transformers.__version__


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(256, 512, num_layers=2)

    def forward(self, x):
        return self.lstm(x)[0]


def lstm():
    torch.manual_seed(0)
    return LSTMNet().eval()


def _time(fns, min_time):
    return [t * 1e3 for t in interleaved_medians(fns, min_time)]  # ms


def _row(name, b, t, f32, a, q, diff):
    a_s = f"{a:.3f}" if a is not None else "n/a"
    r_ao = f"{q / a:.2f}" if a is not None else "n/a"
    f_s = f"{f32:.3f}" if f32 is not None else "-"
    r_f = f"{q / f32:.2f}" if f32 is not None else "-"
    print(f"| {name} | {b} | {t} | {f_s} | {a_s} | {q:.3f} | {r_ao} | {r_f} | {diff:.3g} |",
          flush=True)


TORCHAO_ROWS = []  # filled by bench_model when torchao imports; printed after the main table


def _torchao():
    """torchao's quantize_ and its int8 dynamic-activation config, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torchao
            from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_
    except Exception:  # not installed, or not loadable beside this torch
        return None
    return torchao.__version__, quantize_, Int8DynamicActivationInt8WeightConfig


def _torchao_model(fm, compile_it):
    """(model, note): fm quantized by torchao's int8 dynamic config (compiled if asked), or
    (None, reason) when torchao is missing or converts nothing (it has no LSTM path)."""
    tao = _torchao()
    if tao is None:
        return None, "torchao not installed"
    _, quantize_, cfg = tao
    m = copy.deepcopy(fm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_(m, cfg())
    if all(type(p) in (torch.Tensor, nn.Parameter) for p in m.parameters()):
        return None, "torchao converts nothing here (no LSTM path: nn.LSTM stays fp32)"
    return (torch.compile(m) if compile_it else m), None


def bench_model(name, fm, make_input, batches, threads, min_time, dtype=torch.qint8,
                torchao_compile=False, compiled=False):
    """One model's rows: fp32, torch.ao's and qplugin's quantize_dynamic of it (and torchao's
    when it imports), interleaved. compiled: all three under torch.compile (default inductor)
    instead -- qplugin's ops have fake kernels, so its model compiles whole around them."""
    ao = tq.quantize_dynamic(copy.deepcopy(fm), dtype=dtype) if tq is not None else None
    qp = qq.quantize_dynamic(copy.deepcopy(fm), dtype=dtype)
    if compiled:
        name += " [torch.compile, all three]"
        fm, qp = torch.compile(fm, dynamic=False), torch.compile(qp, dynamic=False)
        ao = torch.compile(ao, dynamic=False) if ao is not None else None
    taos = []  # (label, model) for torchao's int8 dynamic config, eager and compiled
    if dtype == torch.qint8 and not compiled and _torchao() is not None:
        for comp in ((False, True) if torchao_compile else (False,)):
            m, why = _torchao_model(fm, comp)
            if m is None:
                TORCHAO_ROWS.append(f"| {name} | - | - | - | n/a: {why} | - | - | - | - |")
                break
            taos.append(("torch.compile" if comp else "eager", m))
    for b in batches:
        x = make_input(b)
        with torch.no_grad():
            ref = qp(x)
            diff = ((ref - ao(x)).norm() / ao(x).norm()).item() if ao is not None else float("nan")
            f_ref = fm(x)
            t_diffs = [((m(x) - f_ref).norm() / f_ref.norm()).item() for _, m in taos]
            q_diff32 = ((ref - f_ref).norm() / f_ref.norm()).item()
        for t in threads:
            torch.set_num_threads(t)
            fns = [lambda: fm(x), (lambda: ao(x)) if ao is not None else (lambda: None),
                   lambda: qp(x)] + [(lambda m=m: m(x)) for _, m in taos]
            with torch.no_grad():
                f32, a, q, *ts = _time(fns, min_time)
            _row(name, b, t, f32, a if ao is not None else None, q, diff)
            for (label, _), tt, td in zip(taos, ts, t_diffs):
                TORCHAO_ROWS.append(f"| {name} | {b} | {t} | {label} | {tt:.3f} | {q:.3f} | "
                                    f"{q / tt:.2f} | {td:.3g} | {q_diff32:.3g} |")


def bench_linear(threads, min_time):
    for (k, n) in ((768, 3072), (4096, 4096)):
        g = torch.Generator().manual_seed(0)
        w = torch.randn(n, k, generator=g) * 0.05
        b = torch.randn(n, generator=g)
        scales = (w.abs().amax(1) / 127).double()
        qw = torch.quantize_per_channel(w, scales, torch.zeros(n, dtype=torch.long), 0,
                                        torch.qint8)
        pq = torch.ops.qplugin.linear_prepack(qw, b)
        pt = torch.ops.quantized.linear_prepack(qw, b) if tq is not None else None
        for m in (1, 32, 256):
            x = torch.randn(m, k, generator=g)
            yq = torch.ops.qplugin.linear_dynamic(x, pq, True)
            diff = float("nan")
            if pt is not None:
                diff = (yq - torch.ops.quantized.linear_dynamic(x, pt, True)).abs().max().item()
            for t in threads:
                torch.set_num_threads(t)
                fns = [lambda: torch.nn.functional.linear(x, w, b),
                       (lambda: torch.ops.quantized.linear_dynamic(x, pt, True)) if pt is not None
                       else (lambda: None),
                       lambda: torch.ops.qplugin.linear_dynamic(x, pq, True)]
                f32, a, q = _time(fns, min_time)
                _row(f"linear_dynamic {m}x{k}->{n}", m, t, f32, a if pt is not None else None,
                     q, diff)
        # float16 weights: linear_dynamic_fp16 (qplugin's fp16-weight GEMM vs fbgemm's).
        pq16 = torch.ops.qplugin.linear_prepack_fp16(w, b)
        pt16 = torch.ops.quantized.linear_prepack_fp16(w, b) if tq is not None else None
        for m in (1, 32, 256):
            x = torch.randn(m, k, generator=g)
            yq = torch.ops.qplugin.linear_dynamic_fp16(x, pq16)
            diff = float("nan")
            if pt16 is not None:
                diff = (yq - torch.ops.quantized.linear_dynamic_fp16(x, pt16)).abs().max().item()
            for t in threads:
                torch.set_num_threads(t)
                fns = [lambda: torch.nn.functional.linear(x, w, b),
                       (lambda: torch.ops.quantized.linear_dynamic_fp16(x, pt16))
                       if pt16 is not None else (lambda: None),
                       lambda: torch.ops.qplugin.linear_dynamic_fp16(x, pq16)]
                f32, a, q = _time(fns, min_time)
                _row(f"linear_dynamic_fp16 {m}x{k}->{n}", m, t, f32,
                     a if pt16 is not None else None, q, diff)


def bench_conv(threads, min_time):
    """Dynamic conv 64->64 3x3 pad 1 on 1x64x56x56 (ResNet stage 1): the modules torch.ao's
    and qplugin's from_float make from one float conv (default dynamic qconfig, reduce_range)."""
    from qplugin.nn import dynamic as qnnd
    torch.manual_seed(0)
    f = torch.nn.Conv2d(64, 64, 3, padding=1).eval()
    x = torch.randn(1, 64, 56, 56)
    qm = qq.quantize_dynamic(torch.nn.Sequential(copy.deepcopy(f)), {torch.nn.Conv2d},
                             mapping={torch.nn.Conv2d: qnnd.Conv2d})
    ao = None
    if tq is not None:
        import torch.ao.nn.quantized.dynamic as nnqd
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ao = tq.quantize_dynamic(torch.nn.Sequential(copy.deepcopy(f)), {torch.nn.Conv2d},
                                     mapping={torch.nn.Conv2d: nnqd.Conv2d})
    with torch.no_grad():
        yq = qm(x)
        diff = (yq - ao(x)).abs().max().item() if ao is not None else float("nan")
        for t in threads:
            torch.set_num_threads(t)
            fns = [lambda: f(x), (lambda: ao(x)) if ao is not None else (lambda: None),
                   lambda: qm(x)]
            f32, a, q = _time(fns, min_time)
            _row("conv2d_dynamic 64->64 3x3 56x56", 1, t, f32, a if ao is not None else None,
                 q, diff)


def bench_cells(threads, min_time):
    """One step of LSTMCell / GRUCell (input 256, hidden 512), batch 1 and 16, hx given: the
    modules torch.ao's and qplugin's quantize_dynamic make from one float cell, int8 weights
    (default dynamic qconfig, 7-bit activations) and float16 weights."""
    for kind in ("LSTMCell", "GRUCell"):
        torch.manual_seed(0)
        cls = getattr(nn, kind)
        f = cls(256, 512).eval()
        for dtype in (torch.qint8, torch.float16):
            qp = qq.quantize_dynamic(nn.Sequential(copy.deepcopy(f)), {cls}, dtype=dtype)[0]
            ao = None
            if tq is not None:
                ao = tq.quantize_dynamic(nn.Sequential(copy.deepcopy(f)), {cls}, dtype=dtype)[0]
            g = torch.Generator().manual_seed(3)
            for b in (1, 16):
                x = torch.randn(b, 256, generator=g)
                h = torch.randn(b, 512, generator=g) * 0.5
                hx = (h, torch.randn(b, 512, generator=g) * 0.5) if kind == "LSTMCell" else h
                with torch.no_grad():
                    diff = float("nan")
                    if ao is not None:
                        yq, ya = qp(x, hx), ao(x, hx)
                        yq, ya = (yq, ya) if kind == "LSTMCell" else ((yq,), (ya,))
                        diff = max((p - r).abs().max().item() for p, r in zip(yq, ya))
                    for t in threads:
                        torch.set_num_threads(t)
                        fns = [lambda: f(x, hx), (lambda: ao(x, hx)) if ao is not None
                               else (lambda: None), lambda: qp(x, hx)]
                        f32, a, q = _time(fns, min_time)
                        name = f"{kind} 256->512 {'int8' if dtype == torch.qint8 else 'fp16'}"
                        _row(name, b, t, f32, a if ao is not None else None, q, diff)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append",
                    choices=["bert", "lstm", "linear", "conv", "cells"])
    ap.add_argument("--threads", type=int, action="append")
    ap.add_argument("--layers", type=int, default=2, help="BERT encoder layers (12 = full)")
    ap.add_argument("--isa", default="auto", help="qplugin ISA tier (QPLUGIN_CPU_ISA)")
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds per case")
    ap.add_argument("--compile", action="store_true",
                    help="also run the BERT and LSTM rows with fp32, torch.ao and qplugin "
                         "models under torch.compile")
    ap.add_argument("--torchao-compile", action="store_true",
                    help="also time torchao's int8 dynamic model under torch.compile")
    args = ap.parse_args()
    which = args.only or ["bert", "lstm", "linear", "conv", "cells"]
    threads = args.threads or [1, 2]
    print(f"qplugin ISA: {qplugin.cpu_isa()}; torch {torch.__version__} CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}")
    print("| model | batch | threads | fp32 ms | torch.ao ms | qplugin ms | qplugin/torch.ao | "
          "qplugin/fp32 | diff vs torch.ao (rel. norm; linear, conv, cells: max abs) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for comp in ((False, True) if args.compile else (False,)):
        kw = dict(torchao_compile=args.torchao_compile, compiled=comp)
        if "bert" in which:
            g = torch.Generator().manual_seed(1)
            bench_model(f"BERT-base {args.layers}-layer, seq 128", bert(args.layers),
                        lambda b: torch.randn(b, 128, 768, generator=g), [1, 8], threads,
                        args.min_time, **kw)
            hf, ver = hf_bert(args.layers)
            if hf is not None:  # the "or transformers if installed": both when it is
                bench_model(f"BERT-base {args.layers}-layer, seq 128 (transformers {ver} "
                            "BertModel encoder, SDPA)", hf,
                            lambda b: torch.randn(b, 128, 768, generator=g), [1, 8], threads,
                            args.min_time, **kw)
        if "lstm" in which:
            g = torch.Generator().manual_seed(2)
            bench_model("LSTM 2x512 (in 256), seq 50", lstm(),
                        lambda b: torch.randn(50, b, 256, generator=g), [1, 16], threads,
                        args.min_time, **kw)
            bench_model("LSTM 2x512 (in 256), seq 50, fp16 weights", lstm(),
                        lambda b: torch.randn(50, b, 256, generator=g), [1, 16], threads,
                        args.min_time, dtype=torch.float16, compiled=comp)
    if "linear" in which:
        bench_linear(threads, args.min_time)
    if "conv" in which:
        bench_conv(threads, args.min_time)
    if "cells" in which:
        bench_cells(threads, args.min_time)
    tao = _torchao()
    if tao is None:
        print("\ntorchao: not installed (pip install torchao beside this torch to add its int8 "
              "dynamic config)")
    elif TORCHAO_ROWS:
        print(f"\ntorchao {tao[0]}: quantize_(model, Int8DynamicActivationInt8WeightConfig()), "
              "timed in the same rounds as the table above")
        print("| model | batch | threads | torchao mode | torchao ms | qplugin ms | "
              "qplugin/torchao | torchao diff vs fp32 (rel. norm) | qplugin diff vs fp32 |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in TORCHAO_ROWS:
            print(r)


if __name__ == "__main__":
    main()
