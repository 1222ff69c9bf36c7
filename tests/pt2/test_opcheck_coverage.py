# torch.library.opcheck over every qplugin op that takes plain (non-quantized-dtype) tensors, with
# a coverage meta-test: CASES names the overload each case exercises, and
# test_every_plain_tensor_op_has_an_opcheck_case compares them with the live list of overloads
# (torch._C._jit_get_all_schemas(), so an op registered in csrc/ops/*.cpp without a case fails).
# Every live qplugin overload is exactly one of:
#   - covered here by at least one case (opcheck with all of _OPCHECK_DEFAULT_UTILS, or a subset
#     whose missing tests are named with the reason, and asserted to fail still);
#   - NOT_OPCHECKABLE (reason);
#   - a legacy-door op on quantized-dtype tensors: the legacy overload of a Route row
#     (qplugin/pt2/routes) or QUANTIZED_NO_ROUTE (reason). FakeTensor cannot make quantized
#     tensors in torch 2.13, so for them opcheck is the schema check (STYLE.md §8), in their own
#     tests; their PT2 form is their `.plain` overload, covered here;
#   - an op without any Tensor in its schema (_cpu_isa, ...): not a tensor op.
# The families' own tests (tests/pt2/test_plain_*.py, tests/dynamic, tests/embedding) run more
# layouts; the .plain cases here reuse their case lists and add test_autograd_registration, which
# they leave out, with float inputs made requires_grad so that it checks something.
# Changes with: csrc/ops/*.cpp (schemas), qplugin/pt2/fake/*.py, qplugin/_meta_dynamic.py.
import collections
import itertools

import pytest
import torch
from torch.library import _OPCHECK_DEFAULT_UTILS

import qplugin  # noqa: F401
import qplugin.pt2.fake  # noqa: F401  (fake kernels of the .plain and embedding ops)
from _plain_act_helpers import QDTYPES, all_routes, plain_call, qtensor
from _plain_pool_helpers import codes_in_layout

Q = torch.ops.qplugin
DEFAULT = tuple(_OPCHECK_DEFAULT_UTILS)  # schema, autograd_registration, faketensor, aot_dispatch

# One opcheck case: the overload it exercises (OpOverload), a builder of (args, kwargs), the
# opcheck tests it runs and, when that is not DEFAULT, why the others cannot apply.
Case = collections.namedtuple("Case", "id op make utils why")

_NO_FAKE_QUANTIZED_OUT = (
    "returns a quantized-dtype tensor (the unpacked qint8/quint8 weight): FakeTensor cannot make "
    "one in torch 2.13 ('quantized nyi in meta tensors' / no QuantizedMeta kernel of "
    "_empty_affine_quantized), and its CatchAll kernel runs for real under FakeTensorMode (see "
    "_NO_FAKE_CATCHALL), so the fake-tensor and AOT-dispatch tests cannot run; the op is called "
    "on packed weights outside traced graphs (conversion, state_dict)")
_NO_FAKE_CATCHALL = (
    "has a CatchAll kernel (its only argument is a packed object: no tensor to dispatch on), so "
    "under FakeTensorMode the real unpack runs and returns real tensors, and torch.library "
    "refuses a fake kernel beside it ('it has a CompositeImplicitAutograd kernel'): the "
    "fake-tensor and AOT-dispatch tests cannot run; unpack runs outside traced graphs")
_NO_FAKE_TORCHBIND_OUT = (
    "returns a torchbind packed-params object and has no fake kernel: prepacking runs eagerly at "
    "conversion, never inside a traced graph (the packed object is a graph input there, "
    "docs/pt2.md §2), so the fake-tensor and AOT-dispatch tests do not apply")


def _case(cid, op, make, utils=DEFAULT, why=None):
    return Case(cid, op, make, tuple(utils), why)


def _partial(cid, op, make, why):
    return _case(cid, op, make, ("test_schema", "test_autograd_registration"), why)


