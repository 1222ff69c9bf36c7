# Deployment from C++ without Python: tools/cpp_loader (main.cpp, linked.cpp) built with g++
# against the installed torch, run on a demo-style model converted and scripted in Python; its
# output must be identical to Python's. Also the explicit registration function
# qplugin_register_all() (csrc/register.{h,cpp}) and its anchors in every registering file.
# Changes with: tools/cpp_loader/, csrc/register.{h,cpp}, qplugin/demo/model.py,
# docs/deployment.md (the documented build line is the one compiled here).
import copy
import ctypes
import glob
import os
import re
import shutil
import subprocess

import pytest
import torch

import qplugin
from qplugin.demo import data as demo_data
from qplugin.demo import model as demo_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOADER = os.path.join(ROOT, "tools", "cpp_loader")
CSRC = os.path.join(ROOT, "csrc")
CXX = os.environ.get("CXX", "g++")
# A TORCH_LIBRARY* block, or csrc/ops/quantized_cpu/registration.h's macro that opens two.
_REGISTERS = re.compile(r"^\s*(TORCH_LIBRARY(_FRAGMENT|_IMPL)?|QPLUGIN_IMPL_QUANTIZED_AND_CPU)\(",
                        re.M)


# ---------------------------------------------------------------------------------------------
# qplugin_register_all and its anchors (no compiler needed).


def _registration_units():
    """{unit: file} for every csrc file with a TORCH_LIBRARY* block, unit from its anchor."""
    units = {}
    for path in sorted(glob.glob(os.path.join(CSRC, "**", "*.cpp"), recursive=True)):
        with open(path) as f:
            src = f.read()
        if not _REGISTERS.search(src):
            continue
        anchors = re.findall(r"^QPLUGIN_REGISTRATION_ANCHOR\((\w+)\)", src, re.M)
        assert len(anchors) == 1, (
            f"{os.path.relpath(path, ROOT)} registers ops or classes but has {len(anchors)} "
            "QPLUGIN_REGISTRATION_ANCHOR lines (expected 1): static links would drop it")
        units[anchors[0]] = path
    return units


def test_every_registering_file_is_anchored_and_listed():
    units = _registration_units()
    assert len(units) >= 12 and "library" in units and "quantized_cpu_linear_kernel" in units
    with open(os.path.join(CSRC, "register.cpp")) as f:
        listed = re.findall(r"^\s*X\((\w+)\)", f.read(), re.M)
    assert sorted(listed) == sorted(units), (
        "csrc/register.cpp QPLUGIN_REGISTRATION_UNITS must list exactly the anchored files: "
        f"missing {sorted(set(units) - set(listed))}, stale {sorted(set(listed) - set(units))}")


def test_register_all_is_exported_and_counts_units():
    lib = ctypes.CDLL(qplugin.library_path())  # already loaded by import qplugin: same handle
    fn = lib.qplugin_register_all
    fn.restype = ctypes.c_int64
    assert fn() == len(_registration_units())
    assert fn() == len(_registration_units())  # idempotent


# ---------------------------------------------------------------------------------------------
# Building the loader (once per session) and the demo-style model.


def _torch_flags():
    from torch.utils import cpp_extension as ce
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    cflags = [f"-D_GLIBCXX_USE_CXX11_ABI={abi}"] + [f"-I{p}" for p in ce.include_paths()]
    libdirs = ce.library_paths()
    ldflags = [f for p in libdirs for f in (f"-L{p}", f"-Wl,-rpath,{p}")]
    # --no-as-needed: libtorch.so is a stub whose ops live in libtorch_cpu; keep both.
    ldflags += ["-Wl,--no-as-needed", "-ltorch", "-ltorch_cpu", "-lc10", "-Wl,--as-needed",
                "-ldl"]
    return cflags, ldflags


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)}\nexit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def _build_objects():
    """The object files of the in-place build (setup.py build_ext --inplace), if they are all
    there and newer than their sources; else None."""
    temps = glob.glob(os.path.join(ROOT, "build", "temp.*"))
    if len(temps) != 1:
        return None
    objs = glob.glob(os.path.join(temps[0], "**", "*.o"), recursive=True)
    srcs = glob.glob(os.path.join(CSRC, "**", "*.cpp"), recursive=True)
    by_rel = {}
    for o in objs:
        rel = os.path.relpath(o, temps[0])
        rel = re.sub(r"^isa_[a-z0-9]+/", "", rel)  # per-ISA objects (setup.py)
        by_rel[rel[:-2] + ".cpp"] = o
    for s in srcs:
        o = by_rel.get(os.path.relpath(s, ROOT))
        if o is None or os.path.getmtime(o) < os.path.getmtime(s):
            return None
    if len(by_rel) != len(srcs):
        return None
    return sorted(by_rel.values())


