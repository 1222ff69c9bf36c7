"""The main job, `python -m qplugin`: float model -> train -> calibrate -> convert with qplugin
(and with torch.ao, for comparison) -> accuracy / latency / size table -> TorchScript file.

torch.ao.quantization.convert and the torch.ao.nn.quantized modules (on PyTorch's x86 engine) are
called here only as the comparison baseline of the table; when PyTorch's quantized backend is
absent, that row says n/a and the job runs on. qplugin's path never touches them.
Changes with: qplugin/__main__.py (options), qplugin/demo/{data,model}.py, tests/test_main.py,
docs/deployment.md (the load instructions printed at the end).
"""
import copy
import importlib
import io
import os
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional

import torch
from torch import nn

import qplugin

from . import data as _data
from . import model as _model

__all__ = ["run", "interleaved_latency", "module_times"]

# The embedded default: sizes chosen so that the whole job takes about a minute on 2 cores.
TRAIN_IMAGES = 1536
TEST_IMAGES = 1000
BATCH = 64
CALIB_BATCHES = 4
LR = 5e-3


def _log(msg=""):
    print(msg, flush=True)


def _eval_batches(loader):
    """(input, target-or-None) pairs from a loader of inputs or (input, target) pairs."""
    for item in loader:
        if isinstance(item, (tuple, list)):
            yield item[0], (item[1] if len(item) > 1 else None)
        else:
            yield item, None


def accuracy(model: nn.Module, loader) -> Optional[float]:
    """Top-1 accuracy in percent over (input, target) batches; None without targets."""
    correct = total = 0
    with torch.inference_mode():
        for x, y in _eval_batches(loader):
            if y is None:
                return None
            correct += int((model(x).argmax(1) == y).sum())
            total += y.numel()
    return 100.0 * correct / total if total else None