# ---------------------------------------------------------------------------------------------
# Builders.

def _g(seed):
    return torch.Generator().manual_seed(seed)


def _qw(shape, seed=0, per_channel=False):
    codes = torch.randint(-128, 128, shape, generator=_g(seed), dtype=torch.int8)
    if per_channel:
        sc = torch.rand(shape[0], generator=_g(seed + 1), dtype=torch.float64) * 0.01 + 0.001
        return torch._make_per_channel_quantized_tensor(codes, sc, torch.zeros(shape[0],
                                                        dtype=torch.long), 0)
    return torch._make_per_tensor_quantized_tensor(codes, 0.02, 0)


def _float_qparams_weight(rows, dim, dtype, seed=0):
    """A per-row quint8 / quint4x2 embedding weight with float qparams (embedding_bag_prepack)."""
    w = torch.randn(rows, dim, generator=_g(seed))
    lo, hi = w.amin(1), w.amax(1)
    qmax = 255 if dtype == torch.quint8 else 15
    s = ((hi - lo) / qmax).clamp_min(1e-6)
    return torch.quantize_per_channel(w, s.double(), (-lo / s).float(), 0, dtype)


def _float(*shape, seed=0):
    return torch.randn(*shape, generator=_g(seed))


# -- dynamic ops (float activations, packed int8 / fp16 weights) --