@pytest.fixture(scope="session")
def loader(tmp_path_factory):
    """{'dlopen': exe, 'linked': exe, 'static': exe or None}: main.cpp compiled once, then
    linked three ways."""
    if shutil.which(CXX) is None:
        pytest.skip(f"no C++ compiler ({CXX}) to build tools/cpp_loader")
    out = tmp_path_factory.mktemp("cpp_loader")
    cflags, ldflags = _torch_flags()
    common = ["-std=c++20", "-O1", "-g0", "-fPIC"]
    main_o, linked_o = str(out / "main.o"), str(out / "linked.o")
    _run([CXX, *common, *cflags, "-c", os.path.join(LOADER, "main.cpp"), "-o", main_o],
         timeout=600)
    _run([CXX, *common, f"-I{CSRC}", "-c", os.path.join(LOADER, "linked.cpp"), "-o", linked_o],
         timeout=60)
    exes = {}
    exes["dlopen"] = str(out / "qplugin_loader")
    _run([CXX, main_o, "-o", exes["dlopen"], *ldflags], timeout=300)
    # Linked with the shared op library (what a CMake target_link_libraries would do).
    lib = qplugin.library_path()
    exes["linked"] = str(out / "qplugin_loader_linked")
    _run([CXX, main_o, linked_o, "-o", exes["linked"], "-Wl,--no-as-needed", lib,
          f"-Wl,-rpath,{os.path.dirname(lib)}", *ldflags], timeout=300)
    # Linked with a static archive of the build's object files: only qplugin_register_all()
    # keeps the registration objects in (nothing else references them).
    objs = _build_objects()
    exes["static"] = None
    if objs is not None and shutil.which("ar"):
        archive = str(out / "libqplugin.a")
        _run(["ar", "rcs", archive, *objs], timeout=120)
        exes["static"] = str(out / "qplugin_loader_static")
        _run([CXX, main_o, linked_o, "-o", exes["static"], archive, "-fopenmp", *ldflags],
             timeout=300)
    return exes


def _fused_demo():
    """(DemoNet, channels-last, with BN statistics from data and fused, in eval mode; the
    data x [64, ...]), from seed 0."""
    torch.manual_seed(0)
    x, _ = demo_data.make_dataset(64, seed=3)
    model = demo_model.DemoNet().to(memory_format=torch.channels_last)
    model.train()
    with torch.no_grad():
        model(x)  # BN running statistics from data, so the folded weights are not trivial
    demo_model.fuse(model.eval())
    return model, x


@pytest.fixture(scope="session")
def demo_files(tmp_path_factory):
    """(model.pt, input.pt, Python's output) for a demo-style model: DemoNet with BN statistics
    from data, fused, calibrated, converted with qplugin, scripted and saved."""
    out = tmp_path_factory.mktemp("cpp_model")
    prepared, x = _fused_demo()
    prepared.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    torch.ao.quantization.prepare(
        prepared, inplace=True,
        allow_list=qplugin.quantization.get_default_qconfig_propagation_list())
    with torch.no_grad():
        prepared(x)
    scripted = torch.jit.script(qplugin.quantization.convert(prepared))
    model_path, input_path = str(out / "model.pt"), str(out / "input.pt")
    torch.jit.save(scripted, model_path)
    inp = x[:5].contiguous(memory_format=torch.channels_last)
    torch.save(inp, input_path)
    with torch.no_grad():
        expected = torch.jit.load(model_path)(inp)
    return model_path, input_path, expected


