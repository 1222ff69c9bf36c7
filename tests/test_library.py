# The operator library itself: Python-free linkage (so tools/loader can dlopen it from C++), the
# ISA choice (QPLUGIN_CPU_ISA, _set_cpu_isa, _cpu_isa, qplugin.cpu_isa) and the build it loads.
# Changes with: setup.py (link flags), csrc/kernels/dispatch.cpp, csrc/ops/misc.cpp,
# qplugin/__init__.py, qplugin/_loader.py.
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest
import torch

import qplugin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ISAS = ("scalar", "avx2", "avx512vnni")
RANK = {name: i for i, name in enumerate(ISAS)}
LIB = qplugin.library_path()


# ---------------------------------------------------------------------------------------------
# Linkage, read from the ELF file itself (no tool needed) and cross-checked with binutils.


def _read_elf(path):
    """(DT_NEEDED entries, undefined dynamic symbols) of a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF", f"{path} is not an ELF file"
    assert data[4] == 2 and data[5] == 1, "expected a 64-bit little-endian ELF"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(shnum):
        (_name, sh_type, _flags, _addr, offset, size, link, _info, _align,
         entsize) = struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
        sections.append((sh_type, offset, size, link, entsize))

    def cstr(strtab, off):
        start = sections[strtab][1] + off
        return data[start:data.index(b"\0", start)].decode()

    needed, undefined = [], []
    for sh_type, offset, size, link, entsize in sections:
        if sh_type == 6:  # SHT_DYNAMIC: (d_tag, d_val) pairs
            for j in range(size // 16):
                tag, val = struct.unpack_from("<qQ", data, offset + 16 * j)
                if tag == 1:  # DT_NEEDED
                    needed.append(cstr(link, val))
        elif sh_type == 11:  # SHT_DYNSYM
            for j in range(1, size // entsize):
                name, _info, _other, shndx, _value, _size = struct.unpack_from(
                    "<IBBHQQ", data, offset + j * entsize)
                if shndx == 0 and name:  # SHN_UNDEF
                    undefined.append(cstr(link, name))
    return needed, undefined


NEEDED, UNDEFINED = _read_elf(LIB)
_PYTHON_LIB = re.compile(r"libtorch_python|libpython")
_PYTHON_SYMBOL = re.compile(r"^_?Py")


def test_elf_parse_is_sane():
    # The parser found the libraries an op library must link: it would otherwise pass vacuously.
    assert any(n.startswith("libc10") for n in NEEDED), NEEDED
    assert any(n.startswith("libtorch_cpu") or n == "libtorch.so" for n in NEEDED), NEEDED
    assert len(UNDEFINED) > 100


def test_does_not_link_python():
    assert not [n for n in NEEDED if _PYTHON_LIB.search(n)], NEEDED


def test_no_undefined_python_symbols():
    assert not [s for s in UNDEFINED if _PYTHON_SYMBOL.match(s)]


@pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils readelf not installed")
def test_readelf_agrees():
    out = subprocess.run(["readelf", "-d", LIB], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    assert needed == NEEDED
    assert not [n for n in needed if _PYTHON_LIB.search(n)], needed


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils nm not installed")
def test_nm_finds_no_undefined_python_symbols():
    out = subprocess.run(["nm", "-D", "--undefined-only", LIB], capture_output=True, text=True,
                         check=True).stdout
    symbols = [line.split()[-1] for line in out.splitlines() if line.strip()]
    assert symbols, "nm listed no undefined symbols"
    assert not [s for s in symbols if _PYTHON_SYMBOL.match(s)]


@pytest.mark.skipif(shutil.which("ldd") is None, reason="ldd not available")
def test_ldd_resolves_no_python_library():
    out = subprocess.run(["ldd", LIB], capture_output=True, text=True).stdout
    assert not _PYTHON_LIB.search(out), out


# ---------------------------------------------------------------------------------------------
# The build that is loaded.


def test_loads_the_in_place_build():
    assert os.path.realpath(LIB) == os.path.realpath(os.path.join(ROOT, "qplugin",
                                                                  os.path.basename(LIB)))
    assert os.path.dirname(os.path.realpath(qplugin.__file__)) == os.path.join(ROOT, "qplugin")


def test_built_against_running_torch():
    assert torch.ops.qplugin._build_torch_version() == torch.__version__.split("+")[0]


# ---------------------------------------------------------------------------------------------
# ISA selection in this process.


def test_cpu_isa_reports_the_choice():
    assert qplugin.cpu_isa() == torch.ops.qplugin._cpu_isa()
    assert torch.ops.qplugin._detected_cpu_isa() in ISAS
    assert qplugin.cpu_isa() in ISAS
    # QPLUGIN_CPU_ISA can only lower the detected ISA.
    assert RANK[qplugin.cpu_isa()] <= RANK[torch.ops.qplugin._detected_cpu_isa()]


@pytest.mark.parametrize("want", ISAS + ("auto",))
def test_set_cpu_isa_never_exceeds_detected(want):
    # On a CPU with every ISA this cannot request more than the hardware has; what it checks is
    # the rule: the result is min(request, ceiling), ceiling = detected lowered by QPLUGIN_CPU_ISA
    # (this process's starting ISA), never above the detected ISA.
    from conftest import SESSION_ISA as ceiling
    detected = torch.ops.qplugin._detected_cpu_isa()
    try:
        got = torch.ops.qplugin._set_cpu_isa(want)
        expected = ceiling if want == "auto" else ISAS[min(RANK[want], RANK[ceiling])]
        assert got == expected
        assert RANK[got] <= RANK[detected]
        assert torch.ops.qplugin._cpu_isa() == got
        assert qplugin.cpu_isa() == got
        assert torch.ops.qplugin._detected_cpu_isa() == detected  # detection is not a setting
    finally:
        torch.ops.qplugin._set_cpu_isa("auto")
    assert torch.ops.qplugin._cpu_isa() == ceiling


def test_set_cpu_isa_rejects_unknown_names():
    before = torch.ops.qplugin._cpu_isa()
    for bad in ("sse9", "AVX2", "", "avx512"):
        with pytest.raises(RuntimeError, match=r"qplugin::_set_cpu_isa: expected one of scalar, "
                                               r"avx2, avx512vnni, auto, got '" + bad + "'"):
            torch.ops.qplugin._set_cpu_isa(bad)
    assert torch.ops.qplugin._cpu_isa() == before


# ---------------------------------------------------------------------------------------------
# QPLUGIN_CPU_ISA, in fresh processes (it is read once per process). All cases start at once.

_PROBE = """
import os, sys
import torch, qplugin
{after_import}
print("ISA", torch.ops.qplugin._cpu_isa(), torch.ops.qplugin._detected_cpu_isa(), qplugin.cpu_isa())
print("SET", *(torch.ops.qplugin._set_cpu_isa(isa) for isa in ("avx512vnni", "avx2", "scalar")))
os.environ["QPLUGIN_CPU_ISA"] = "avx512vnni"  # read once: no effect any more
print("AUTO", torch.ops.qplugin._set_cpu_isa("auto"))
"""

_ENV_CASES = {
    # name: (QPLUGIN_CPU_ISA or None, code right after `import qplugin`). Four processes: each
    # spends seconds importing torch.
    "scalar": ("scalar", ""),
    "avx2": ("avx2", ""),
    "unknown": ("sse9", ""),
    "changed_after_import": (None, "os.environ['QPLUGIN_CPU_ISA'] = 'scalar'"),
}


@pytest.fixture(scope="module")
def env_runs():
    procs = {}
    for case, (value, after_import) in _ENV_CASES.items():
        env = dict(os.environ)
        env.pop("QPLUGIN_CPU_ISA", None)
        if value is not None:
            env["QPLUGIN_CPU_ISA"] = value
        code = _PROBE.format(root=ROOT, after_import=after_import)
        procs[case] = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=ROOT,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = {}
    for case, p in procs.items():
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"{case}: exit {p.returncode}\n{err}"
        isa, detected, via_python = re.search(r"^ISA (\S+) (\S+) (\S+)$", out, re.M).groups()
        assert via_python == isa
        runs[case] = {"isa": isa, "detected": detected, "stderr": err,
                      "set": re.search(r"^SET (.*)$", out, re.M).group(1).split(),
                      "auto": re.search(r"^AUTO (\S+)$", out, re.M).group(1)}
    return runs


def _lowered(value, detected):
    return ISAS[min(RANK[value], RANK[detected])]


@pytest.mark.parametrize("value", ("scalar", "avx2"))
def test_env_lowers_the_isa(env_runs, value):
    run = env_runs[value]
    assert run["isa"] == _lowered(value, run["detected"])
    assert RANK[run["isa"]] <= RANK[run["detected"]]  # may only lower
    assert "QPLUGIN_CPU_ISA" not in run["stderr"]


@pytest.mark.parametrize("value", ("scalar", "avx2"))
def test_env_is_a_ceiling_for_set_cpu_isa(env_runs, value):
    # _set_cpu_isa(avx512vnni, avx2, scalar) and then "auto": never above the variable's ISA,
    # and changing the variable inside the process afterwards changes nothing (read once).
    run = env_runs[value]
    ceiling = _lowered(value, run["detected"])
    assert run["set"] == [_lowered(w, ceiling) for w in ("avx512vnni", "avx2", "scalar")]
    assert run["auto"] == ceiling


def test_env_unknown_value_warns_and_is_ignored(env_runs):
    run = env_runs["unknown"]
    assert run["isa"] == run["detected"]
    assert "qplugin: ignoring QPLUGIN_CPU_ISA=sse9" in run["stderr"], run["stderr"]
    assert "expected scalar, avx2, avx512vnni or auto" in run["stderr"]
    assert run["set"] == [_lowered(w, run["detected"]) for w in ("avx512vnni", "avx2", "scalar")]
    assert run["auto"] == run["detected"]


def test_env_unset_or_auto_uses_detected():
    # This process: "auto" (or unset) means the detected ISA; set by the environment, it lowers.
    value = os.environ.get("QPLUGIN_CPU_ISA", "")
    from conftest import SESSION_ISA
    detected = torch.ops.qplugin._detected_cpu_isa()
    if value in ("", "auto"):
        assert SESSION_ISA == detected
    elif value in ISAS:
        assert SESSION_ISA == _lowered(value, detected)


# Regression: the variable used to be read lazily at the first ISA query / op call.
def test_env_read_at_load_not_at_first_call(env_runs):
    run = env_runs["changed_after_import"]
    assert run["isa"] == run["detected"]