def _dynamic_cases():
    cases = []

    def lin(pc):
        return Q.linear_prepack(_qw((8, 16), 1, pc), _float(8, seed=2))

    fp16 = lambda: Q.linear_prepack_fp16(_float(8, 16, seed=3), _float(8, seed=4))  # noqa: E731
    for name in ("linear_dynamic", "linear_relu_dynamic"):
        for pc, rr in ((False, True), (True, False)):
            cases.append(_case(f"{name}-{'pc' if pc else 'pt'}-rr{int(rr)}",
                               getattr(Q, name).default,
                               lambda pc=pc, rr=rr: ((_float(3, 5, 16), lin(pc), rr), {})))
    for name in ("linear_dynamic_fp16", "linear_relu_dynamic_fp16"):
        cases.append(_case(name, getattr(Q, name).default,
                           lambda: ((_float(4, 16), fp16()), {})))

    # convs: (prepack, op, weight shape, input shape, prepack args after weight and bias)
    convs = [
        ("conv1d", (6, 3, 3), (2, 3, 11), ([1], [1], [1], 1)),
        ("conv2d", (4, 2, 3, 3), (2, 4, 6, 5), ([2, 1], [1, 1], [1, 1], 2)),
        ("conv3d", (3, 2, 2, 2, 2), (1, 2, 4, 4, 3), ([1, 1, 1], [0, 1, 0], [1, 1, 1], 1)),
        ("conv_transpose1d", (4, 3, 3), (2, 4, 6), ([2], [1], [1], [1], 1)),
        ("conv_transpose2d", (4, 3, 3, 3), (2, 4, 5, 4), ([2, 2], [1, 0], [0, 1], [1, 1], 1)),
        ("conv_transpose3d", (2, 3, 2, 2, 2), (1, 2, 3, 3, 2),
         ([2, 2, 2], [0, 0, 0], [0, 0, 0], [1, 1, 1], 1)),
    ]
    for name, wshape, xshape, pargs in convs:
        cout = wshape[1] * pargs[-1] if "transpose" in name else wshape[0]

        def make(name=name, wshape=wshape, xshape=xshape, pargs=pargs, cout=cout):
            w = getattr(Q, f"{name}_prepack")(_qw(wshape, 5), _float(cout, seed=6), *pargs)
            return (_float(*xshape, seed=7), w, False), {}
        cases.append(_case(name + "_dynamic", getattr(Q, f"{name}_dynamic").default, make))

    # RNN cells and layers
    ngates = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
    B, I, H = 3, 5, 4
    for kind, ng in ngates.items():
        def make(kind=kind, ng=ng):
            p_ih = Q.linear_prepack(_qw((ng * H, I), 8), _float(ng * H, seed=9))
            p_hh = Q.linear_prepack(_qw((ng * H, H), 10), _float(ng * H, seed=11))
            hx = ([_float(B, H, seed=12), _float(B, H, seed=13)] if kind == "lstm"
                  else _float(B, H, seed=12))
            b = _float(ng * H, seed=14)
            return (_float(B, I, seed=15), hx, p_ih, p_hh, b, b.clone()), {}
        cases.append(_case(f"{kind}_cell", getattr(Q, f"quantized_{kind}_cell_dynamic").default,
                           make))

    # The float16 cells (same arguments, LinearPackedParamsFp16 weights).
    for kind, ng in ngates.items():
        def make16(kind=kind, ng=ng):
            p_ih = Q.linear_prepack_fp16(_float(ng * H, I, seed=8), _float(ng * H, seed=9))
            p_hh = Q.linear_prepack_fp16(_float(ng * H, H, seed=10), _float(ng * H, seed=11))
            hx = ([_float(B, H, seed=12), _float(B, H, seed=13)] if kind == "lstm"
                  else _float(B, H, seed=12))
            b = _float(ng * H, seed=14)
            return (_float(B, I, seed=15), hx, p_ih, p_hh, b, b.clone()), {}
        cases.append(_case(f"{kind}_cell_fp16",
                           getattr(Q, f"quantized_{kind}_cell_dynamic_fp16").default, make16))

    # The stacked-layer ops over CellParams (2 layers, bidirectional; int8 and fp16 params).
    def cell_params(ng, in_size, fp16, seed):
        if fp16:
            return Q.make_quantized_cell_params_fp16(
                Q.linear_prepack_fp16(_float(ng * H, in_size, seed=seed), _float(ng * H)),
                Q.linear_prepack_fp16(_float(ng * H, H, seed=seed + 1), _float(ng * H)))
        return Q.make_quantized_cell_params_dynamic(
            Q.linear_prepack(_qw((ng * H, in_size), seed), _float(ng * H, seed=seed)),
            Q.linear_prepack(_qw((ng * H, H), seed + 1), _float(ng * H, seed=seed + 1)),
            _float(ng * H), _float(ng * H), True)

    def stacked(kind, data, mixed):
        ng = 4 if kind == "lstm" else 3
        params = [cell_params(ng, I if i < 2 else 2 * H, mixed and i % 2 == 0, 30 + 2 * i)
                  for i in range(4)]  # mixed: the forward directions fp16, the reverse int8
        h0 = _float(4, 2, H, seed=23)
        hx = [h0, _float(4, 2, H, seed=24)] if kind == "lstm" else h0
        if data:
            return (_float(6, I, seed=25), torch.tensor([2, 2, 1, 1]), hx, params, True, 2, 0.0,
                    False, True), {}
        return (_float(4, 2, I, seed=25), hx, params, True, 2, 0.0, False, True, False), {}

    for kind in ("lstm", "gru"):
        for data in (False, True):
            for mixed in (False, True):
                cases.append(_case(f"quantized_{kind}-{'data' if data else 'input'}"
                                   f"{'-mixed' if mixed else ''}",
                                   getattr(getattr(Q, f"quantized_{kind}"),
                                           "data" if data else "input"),
                                   lambda k=kind, d=data, f=mixed: stacked(k, d, f)))

    def layer(kind, packed_seq, half):
        ng = 4 if kind == "lstm" else 3
        if half:
            p_ih = Q.linear_prepack_fp16(_float(ng * H, I, seed=16), _float(ng * H, seed=17))
            p_hh = Q.linear_prepack_fp16(_float(ng * H, H, seed=18), _float(ng * H, seed=19))
        else:
            p_ih = Q.linear_prepack(_qw((ng * H, I), 16), _float(ng * H, seed=17))
            p_hh = Q.linear_prepack(_qw((ng * H, H), 18), _float(ng * H, seed=19))
        if packed_seq:
            xs, bs = _float(6, I, seed=20), torch.tensor([2, 2, 1, 1])
        else:
            xs, bs = _float(7, 2, I, seed=20), None
        h0 = _float(2, H, seed=21)
        states = (h0, _float(2, H, seed=22)) if kind == "lstm" else (h0,)
        # The fp16 layers have no reduce_range argument.
        return (xs, bs) + states + (p_ih, p_hh, packed_seq) + (() if half else (True,)), {}

    for kind in ("lstm", "gru"):
        for packed_seq in (False, True):
            for half in (False, True):
                sfx = "_fp16" if half else ""
                cases.append(_case(f"{kind}_layer{sfx}{'-packed' if packed_seq else ''}",
                                   getattr(Q, f"quantized_{kind}_layer_dynamic{sfx}").default,
                                   lambda kind=kind, p=packed_seq, f=half: layer(kind, p, f)))
    return cases