def interleaved_latency(fns: Dict[str, Callable[[], object]], min_time: float = 0.5,
                        warmup: int = 3, max_rounds: int = 1000) -> Dict[str, float]:
    """Median wall time (s) of each fn, timed in interleaved rounds (one call of each per
    round) so that load changes on a shared machine hit all of them alike; >= 5 rounds and
    >= min_time s per fn."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: Dict[str, List[float]] = {k: [] for k in fns}
    start = time.perf_counter()
    rounds = 0
    while (rounds < 5 or time.perf_counter() - start < min_time * len(fns)) and \
            rounds < max_rounds:
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
        rounds += 1
    return {k: statistics.median(v) for k, v in times.items()}


def module_times(model: nn.Module, x: torch.Tensor, reps: int = 20) -> List[tuple]:
    """Per-leaf-module median forward time (s) over `reps` calls, measured with forward
    (pre-)hooks: [(name, class name, seconds)], slowest first, plus ('(whole model)', '', s)."""
    starts: Dict[str, float] = {}
    times: Dict[str, List[float]] = {}
    handles = []
    for name, mod in model.named_modules():
        if next(mod.children(), None) is not None:
            continue

        def pre(m, inp, name=name):
            starts[name] = time.perf_counter()

        def post(m, inp, out, name=name):
            times.setdefault(name, []).append(time.perf_counter() - starts[name])

        handles += [mod.register_forward_pre_hook(pre), mod.register_forward_hook(post)]
    whole = []
    try:
        with torch.inference_mode():
            for _ in range(3):
                model(x)
            times.clear()
            for _ in range(reps):
                t0 = time.perf_counter()
                model(x)
                whole.append(time.perf_counter() - t0)
    finally:
        for h in handles:
            h.remove()
    mods = dict(model.named_modules())
    rows = [(n, type(mods[n]).__name__, statistics.median(t)) for n, t in times.items()]
    rows.sort(key=lambda r: -r[2])
    return rows + [("(whole model, with hooks)", "", statistics.median(whole))]


def _state_dict_bytes(model: nn.Module) -> int:
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    return buf.tell()


# ---------------------------------------------------------------------------------------------
# The embedded default: data, model, training.


def _default_factory(epochs: int, seed: int):
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    xtr, ytr = _data.make_dataset(TRAIN_IMAGES, seed=seed)
    xte, yte = _data.make_dataset(TEST_IMAGES, seed=seed + 1)
    _log(f"data: {len(_data.CLASSES)} classes of 64x64 RGB images generated procedurally "
         f"(seed {seed}): {TRAIN_IMAGES} train / {TEST_IMAGES} test "
         f"({time.perf_counter() - t0:.1f} s)")
    model = _model.DemoNet(len(_data.CLASSES)).to(memory_format=torch.channels_last)
    n_params = sum(p.numel() for p in model.parameters())
    _log(f"model: DemoNet, a ResNet-style CNN: {n_params / 1e3:.0f} k parameters, "
         f"{_model.macs_per_image(model) / 1e6:.1f} M multiply-adds per image")
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=1e-4)
    steps = epochs * ((TRAIN_IMAGES + BATCH - 1) // BATCH)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=steps,
                                                pct_start=0.2)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        t0 = time.perf_counter()
        loss_sum = correct = 0.0
        for x, y in _data.batches(xtr, ytr, BATCH, shuffle_seed=seed * 1000 + epoch):
            out = model(x)
            loss = loss_fn(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += float(loss) * y.numel()
            correct += int((out.argmax(1) == y).sum())
        _log(f"train epoch {epoch + 1}/{epochs}: loss {loss_sum / TRAIN_IMAGES:.3f}, "
             f"train accuracy {100 * correct / TRAIN_IMAGES:.1f}% "
             f"({time.perf_counter() - t0:.1f} s)")
    model.eval()
    _model.fuse(model)
    calib = list(_data.batches(xtr[:CALIB_BATCHES * BATCH], ytr[:CALIB_BATCHES * BATCH], BATCH))
    test = list(_data.batches(xte, yte, 100))
    return model, calib, test


def _user_factory(spec: str):
    """--model module:factory. The factory returns (model, calibration_loader) or
    (model, calibration_loader, eval_loader); see qplugin/__main__.py --help."""
    mod_name, sep, attr = spec.partition(":")
    if not sep or not mod_name or not attr:
        raise SystemExit(f"qplugin: --model: expected module:factory (e.g. mypkg.models:make), "
                         f"got {spec!r}")
    sys.path.insert(0, os.getcwd())
    try:
        factory = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as e:
        raise SystemExit(f"qplugin: --model {spec}: cannot import {attr} from {mod_name}: {e}")
    result = factory()
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3) or not isinstance(
            result[0], nn.Module):
        raise SystemExit(f"qplugin: --model {spec}: expected the factory to return (model, "
                         "calibration_loader) or (model, calibration_loader, eval_loader), got "
                         f"{type(result).__name__}")
    model, calib = result[0], list(result[1])
    test = list(result[2]) if len(result) == 3 else None
    if not calib:
        raise SystemExit(f"qplugin: --model {spec}: the calibration loader yielded nothing")
    model.eval()
    return model, calib, test


# ---------------------------------------------------------------------------------------------
# The job.


def _torch_ao_convert(prepared: nn.Module, sample: torch.Tensor):
    """torch.ao's own conversion on the x86 engine (the baseline), or (None, reason)."""
    try:
        torch.backends.quantized.engine = "x86"
        model = qplugin.quantization._migrate._torch_ao_convert(prepared)
        with torch.inference_mode():
            model(sample[:1])
        return model, None
    except Exception as e:  # the baseline is optional: any failure means "not available"
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:120]


def run(threads: int = 1, save: str = "qplugin_demo.pt", model_spec: Optional[str] = None,
        epochs: int = 2, seed: int = 0, profile: bool = False, pt2: bool = True) -> int:
    """The whole job; returns the exit status (1 only if the saved TorchScript model's output
    differs from the eager model's). The thread count is restored afterwards."""
    threads_before = torch.get_num_threads()
    try:
        return _run(threads, save, model_spec, epochs, seed, profile, pt2)
    finally:
        torch.set_num_threads(threads_before)