def _run_loader(exe, args, tmp_path):
    output = str(tmp_path / "out.pt")
    r = subprocess.run([exe, *args, output], capture_output=True, text=True, timeout=120)
    return r, output


def _check_output(r, output, expected):
    assert r.returncode == 0, r.stdout + r.stderr
    assert "python libraries mapped: none" in r.stdout, r.stdout
    got = torch.load(output)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert torch.equal(got, expected), (got - expected).abs().max()


# ---------------------------------------------------------------------------------------------
# The runs.


def test_loader_has_no_python(loader):
    for kind, exe in loader.items():
        if exe is None:
            continue
        out = _run(["ldd", exe]).stdout if shutil.which("ldd") else ""
        assert "libtorch_cpu" in out or not out, out
        assert not re.search(r"libpython|libtorch_python", out), f"{kind}: {out}"


def test_dlopen_loader_matches_python(loader, demo_files, tmp_path):
    model, inp, expected = demo_files
    r, output = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--threads", "1",
                                               model, inp], tmp_path)
    _check_output(r, output, expected)
    assert f"qplugin: loaded {qplugin.library_path()}" in r.stdout
    assert f"kernel ISA {torch.ops.qplugin._cpu_isa()}" in r.stdout


def test_dlopen_loader_finds_library_next_to_model(loader, demo_files, tmp_path):
    model, inp, expected = demo_files
    for name in ("model.pt", "input.pt"):
        os.symlink({"model.pt": model, "input.pt": inp}[name], tmp_path / name)
    lib = tmp_path / os.path.basename(qplugin.library_path())
    os.symlink(qplugin.library_path(), lib)
    r, output = _run_loader(loader["dlopen"], [str(tmp_path / "model.pt"),
                                               str(tmp_path / "input.pt")], tmp_path)
    _check_output(r, output, expected)
    assert f"qplugin: loaded {lib}" in r.stdout


def test_linked_loader_matches_python(loader, demo_files, tmp_path):
    model, inp, expected = demo_files
    r, output = _run_loader(loader["linked"], [model, inp], tmp_path)
    _check_output(r, output, expected)
    n = len(_registration_units())
    assert f"qplugin: linked in; qplugin_register_all() found {n} registration units" in r.stdout


def test_static_loader_matches_python(loader, demo_files, tmp_path):
    if loader["static"] is None:
        pytest.skip("no up-to-date object files of an in-place build (build/temp.*) to archive")
    model, inp, expected = demo_files
    r, output = _run_loader(loader["static"], [model, inp], tmp_path)
    _check_output(r, output, expected)
    n = len(_registration_units())
    assert f"qplugin: linked in; qplugin_register_all() found {n} registration units" in r.stdout
    # Statically linked: the op library is not loaded as a separate file.
    out = _run(["ldd", loader["static"]]).stdout if shutil.which("ldd") else ""
    assert "_C.abi3.so" not in out


def test_loader_errors(loader, demo_files, tmp_path):
    model, inp, _ = demo_files
    # No library given, none next to the model.
    os.symlink(model, tmp_path / "model.pt")
    r, _ = _run_loader(loader["dlopen"], [str(tmp_path / "model.pt"), inp], tmp_path)
    assert r.returncode == 2 and "expected --lib PATH to qplugin's op library" in r.stderr
    # A library that is not one.
    r, _ = _run_loader(loader["dlopen"], ["--lib", inp, model, inp], tmp_path)
    assert r.returncode == 1 and "could not dlopen" in r.stderr
    # Input that is not a tensor.
    torch.save({"x": torch.zeros(1)}, tmp_path / "dict.pt")
    r, _ = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), model,
                                          str(tmp_path / "dict.pt")], tmp_path)
    assert r.returncode == 2 and "expected INPUT to hold a tensor" in r.stderr, r.stderr
    # Missing input file.
    r, _ = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), model,
                                          str(tmp_path / "missing.pt")], tmp_path)
    assert r.returncode == 1 and "expected a readable file" in r.stderr
    # Wrong usage.
    r, _ = _run_loader(loader["dlopen"], [model], tmp_path)
    assert r.returncode == 2 and "usage: qplugin_loader" in r.stderr


# ---------------------------------------------------------------------------------------------
# --threads-run N: the same module from N std::threads at once, every output equal to the first.