# -- packing ops that take plain float tensors or packed objects --

def _packing_cases():
    cases = [
        _partial("linear_prepack_fp16", Q.linear_prepack_fp16.default,
                 lambda: ((_float(8, 16), _float(8)), {}), _NO_FAKE_TORCHBIND_OUT),
        _partial("linear_prepack_fp16-nobias", Q.linear_prepack_fp16.default,
                 lambda: ((_float(8, 16), None), {}), _NO_FAKE_TORCHBIND_OUT),
        _partial("make_quantized_cell_params", Q.make_quantized_cell_params.default,
                 lambda: ((_float(8, 5), _float(8, 2, seed=1), _float(8, seed=2),
                           _float(8, seed=3)), {}), _NO_FAKE_TORCHBIND_OUT),
        _case("make_quantized_cell_params_dynamic", Q.make_quantized_cell_params_dynamic.default,
              lambda: ((Q.linear_prepack(_qw((8, 5)), _float(8)),
                        Q.linear_prepack(_qw((8, 2)), None), _float(8), _float(8), True), {}),
              ("test_schema", "test_autograd_registration", "test_faketensor"),
              "returns a torchbind CellParams: test_aot_dispatch_dynamic compares the outputs "
              "and has no comparison for a ScriptObject; the op has a CatchAll kernel (its only "
              "tensors are the unread bias arguments), which FakeTensorMode runs for real on the "
              "packed objects (test_faketensor passes); it runs at conversion, never traced"),
        _partial("linear_unpack_fp16", Q.linear_unpack_fp16.default,
                 lambda: ((Q.linear_prepack_fp16(_float(8, 16), _float(8)),), {}),
                 _NO_FAKE_CATCHALL),
        _partial("linear_unpack", Q.linear_unpack.default,
                 lambda: ((Q.linear_prepack(_qw((8, 16)), _float(8)),), {}),
                 _NO_FAKE_QUANTIZED_OUT),
        _partial("embedding_bag_unpack", Q.embedding_bag_unpack.default,
                 lambda: ((Q.embedding_bag_prepack(_float_qparams_weight(10, 8, torch.quint8)),),
                          {}), _NO_FAKE_QUANTIZED_OUT),
    ]
    for name, wshape, pargs in (("conv1d", (6, 3, 3), ([1], [1], [1], 1)),
                                ("conv2d", (4, 2, 3, 3), ([1, 1], [1, 1], [1, 1], 1)),
                                ("conv3d", (3, 2, 2, 2, 2), ([1, 1, 1], [0, 0, 0], [1, 1, 1], 1)),
                                ("conv_transpose1d", (4, 3, 3), ([2], [1], [1], [1], 1)),
                                ("conv_transpose2d", (4, 3, 3, 3), ([1, 1], [0, 0], [0, 0],
                                                                   [1, 1], 1)),
                                ("conv_transpose3d", (2, 3, 2, 2, 2), ([1, 1, 1], [0, 0, 0],
                                                                      [0, 0, 0], [1, 1, 1], 1))):
        def make(name=name, wshape=wshape, pargs=pargs):
            return (getattr(Q, f"{name}_prepack")(_qw(wshape, 2), None, *pargs),), {}
        cases.append(_partial(f"{name}_unpack", getattr(Q, f"{name}_unpack").default, make,
                              _NO_FAKE_QUANTIZED_OUT))
    return cases