def _run(threads, save, model_spec, epochs, seed, profile, pt2):
    t_start = time.perf_counter()
    _log(f"qplugin {qplugin.__version__} (torch {torch.__version__}), kernel ISA "
         f"{qplugin.cpu_isa()}; " + ("" if model_spec else
                                     f"{torch.get_num_threads()} threads for training, ")
         + f"{threads} for latency" + ("" if not model_spec else " thread(s)"))
    if model_spec is None:
        float_model, calib, test = _default_factory(epochs, seed)
        name = "DemoNet"
    else:
        float_model, calib, test = _user_factory(model_spec)
        name = model_spec

    # Calibrate: qplugin's observers from the x86 default qconfig on every module qplugin
    # converts (qplugin.quantization.prepare; torch.ao is not needed).
    t0 = time.perf_counter()
    prepared = copy.deepcopy(float_model)
    if getattr(prepared, "qconfig", None) is None:
        prepared.qconfig = qplugin.quantization.get_default_qconfig("x86")
    qplugin.quantization.prepare(prepared, inplace=True)
    with torch.inference_mode():
        for i, (x, _) in enumerate(_eval_batches(calib)):
            prepared(x)
            _log(f"calibrate: batch {i + 1}/{len(calib)}")
    _log(f"calibrated on {len(calib)} batches ({time.perf_counter() - t0:.1f} s)")

    sample = next(_eval_batches(calib))[0]
    t0 = time.perf_counter()
    qmodel = qplugin.quantization.convert(prepared)
    _log(f"converted with qplugin.quantization.convert ({time.perf_counter() - t0:.2f} s)")
    tao, tao_reason = _torch_ao_convert(prepared, sample)
    _log("converted with torch.ao.quantization.convert (x86 engine, the comparison baseline)"
         if tao is not None else f"torch.ao int8: not available here ({tao_reason})")

    models = [("fp32", float_model), ("torch.ao int8 (x86)", tao),
              ("qplugin int8", qmodel)]
    acc = {label: (accuracy(m, test) if m is not None and test is not None else None)
           for label, m in models}

    # Latency: eager modules under inference_mode, same inputs, same process, medians of
    # interleaved rounds.
    torch.set_num_threads(threads)
    fmt4 = {"memory_format": torch.channels_last} if sample.dim() == 4 else {}
    x1 = sample[:1].contiguous(**fmt4)
    xb = torch.cat([sample] * (32 // sample.shape[0] + 1))[:32].contiguous(**fmt4)
    present = [(label, m) for label, m in models if m is not None]
    with torch.inference_mode():
        b1 = interleaved_latency({label: (lambda m=m: m(x1)) for label, m in present}, 0.5)
        b32 = interleaved_latency({label: (lambda m=m: m(xb)) for label, m in present}, 1.0)
    lat = {label: (b1[label], b32[label]) for label, _ in present}
    size = {label: _state_dict_bytes(m) for label, m in models if m is not None}

    def fmt(v, f):
        return "n/a" if v is None else f.format(v)

    _log(f"\n{name}: accuracy on {'its test set' if test is not None else '- (no eval_loader)'};"
         f" latency: medians at {threads} thread(s), eager modules under torch.inference_mode,"
         " same inputs, interleaved rounds in this process")
    _log("| model | accuracy % | batch 1 ms | batch 32 ms | images/s (b32) | state_dict bytes |")
    _log("|---|---|---|---|---|---|")
    for label, _ in models:
        l1, l32 = lat.get(label, (None, None))
        _log(f"| {label} | {fmt(acc[label], '{:.1f}')} | {fmt(l1 and l1 * 1e3, '{:.3f}')} | "
             f"{fmt(l32 and l32 * 1e3, '{:.3f}')} | {fmt(l32 and 32 / l32, '{:.0f}')} | "
             f"{fmt(size.get(label), '{:,}')} |")

    # The bars of issue 9.
    # They are reported, not enforced: the exit status only fails on a broken pipeline.
    fp, ours, theirs = "fp32", "qplugin int8", "torch.ao int8 (x86)"
    ok = True
    _log("")
    if acc[fp] is not None:
        ok_acc = acc[fp] - acc[ours] <= 1.0
        _log(f"{'OK' if ok_acc else 'MISSED'}: qplugin int8 accuracy within 1 point of fp32 "
             f"({acc[ours]:.1f}% vs {acc[fp]:.1f}%)")
    missed = []
    for i, b in enumerate((1, 32)):
        r = lat[ours][i] / lat[fp][i]
        good = r <= 0.5
        line = f"batch {b}: qplugin/fp32 = {r:.2f}"
        if theirs in lat:
            rt = lat[ours][i] / lat[theirs][i]
            good &= rt <= 1.0
            line += f", qplugin/torch.ao = {rt:.2f}"
        if not good:
            missed.append((b, x1 if b == 1 else xb))
        _log(f"{'OK' if good else 'MISSED'}: {line} (bars: <= 0.5 and <= 1)")
    # Which module costs what, to find the op to fix when a bar is missed.
    for b, x in (missed or ([(1, x1), (32, xb)] if profile else [])):
        _log(f"\nper-module time at batch {b}, ms (medians with forward hooks; slowest first):")
        for label, m in models:
            if m is not None:
                rows = module_times(m, x, reps=20 if b == 1 else 8)
                _log(f"  {label}: " + ", ".join(f"{n} {c} {t * 1e3:.3f}" for n, c, t in rows[:8])
                     + f"; {rows[-1][0]} {rows[-1][2] * 1e3:.3f}")

    # Deploy: TorchScript.
    if save:
        scripted = torch.jit.script(qmodel)
        torch.jit.save(scripted, save)
        loaded = torch.jit.load(save)
        with torch.inference_mode():
            same = torch.equal(loaded(xb), qmodel(xb))
        ok &= same
        path = os.path.abspath(save)
        _log(f"\nsaved TorchScript: {path} ({os.path.getsize(save):,} bytes); reloaded, its "
             f"output is {'identical to' if same else 'DIFFERENT from'} the eager model's")
        _log("load it in Python:\n"
             "    import torch, qplugin   # importing qplugin registers torch.ops.qplugin\n"
             f"    m = torch.jit.load({save!r})\n"
             "    y = m(torch.randn(1, 3, 64, 64))" if model_spec is None else
             f"    m = torch.jit.load({save!r}); y = m(x)")
        _log("or from C++ without Python (docs/deployment.md):\n"
             f"    tools/cpp_loader/build.sh && tools/cpp_loader/qplugin_loader --lib "
             f"{qplugin.library_path()} {path} input.pt output.pt\n"
             "    (input.pt: torch.save(tensor, 'input.pt'); output.pt: read with torch.load)")
    if pt2:
        ok &= _pt2_rows(qmodel, x1, xb, save, threads, lat.get(ours))
    _log(f"\ndone in {time.perf_counter() - t_start:.0f} s")
    return 0 if ok else 1


def _pt2_rows(qmodel, x1, xb, save, threads, eager_lat) -> bool:
    """The PyTorch 2 door (issue #15): the model's PT2 form (qplugin.pt2.from_quantized) run
    eagerly, exported (torch.export, ep.module()), compiled (torch.compile, Inductor) and
    packaged with AOTInductor (.pt2 beside the TorchScript file, timed here through
    aoti_load_package, the runtime tools/cpp_loader --pt2 uses); every output must equal the
    TorchScript-door model's. Returns False if one differs."""
    t0 = time.perf_counter()
    pmodel = qplugin.pt2.from_quantized(qmodel)
    batch = torch.export.Dim("batch", min=1, max=4096)
    try:
        ep = torch.export.export(pmodel, (xb,), dynamic_shapes=({0: batch},), strict=False)
    except Exception as e:  # a model whose shape logic specializes the batch: static shapes
        _log(f"PT2: dynamic-batch export failed ({type(e).__name__}); exporting batch 32 "
             "and batch 1 separately")
        ep = None
    eps = {1: torch.export.export(pmodel, (x1,), strict=False) if ep is None else ep,
           32: torch.export.export(pmodel, (xb,), strict=False) if ep is None else ep}
    exported = {b: e.module() for b, e in eps.items()}
    try:  # Inductor imports torch.ao.quantization's pt2e decompositions (torch 2.13/2.14)
        importlib.import_module("torch._inductor.compile_fx")
        inductor = None
    except ImportError as e:
        inductor = f"{type(e).__name__}: {e}"
        _log(f"PT2: torch.compile and AOTInductor not available here ({inductor}); their rows "
             "are skipped")
    compiled = torch.compile(pmodel) if inductor is None else None
    # The same with Dynamo's per-call guards on the packed-params objects dropped
    # (qplugin.pt2.skip_packed_params_guards: safe while their shapes/config stay as compiled).
    compiled_ng = (torch.compile(pmodel, options={
        "guard_filter_fn": qplugin.pt2.skip_packed_params_guards}) if inductor is None else None)
    pkg = None
    if save and inductor is None:
        pkg = os.path.splitext(os.path.abspath(save))[0] + ".pt2"
        torch._inductor.aoti_compile_and_package(eps[32], package_path=pkg)
        aoti = torch._inductor.aoti_load_package(pkg)
    else:
        aoti = None
    ok = True
    with torch.inference_mode():
        for x in (x1, xb):
            want = qmodel(x)
            b = x.shape[0]
            runs = {"eager": pmodel(x), "exported": exported[b](x)}
            if compiled is not None:
                runs["compiled"] = compiled(x)
                runs["compiled, packed guards skipped"] = compiled_ng(x)
            if aoti is not None and (ep is not None or b == 32):
                runs["AOTI"] = aoti(x)
            bad = [k for k, v in runs.items() if not torch.equal(v, want)]
            ok &= not bad
            if bad:
                _log(f"PT2: batch {b}: output of {', '.join(bad)} DIFFERS from the TorchScript-"
                     "door model's")
    _log(f"\nPyTorch 2 door (qplugin.pt2.from_quantized; exported, compiled, AOTInductor "
         f"built in {time.perf_counter() - t0:.0f} s); outputs "
         f"{'identical to' if ok else 'DIFFERENT from'} the qplugin int8 model's; latency "
         f"medians at {threads} thread(s), interleaved rounds:")
    rows = {"qplugin int8 (TorchScript door, eager)": (lambda x: qmodel(x)),
            "PT2 eager (QTensor)": (lambda x: pmodel(x)),
            "PT2 exported (ep.module())": None}
    if compiled is not None:
        rows["PT2 torch.compile (Inductor)"] = (lambda x: compiled(x))
        rows["PT2 torch.compile, skip_packed_params_guards"] = (lambda x: compiled_ng(x))
    if aoti is not None:
        rows["PT2 AOTInductor (.pt2)"] = None
    lat = {}
    torch.set_num_threads(threads)
    with torch.inference_mode():
        for b, x in ((1, x1), (32, xb)):
            fns = {}
            for label, fn in rows.items():
                if label.startswith("PT2 exported"):
                    fns[label] = (lambda x=x, b=b: exported[b](x))
                elif label.startswith("PT2 AOTInductor"):
                    if ep is not None or b == 32:
                        fns[label] = (lambda x=x: aoti(x))
                else:
                    fns[label] = (lambda x=x, fn=fn: fn(x))
            for k, v in interleaved_latency(fns, 0.5 if b == 1 else 1.0).items():
                lat.setdefault(k, {})[b] = v
    _log("| model | batch 1 ms | batch 32 ms | images/s (b32) |")
    _log("|---|---|---|---|")
    for label in rows:
        l1, l32 = lat[label].get(1), lat[label].get(32)
        _log(f"| {label} | {'n/a' if l1 is None else f'{l1 * 1e3:.3f}'} | "
             f"{l32 * 1e3:.3f} | {32 / l32:.0f} |")
    if pkg is not None:
        ok &= _cpp_rows(save, pkg, x1, xb, threads)
        _log(f"\nsaved AOTInductor package: {pkg} ({os.path.getsize(pkg):,} bytes); run it "
             "from C++ without Python:\n"
             f"    tools/cpp_loader/build.sh && tools/cpp_loader/qplugin_loader --lib "
             f"{qplugin.library_path()} --bench 20 --pt2 {pkg} input.pt output.pt")
    return ok


def _cpp_rows(save, pkg, x1, xb, threads) -> bool:
    """From C++ with no Python in the process: the saved TorchScript file and the .pt2 package
    timed interleaved in one tools/cpp_loader process (`--compare-ts`), batch 1 and 32. Needs the
    loader built (tools/cpp_loader/build.sh, a source checkout); else says how to get the rows.
    Returns False if the loader ran and the two outputs differed."""
    import re
    import subprocess
    import tempfile
    loader = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "tools", "cpp_loader", "qplugin_loader")
    if not os.path.exists(loader):
        _log("\nC++ rows (TorchScript file vs .pt2, no Python in the process): build the loader "
             "first (tools/cpp_loader/build.sh in a source checkout) and rerun")
        return True
    med = {}
    with tempfile.TemporaryDirectory() as d:
        for b, x, rounds in ((1, x1, 400), (32, xb, 60)):
            inp = os.path.join(d, f"in{b}.pt")
            torch.save(x.contiguous(), inp)
            r = subprocess.run([loader, "--lib", qplugin.library_path(), "--threads",
                                str(threads), "--bench", str(rounds), "--compare-ts",
                                os.path.abspath(save), "--pt2", pkg, inp,
                                os.path.join(d, "out.pt")], capture_output=True, text=True,
                               timeout=600)
            m = re.search(r"torchscript median ([0-9.e+-]+) ms, pt2 median ([0-9.e+-]+) ms",
                          r.stdout)
            if r.returncode != 0 or m is None:
                _log(f"C++ loader, batch {b}: FAILED (exit {r.returncode}): "
                     f"{(r.stderr or r.stdout).strip()[-300:]}")
                return False
            med[b] = (float(m.group(1)), float(m.group(2)))
    _log(f"\nFrom C++ (tools/cpp_loader, no Python in the process; outputs identical), "
         f"{threads} thread(s), medians of interleaved rounds in one process:")
    _log("| deployment | batch 1 ms | batch 32 ms |")
    _log("|---|---|---|")
    _log(f"| TorchScript ({os.path.basename(save)}) | {med[1][0]:.3f} | {med[32][0]:.3f} |")
    _log(f"| AOTInductor ({os.path.basename(pkg)}) | {med[1][1]:.3f} | {med[32][1]:.3f} |")
    return True