def test_threads_run_concurrent_outputs_equal(loader, demo_files, tmp_path):
    model, inp, expected = demo_files
    r, output = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--threads", "2",
                                               "--threads-run", "4", model, inp], tmp_path)
    _check_output(r, output, expected)
    assert "threads-run: 4 threads x 8 runs: every output equals the first" in r.stdout, r.stdout


def test_threads_run_linked_loader(loader, demo_files, tmp_path):
    model, inp, expected = demo_files
    r, output = _run_loader(loader["linked"], ["--threads", "1", "--threads-run", "3", model, inp],
                            tmp_path)
    _check_output(r, output, expected)
    assert "threads-run: 3 threads x 8 runs: every output equals the first" in r.stdout, r.stdout


class _Noisy(torch.nn.Module):
    """Output differs on every call: what --threads-run must report."""

    def forward(self, x):
        return x + torch.rand_like(x)


def test_threads_run_reports_differing_outputs(loader, demo_files, tmp_path):
    _, inp, _ = demo_files
    noisy = str(tmp_path / "noisy.pt")
    torch.jit.save(torch.jit.script(_Noisy()), noisy)
    r, _ = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--threads-run", "2",
                                          noisy, inp], tmp_path)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "16 of 16 concurrent outputs differ from the first" in r.stderr, r.stderr


def test_threads_run_rejects_bad_count(loader, demo_files, tmp_path):
    model, inp, _ = demo_files
    r, _ = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--threads-run", "0",
                                          model, inp], tmp_path)
    assert r.returncode == 2 and "expected --threads-run N with N > 0, got 0" in r.stderr


# ---------------------------------------------------------------------------------------------
# --pt2: the demo model's PT2 form (qplugin.pt2.from_quantized), exported and packaged with
# AOTInductor, run by torch::inductor::AOTIModelPackageLoader with qplugin's library dlopen'ed
# first; no Python in the process, output identical to Python's (issue #15).


@pytest.fixture(scope="session")
def demo_pt2(demo_files, tmp_path_factory):
    """(model.pt2, input.pt, Python's output): the TorchScript fixture's model, in PT2 form."""
    model_path, input_path, expected = demo_files
    out = tmp_path_factory.mktemp("cpp_pt2")
    prepared, x = _fused_demo()
    prepared.qconfig = qplugin.quantization.get_default_qconfig("x86")
    qplugin.quantization.prepare(prepared, inplace=True)
    with torch.no_grad():
        prepared(x)
    qmodel = qplugin.quantization.convert(prepared)
    # The same converted model through the TorchScript door (for --compare-ts), and one whose
    # first conv has other weights (its output differs).
    same_ts, other_ts = str(out / "same.pt"), str(out / "other.pt")
    torch.jit.save(torch.jit.script(qmodel), same_ts)
    other = copy.deepcopy(qmodel)
    conv = next(m for m in other.modules() if isinstance(m, qplugin.nn.Conv2d))
    w = conv.weight()
    conv.set_weight_bias(torch._make_per_tensor_quantized_tensor(
        torch.flip(w.int_repr(), [0]), 0.05, 0), conv.bias())
    torch.jit.save(torch.jit.script(other), other_ts)
    pmodel = qplugin.pt2.from_quantized(qmodel)
    inp = torch.load(input_path)
    ep = torch.export.export(pmodel, (inp,), strict=False)
    pkg = torch._inductor.aoti_compile_and_package(ep, package_path=str(out / "model.pt2"))
    return pkg, input_path, pmodel(inp), same_ts, other_ts


def test_pt2_loader_matches_python(loader, demo_pt2, tmp_path):
    pkg, inp, expected, _, _ = demo_pt2
    r, output = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--threads", "1",
                                               "--bench", "3", "--pt2", pkg, inp], tmp_path)
    _check_output(r, output, expected)
    assert f"loaded AOTInductor package {pkg}" in r.stdout
    assert re.search(r"bench: 3 runs, median [0-9.e+-]+ ms", r.stdout), r.stdout