# -- embedding ops (uint8 fused tables, float weights, int indices, EmbeddingPackedParams) --

def _embedding_cases():
    cases = []
    names = {8: "byte", 4: "4bit", 2: "2bit"}
    for bits, nm in names.items():
        prepack = getattr(Q, f"embedding_bag_{nm}_prepack").default
        pre_args = () if bits == 8 else (False, 200, 0.16)
        cases.append(_case(f"embedding_bag_{nm}_prepack", prepack,
                           lambda p=pre_args: ((_float(12, 16, seed=1),) + p, {})))
        if bits != 8:
            cases.append(_case(f"embedding_bag_{nm}_prepack-optimized", prepack,
                               lambda: ((_float(12, 16, seed=1), True, 50, 0.2), {})))
        shape = (3, 4, 8) if bits == 8 else (6, 8)  # byte takes any rank >= 2, n-bit 2-D
        cases.append(_case(f"embedding_bag_{nm}_prepack-fp16", prepack,
                           lambda p=pre_args, shape=shape: ((_float(*shape, seed=2).half(),) + p,
                                                            {})))
        cases.append(_case(f"embedding_bag_{nm}_unpack", getattr(Q, f"embedding_bag_{nm}_unpack")
                           .default, lambda prepack=prepack: ((prepack(_float(12, 16)),), {})))

        def rowwise(prepack=prepack, itype=torch.int64, **kw):
            idx = torch.randint(0, 20, (11,), generator=_g(bits)).to(itype)
            off = torch.tensor([0, 3, 3, 7], dtype=itype)
            return (prepack(_float(20, 16, seed=3)), idx), dict(offsets=off, **kw)
        op = getattr(Q, f"embedding_bag_{nm}_rowwise_offsets").default
        cases.append(_case(f"embedding_bag_{nm}_rowwise_offsets", op, rowwise))
        cases.append(_case(f"embedding_bag_{nm}_rowwise_offsets-mean-int32", op,
                           lambda r=rowwise: r(itype=torch.int32, mode=1)))
        cases.append(_case(f"embedding_bag_{nm}_rowwise_offsets-psw", op,
                           lambda r=rowwise: r(per_sample_weights=torch.rand(11, generator=_g(4)))))

    def packed(dtype):
        return Q.embedding_bag_prepack(_float_qparams_weight(10, 8, dtype, 5))

    idx = lambda: torch.tensor([1, 0, 9, 3, 3, 7], dtype=torch.int64)  # noqa: E731
    off = lambda: torch.tensor([0, 2, 2, 5], dtype=torch.int64)  # noqa: E731
    for bits, dtype in ((8, torch.quint8), (4, torch.quint4x2)):
        nm = names[bits]
        cases.append(_case(f"embedding_bag_{nm}", getattr(Q, f"embedding_bag_{nm}").default,
                           lambda d=dtype: ((packed(d), idx(), off()), {})))
        cases.append(_case(f"embedding_bag_{nm}-max-last", getattr(Q, f"embedding_bag_{nm}")
                           .default, lambda d=dtype: ((packed(d), idx(),
                                                       torch.tensor([0, 2, 6])),
                                                      dict(mode=2, include_last_offset=True))))
        cases.append(_case(f"embedding_{nm}", getattr(Q, f"embedding_{nm}").default,
                           lambda d=dtype: ((packed(d), idx().view(2, 3)), {})))
    return cases


# -- .plain overloads: the families' own case lists, one case per (overload, sample) --

def _plain_from_legacy(cid, legacy, args, kwargs=None):
    """A case of the .plain twin of legacy overload `legacy` on the legacy sample `args`."""
    route = {r.legacy: r for r in all_routes()}[legacy]

    def make():
        _, pargs, _, _, _ = plain_call(route, args, kwargs)
        return tuple(pargs), {}
    plain = _overload(route.plain)
    return _case(cid, plain, make)


def _overload(name):
    op, _, ov = name.partition(".")
    return getattr(getattr(Q, op), ov or "default")


def _plain_cases():
    import test_plain_activation as act
    import test_plain_batch_norm as bn
    import test_plain_conv_add as ca
    import test_plain_elementwise as ew
    import test_plain_linear_conv as lc
    import test_plain_matmul as mm
    import test_plain_normalization as nz
    import test_plain_pooling as pl
    import test_plain_quantize as qz
    import test_plain_upsample as up

    cases = []
    gen = _g(30)
    for op in act.OPS:
        for qd in QDTYPES:
            x = qtensor((2, 3, 4, 6), qd, gen)
            cases.append(_plain_from_legacy(f"{op}-{qd}", op, (x,) + act._cases(op, qd)[0]))
    cases.append(_plain_from_legacy("prelu", "prelu", (qtensor((2, 3, 4), torch.quint8, gen),
                                                       qtensor((3,), torch.qint8, gen), 0.05,
                                                       100)))
    for op, shapes in sorted(bn.OPS.items()):
        for shape in shapes[:1]:
            x = bn._xq(shape, torch.qint8, gen, "contiguous")
            cases.append(_plain_from_legacy(op, op, (x,) + bn._stats(gen) + (1e-5, 0.07, 1)))
    for i, (legacy, args) in enumerate(ew._opcheck_cases()):
        cases.append(_plain_from_legacy(f"{legacy}-{i}", legacy, args))
    for cid, op, args in lc._OPCHECK:
        cases.append(_case(cid, op, lambda args=args: (args, {})))
    for relu, pc, i, xl, al in ca._OPCHECK[::3]:
        def make(relu=relu, pc=pc, i=i, xl=xl, al=al):
            return tuple(ca._plain_args(i, relu, pc, xl, al)[1]), {}
        cases.append(_case(f"{ca.NAMES[relu]}-{i}", _overload(f"{ca.NAMES[relu]}.plain"), make))
    for i, (sa, sb) in enumerate(mm.CASES):
        (s_a, z_a), (s_b, z_b), (s, z) = mm.QPARAMS[torch.uint8]
        cases.append(_case(f"matmul-{i}", Q.matmul.plain,
                           lambda i=i, sa=sa, sb=sb, s_a=s_a, z_a=z_a, s_b=s_b, z_b=z_b, s=s, z=z:
                           ((mm._codes(sa, torch.uint8, i), s_a, z_a,
                             mm._codes(sb, torch.uint8, i + 1), s_b, z_b, s, z), {})))
    for op, shape, formats, mk in nz.CASES:
        cases.append(_case(f"{op}-{shape}", getattr(Q, op).plain,
                           lambda op=op, shape=shape, mk=mk: (
                               (nz.codes(shape, torch.uint8, gen=_g(7)), 0.1, 3)
                               + tuple(mk(_g(8))) + (1e-5, 0.05, 128), {})))
    for op, nd, shape, kw in pl.CASES:
        if shape == (1, 2, 200, 200):  # the big case: slow under opcheck, as there
            continue
        cases.append(_case(f"{op}-{shape}-{sorted(kw.items())}", getattr(Q, op).plain,
                           lambda shape=shape, kw=kw: (
                               (codes_in_layout(shape, torch.uint8, None, _g(9)), 0.1, 3),
                               dict(kw))))
    for op, nd, shape, args in up.CASES:
        cases.append(_case(f"{op}-{shape}-{args}", getattr(Q, op).plain,
                           lambda shape=shape, args=args: (
                               (codes_in_layout(shape, torch.int8, None, _g(10)), 0.2, -4) + args,
                               {})))
    for cid, op, args in qz.OPCHECK:
        cases.append(_case(cid, op, lambda args=args: (args, {})))
    return cases