def test_pt2_loader_compare_ts(loader, demo_pt2, tmp_path):
    # --compare-ts: the TorchScript file of the same converted model and the .pt2 in one
    # process, interleaved; outputs must be equal (else exit 4).
    pkg, inp, expected, same_ts, other_ts = demo_pt2
    args = ["--lib", qplugin.library_path(), "--threads", "1", "--bench", "4"]
    r, output = _run_loader(loader["dlopen"], [*args, "--compare-ts", same_ts, "--pt2", pkg, inp],
                            tmp_path)
    _check_output(r, output, expected)
    assert re.search(r"compare: 4 rounds, torchscript median [0-9.e+-]+ ms, pt2 median "
                     r"[0-9.e+-]+ ms, pt2/torchscript [0-9.e+-]+", r.stdout), r.stdout
    r, _ = _run_loader(loader["dlopen"], [*args, "--compare-ts", other_ts, "--pt2", pkg, inp],
                       tmp_path)
    assert r.returncode == 4 and "expected the TorchScript model's output to equal" in r.stderr
    r, _ = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--compare-ts",
                                          same_ts, "--pt2", pkg, inp], tmp_path)
    assert r.returncode == 2 and "expected --compare-ts with --pt2 and --bench N" in r.stderr


def test_pt2_loader_errors(loader, demo_pt2, tmp_path):
    pkg, inp, _, _, _ = demo_pt2
    r, _ = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--pt2",
                                          str(tmp_path / "missing.pt2"), inp], tmp_path)
    assert r.returncode == 1 and "expected a readable .pt2 package" in r.stderr, r.stderr
    r, _ = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--threads-run", "2",
                                          "--pt2", pkg, inp], tmp_path)
    assert r.returncode == 2 and "expected no --threads-run with --pt2" in r.stderr
    r, _ = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--bench", "0",
                                          "--pt2", pkg, inp], tmp_path)
    assert r.returncode == 2 and "expected --bench N with N > 0, got 0" in r.stderr


# --pt2 with dynamic quantization (#17): a quantize_dynamic BERT-style encoder (int8 and float16
# weights) and a 2-layer LSTM, exported and packaged with AOTInductor; their packed weights are
# torchbind constants of the package, which the C++ process rebuilds through qplugin's
# registered classes. The C++ output must equal Python's run of the same package.

class _LSTMNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 24, num_layers=2)
        self.fc = torch.nn.Linear(24, 5)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


@pytest.fixture(scope="session")
def dynamic_pt2(tmp_path_factory):
    """[(name, model.pt2, input.pt, Python's output of the package)] for the dynamic models."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    from _models import Encoder
    out = tmp_path_factory.mktemp("cpp_dynamic_pt2")
    torch.manual_seed(0)
    cases = [("encoder_int8", Encoder().eval(), torch.qint8, torch.randn(2, 9, 64)),
             ("encoder_fp16", Encoder().eval(), torch.float16, torch.randn(2, 9, 64)),
             ("lstm_int8", _LSTMNet().eval(), torch.qint8, torch.randn(7, 3, 16))]
    res = []
    for name, f, dtype, x in cases:
        q = qplugin.quantization.quantize_dynamic(f, dtype=dtype)
        inp = str(out / f"{name}_input.pt")
        torch.save(x, inp)
        with torch.no_grad():
            ep = torch.export.export(q, (x,), strict=False)
            pkg = torch._inductor.aoti_compile_and_package(
                ep, package_path=str(out / f"{name}.pt2"))
            got = torch._inductor.aoti_load_package(pkg)(x)
            eager = q(x)
        # Inductor's float order for the fp32 parts (layer norm, softmax): within int8 error of
        # eager; the loader must reproduce the package's own output exactly.
        assert ((got - eager).norm() / eager.norm()).item() < 5e-3, name
        res.append((name, pkg, inp, got))
    return res


def test_pt2_loader_runs_dynamic_models(loader, dynamic_pt2, tmp_path):
    for name, pkg, inp, expected in dynamic_pt2:
        r, output = _run_loader(loader["dlopen"], ["--lib", qplugin.library_path(), "--threads",
                                                   "1", "--pt2", pkg, inp], tmp_path)
        _check_output(r, output, expected)
        assert f"loaded AOTInductor package {pkg}" in r.stdout, name