CASES = _dynamic_cases() + _packing_cases() + _embedding_cases() + _plain_cases()

# Overloads taking plain tensors that no opcheck test can run on, with the reason.
NOT_OPCHECKABLE = {
    # (none today: every plain-tensor op runs at least test_schema and
    # test_autograd_registration; the ones that cannot run the fake-tensor tests say why in
    # their Case)
}

# Legacy-door overloads on quantized-dtype tensors that have no Route row (they are not run on
# the PT2 door, so they have no .plain twin), with the reason.
_OUT_VARIANT = ("out= variant of a legacy op on quantized tensors: PT2 graphs are functional, "
                "no .plain twin (docs/pt2.md §3)")
_DEPRECATED_CONV = ("deprecated legacy conv overload (stride/padding/... passed again besides "
                    "the packed weight) on a quint8 input: no .plain twin (docs/pt2.md §3)")
_QINT8_WEIGHT = ("prepacks a qint8 / quint8 / quint4x2 (quantized-dtype) weight tensor; "
                 "conversion runs it eagerly")
QUANTIZED_NO_ROUTE = {
    **{f"{op}{ov}": _OUT_VARIANT
       for op, ov in itertools.product(
           ("add", "add_relu", "mul", "mul_relu"), (".out", "_out", ".Scalar_out"))},
    **{f"{op}_out{ov}": _OUT_VARIANT
       for op, ov in itertools.product(
           ("add_scalar", "add_scalar_relu", "mul_scalar", "mul_scalar_relu"), ("", ".Tensor"))},
    "cat_out": _OUT_VARIANT,
    "cat_relu_out": _OUT_VARIANT,
    "conv2d": _DEPRECATED_CONV,
    "conv2d_relu": _DEPRECATED_CONV,
    "conv3d": _DEPRECATED_CONV,
    "conv3d_relu": _DEPRECATED_CONV,
    **{f"{c}_prepack": _QINT8_WEIGHT for c in ("conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                                "conv_transpose2d", "conv_transpose3d")},
    "linear_prepack": _QINT8_WEIGHT,
    "embedding_bag_prepack": _QINT8_WEIGHT,
}


def _live_overloads():
    """"op" / "op.overload" (qplugin:: omitted) -> schema, for every registered qplugin op."""
    out = {}
    for s in torch._C._jit_get_all_schemas():
        # "qplugin::_rt_*": test-only ops test_router.py defines from Python.
        if s.name.startswith("qplugin::") and not s.name.startswith("qplugin::_rt_"):
            out[s.name[len("qplugin::"):] + (f".{s.overload_name}" if s.overload_name else "")] = s
    return out


def _takes_or_returns_tensors(schema):
    return any("Tensor" in str(a.type) for a in list(schema.arguments) + list(schema.returns))


def _short(op):
    """OpOverload -> "op" / "op.overload" as _live_overloads names it."""
    name = op.name()[len("qplugin::"):]
    return name[:-len(".default")] if name.endswith(".default") else name


def _plain_tensor_ops():
    live = _live_overloads()
    routed = {r.legacy for r in all_routes()}
    return {name for name, s in live.items()
            if _takes_or_returns_tensors(s) and name not in routed
            and name not in QUANTIZED_NO_ROUTE}


# ---------------------------------------------------------------------------------------------
# The meta-tests.

def test_every_plain_tensor_op_has_an_opcheck_case():
    covered = {_short(c.op) for c in CASES}
    missing = sorted(_plain_tensor_ops() - covered - set(NOT_OPCHECKABLE))
    assert not missing, f"qplugin ops on plain tensors without an opcheck case: {missing}"


def test_coverage_tables_are_live_and_disjoint():
    live = _live_overloads()
    routed = {r.legacy for r in all_routes()}
    covered = {_short(c.op) for c in CASES}
    for table, names in (("CASES", covered), ("NOT_OPCHECKABLE", set(NOT_OPCHECKABLE)),
                         ("QUANTIZED_NO_ROUTE", set(QUANTIZED_NO_ROUTE)), ("routes", routed)):
        stale = sorted(names - set(live))
        assert not stale, f"{table} names overloads that are not registered: {stale}"
    # A case exercises a plain-tensor op, never a legacy one, and nothing is listed twice.
    assert not covered & (routed | set(QUANTIZED_NO_ROUTE)), sorted(
        covered & (routed | set(QUANTIZED_NO_ROUTE)))
    assert not covered & set(NOT_OPCHECKABLE), sorted(covered & set(NOT_OPCHECKABLE))
    assert not routed & set(QUANTIZED_NO_ROUTE), sorted(routed & set(QUANTIZED_NO_ROUTE))
    # Every PT2 overload (.plain / ._plain) is a plain-tensor op.
    plain = {n for n in live if n.endswith(".plain") or n.endswith("_plain")}
    assert plain <= _plain_tensor_ops()


def test_case_ids_unique_and_reasons_given():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    for c in CASES:
        assert set(c.utils) <= set(DEFAULT), c
        assert (c.utils == DEFAULT) == (c.why is None), (
            f"{c.id}: a case running fewer than the default opcheck tests must say why, and "
            f"only then")


def _with_grad(args, kwargs):
    """Float tensor inputs made requires_grad (copies), so that test_autograd_registration checks
    the op (it passes vacuously when no input requires grad)."""
    def g(v):
        if isinstance(v, torch.Tensor) and v.is_floating_point() and not v.is_quantized:
            return v.detach().clone().requires_grad_(True)
        if isinstance(v, (list, tuple)) and v and all(isinstance(t, torch.Tensor) for t in v):
            return type(v)(g(t) for t in v)
        return v
    return tuple(g(a) for a in args), {k: g(v) for k, v in kwargs.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_opcheck(case):
    args, kwargs = case.make()
    if "test_autograd_registration" in case.utils:
        args, kwargs = _with_grad(args, kwargs)
    res = torch.library.opcheck(case.op, args, kwargs, test_utils=case.utils,
                                raise_exception=False)
    assert res == {u: "SUCCESS" for u in case.utils}, res
    # The tests left out still fail (a fix shows up here, to widen the case).
    left_out = tuple(u for u in DEFAULT if u not in case.utils)
    if left_out:
        args, kwargs = case.make()
        res = torch.library.opcheck(case.op, args, kwargs, test_utils=left_out,
                                    raise_exception=False)
        assert all(v != "SUCCESS" for v in res.values()), (
            f"{case.id}: {res}; these now pass: run them (and drop the reason)")


_OBJECT_OUT = (Q.linear_prepack_fp16.default, Q.make_quantized_cell_params.default,
               Q.make_quantized_cell_params_dynamic.default)
_TENSOR_OUT = [c for c in CASES if c.op not in _OBJECT_OUT]  # the rest: tensors


@pytest.mark.parametrize("case", _TENSOR_OUT, ids=[c.id for c in _TENSOR_OUT])
def test_outputs_never_require_grad(case):
    # qplugin's ops are inference only: with float inputs requiring grad, under PyTorch's default
    # autograd fallback ("warn"), no output requires grad (common/non_differentiable.h), so no
    # backward runs through them with wrong or missing gradients, and AOT autograd builds no
    # joint graph around them.
    args, kwargs = _with_grad(*case.make())
    outs = case.op(*args, **kwargs)
    flat = [t for t in torch.utils._pytree.tree_leaves(outs) if isinstance(t, torch.Tensor)]
    assert flat and not any(t.requires_grad for t in flat), [t.requires_grad for t in flat]
