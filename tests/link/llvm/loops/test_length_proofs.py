"""Length proofs (link/llvm/loops/lengths.py): fused loops skip the broadcast checks the graph proves needless and
take proven constant lengths as fixed, fully unrolled trip counts; the inputs' checks stay."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.fg import FunctionGraph
from graphjit.link.llvm import limits
from graphjit.link.llvm.driver import native_entry
from graphjit.link.llvm.loops.lengths import Lengths, broadcast, constant_length, covers
from tests.op_check import Case, arr, check_case

_SET_ERROR = re.compile(r'call void @"gj\.set_error"\(.*?\* %"[^"]+", i32 (\d+), i32 (\d+), i32 (-?\d+)')


def _entry(f) -> str:
    text = f.native.llvm_ir
    return re.search(r'define i32 @"gj_\w+_entry"\(.*?\n}\n', text, re.S).group(0)


def broadcast_checks(f) -> list[int]:
    """The toposort positions of the nodes whose broadcast check is emitted in f's native entry."""
    messages = f.native.messages
    return [int(node) for _, msg, node in _SET_ERROR.findall(_entry(f))
            if messages[int(msg)].startswith("shape mismatch: operands could not be broadcast")]


def _position(f, var_name: str) -> int:
    order = f.maker.fgraph.toposort()
    return next(k for k, n in enumerate(order) if n.outputs[0].name == var_name)


# ---------------------------------------------------------------- the terms

def test_terms_of_a_broadcast_cover_its_operands() -> None:
    x, y, z = gt.dvector("x"), gt.dvector("y"), gt.dvector("z")
    a = gt.exp(x) * y
    b = a * x
    c = a * z
    fg = FunctionGraph([x, y, z], [b, c], clone=False)
    lengths = Lengths(fg, fg.toposort())
    (tx,), (ty,), (tz,), (ta,) = (lengths.of(v) for v in (x, y, z, a))
    assert covers(ta, tx) and covers(ta, ty) and not covers(ta, tz) and not covers(tx, ta)
    assert lengths.of(b) == (ta,)                   # nothing new: a already covers x
    assert covers(lengths.of(c)[0], ta) and covers(lengths.of(c)[0], tz)


def test_static_lengths_and_new_axes_are_constants() -> None:
    x, y = gt.TensorType("float64", (8,))("x"), gt.dvector("y")
    s = (x + y).dimshuffle("x", 0)
    fg = FunctionGraph([x, y], [s.sum(axis=1)], clone=False)
    lengths = Lengths(fg, fg.toposort())
    one, eight = lengths.of(s)
    assert one == 1 and constant_length(eight) == 8 and covers(eight, lengths.of(y)[0])
    assert lengths.of(fg.outputs[0]) == (1,)


def test_lengths_infer_shape_passes_through_are_proofs() -> None:
    from graphjit.tensor.special import softmax
    x, w = gt.dmatrix("x"), gt.dmatrix("w")
    h = gt.dot(x, w)
    s = softmax(h)
    t = x[1:]                                           # the slice's length is arithmetic: nothing proven
    fg = FunctionGraph([x, w], [s * h, t], clone=False)
    lengths = Lengths(fg, fg.toposort())
    assert lengths.of(h) == (lengths.of(x)[0], lengths.of(w)[1])
    assert lengths.of(s) == lengths.of(h)
    assert lengths.of(t)[0] != lengths.of(x)[0] and lengths.of(t)[1] != lengths.of(x)[1]


def test_softmax_times_its_input_checks_nothing() -> None:
    from graphjit.tensor.special import softmax
    x, w = gt.dmatrix("x"), gt.dmatrix("w")
    h = gt.dot(x, w)
    out = softmax(h) * h + gt.tanh(h)
    f = gj.function([x, w], out)
    assert broadcast_checks(f) == []
    xs, ws = np.random.default_rng(0).normal(size=(3, 4)), np.random.default_rng(1).normal(size=(4, 5))
    hs = xs @ ws
    e = np.exp(hs - hs.max(axis=1, keepdims=True))
    np.testing.assert_allclose(f(xs, ws), e / e.sum(axis=1, keepdims=True) * hs + np.tanh(hs), rtol=1e-12)
    with pytest.raises(ValueError):
        f(xs, ws[:3])


def test_requested_lengths_are_their_values_terms() -> None:
    from graphjit.tensor.alloc import Alloc
    from graphjit.tensor.shape import Shape_i
    x, y = gt.dmatrix("x"), gt.dvector("y")
    n = gt.iscalar("n").astype("int64")
    a = Alloc()(gt.constant(0.0), Shape_i(0)(x), n)     # x's rows, then n
    b = Alloc()(gt.constant(1.0), n)
    c = x.shape[1]
    d = Alloc()(gt.constant(2.0), c)
    fg = FunctionGraph([x, y, n.owner.inputs[0]], [a, b, d], clone=False)
    lengths = Lengths(fg, fg.toposort())
    assert lengths.of(a)[0] == lengths.of(x)[0]
    assert lengths.of(a)[1] == lengths.of(b)[0] != lengths.of(y)[0]
    assert lengths.of(d)[0] == lengths.of(x)[1]


def test_broadcast_of_terms() -> None:
    assert broadcast([1, 1], "o") == 1
    assert broadcast([("in", 0, 0), 1], "o") == ("in", 0, 0)
    assert broadcast([("in", 0, 0), ("in", 0, 0)], "o") == ("in", 0, 0)
    assert constant_length(broadcast([8, ("in", 1, 0)], "o")) == 8
    assert broadcast([("in", k, 0) for k in range(40)], "opaque") == "opaque"


def test_outputs_of_python_fallback_nodes_prove_nothing() -> None:
    x = gt.TensorType("float64", (4,))("x")
    y = gt.exp(x)
    fg = FunctionGraph([x], [y], clone=False)
    trusted = Lengths(fg, fg.toposort())
    untrusted = Lengths(fg, fg.toposort(), untrusted=fg.toposort())
    assert trusted.of(y) == (4,)
    assert untrusted.of(y) != (4,) and not isinstance(untrusted.of(y)[0], int)


# ---------------------------------------------------------------- the emitted IR

def test_proven_operand_has_no_check_unproven_one_keeps_it() -> None:
    x, y, z = gt.dvector("x"), gt.dvector("y"), gt.dvector("z")
    a = gt.exp(x) * y
    a.name = "a"
    b = gt.sin(a) * x                       # x is one of the lengths a is the broadcast of: proven
    b.name = "b"
    c = gt.cos(a) * z                       # z is a new input: checked
    c.name = "c"
    f = gj.function([x, y, z], [a, b, c])
    checks = broadcast_checks(f)
    assert _position(f, "a") in checks      # two inputs: always checked
    assert _position(f, "b") not in checks
    assert _position(f, "c") in checks


def test_without_proofs_every_group_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "PROVE_LENGTHS", False)
    x, y = gt.dvector("x"), gt.dvector("y")
    a = gt.exp(x) * y
    a.name = "a"
    b = gt.sin(a) * x
    b.name = "b"
    f = gj.function([x, y], [a, b])
    assert _position(f, "b") in broadcast_checks(f)


def test_static_lengths_give_fixed_unrolled_kernels() -> None:
    x, y = gt.TensorType("float64", (8,))("x"), gt.dvector("y")
    a = gt.exp(x) * y                       # y is checked against 8; a's length is then the constant 8
    f = gj.function([x, y], [a, gt.sin(a) * y, (a * y).sum()])
    text = f.native.llvm_ir
    assert len(broadcast_checks(f)) == 1
    assert re.search(r'define i32 @"gj_\w+_k\.node\d+\.loop\.fixed"', text)
    assert re.search(r'define i32 @"gj_\w+_k\.node\d+\.loop\.reduce"', text)
    assert "llvm.loop.unroll.full" in text
    entry = _entry(f)
    assert "GOMP_parallel" not in entry and "icmp sge i64 8, 131072" not in entry
    xs, ys = np.linspace(0, 1, 8), np.linspace(1, 2, 8)
    got = f(xs, ys)
    want = np.exp(xs) * ys
    np.testing.assert_allclose(got[0], want)
    np.testing.assert_allclose(got[1], np.sin(want) * ys)
    np.testing.assert_allclose(got[2], (want * ys).sum())
    np.testing.assert_allclose(f(xs, ys[:1])[1], np.sin(np.exp(xs) * ys[0]) * ys[0])
    with pytest.raises(ValueError, match="could not be broadcast"):
        f(xs, ys[:3])


def test_unshaped_lengths_keep_a_runtime_trip_count() -> None:
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], gt.exp(x) * y)
    assert "llvm.loop.unroll.full" not in f.native.llvm_ir
    assert ".loop.fixed" not in f.native.llvm_ir


# ---------------------------------------------------------------- behaviour

def _chain(x, y):
    a = gt.exp(x) * y
    return [a * x + gt.sin(a) * y, (a * y).sum(axis=-1)]


def _chain_ref(x, y):
    a = np.exp(x) * y
    return [a * x + np.sin(a) * y, (a * y).sum(axis=-1)]


CASES = [
    Case("chain", _chain, _chain_ref, [arr((5,)), arr((5,))]),
    Case("chain-broadcast-first", _chain, _chain_ref, [arr((1,)), arr((5,))]),
    Case("chain-broadcast-second", _chain, _chain_ref, [arr((5,)), arr((1,))]),
    Case("chain-2d", _chain, _chain_ref, [arr((3, 4)), arr((1, 4))]),
    Case("chain-2d-rows", _chain, _chain_ref, [arr((3, 1)), arr((3, 4))]),
    Case("chain-static", _chain, _chain_ref, [arr((6,), static=True), arr((6,))], zero_size=False),
    Case("chain-static-broadcast", _chain, _chain_ref, [arr((6,), static=True), arr((1,))], zero_size=False),
    Case("chain-static-2d", _chain, _chain_ref, [arr((2, 3), static=True), arr((1, 3))], zero_size=False),
    Case("chain-mismatch", _chain, _chain_ref, [arr((5,)), arr((4,))]),
    Case("chain-static-mismatch", _chain, _chain_ref, [arr((6,), static=True), arr((4,))], zero_size=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_proven_chains_agree_with_numpy(case: Case) -> None:
    check_case(case)


def test_mismatched_inputs_still_name_the_node() -> None:
    x, y = gt.dvector("x"), gt.dvector("y")
    out = _chain(x, y)
    f = gj.function([x, y], out)
    with pytest.raises(ValueError, match=r"shape mismatch.*lengths 5 and 4"):
        f(np.ones(5), np.ones(4))


def test_eight_schools_value_and_gradient() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "benchmarks"))
    try:
        import w8_eight_schools as w8
    finally:
        sys.path.pop(0)
    for shape in [(10,), (None,)]:
        theta = gt.TensorType("float64", shape)("theta")
        lp = w8.model(gt, theta)
        f = gj.function([theta], [lp, gj.grad(lp, theta)])
        value, grad = f(w8.THETA.copy())
        want_value, want_grad = w8.reference()
        np.testing.assert_allclose(value, want_value, rtol=1e-12)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-14)
        with pytest.raises((TypeError, ValueError)):      # the static length, or the unshaped graph's own check
            f(np.ones(9))
    gj.gradient.verify_grad(lambda t: w8.model(gt, t), [w8.THETA.copy()], rng=np.random.default_rng(0))


def _many_groups(x, y):
    a = gt.exp(x) * y
    parts = [gt.sin(a) * x, gt.cos(a) * y, gt.tanh(a) + x, gt.sqrt(a * a) - y, gt.log1p(a * a) * x]
    shared = [p * 2.0 + a for p in parts]           # read twice below: materialised temporaries
    return [a] + [s * x for s in shared] + [s.sum() for s in shared]


def _many_groups_ref(x, y):
    a = np.exp(x) * y
    parts = [np.sin(a) * x, np.cos(a) * y, np.tanh(a) + x, np.sqrt(a * a) - y, np.log1p(a * a) * x]
    shared = [p * 2.0 + a for p in parts]
    return [a] + [s * x for s in shared] + [s.sum() for s in shared]


def _broadcast_messages(f) -> int:
    return sum(m.startswith("shape mismatch: operands could not be broadcast") for m in f.native.messages)


def test_compact_graph_checks_only_what_is_not_proven(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], _many_groups(x, y))
    assert "glue.ew." in f.native.llvm_ir                 # the shared drivers (loops/drivers.py) ran the groups
    assert _broadcast_messages(f) == 1                    # x against y; every later group is proven
    monkeypatch.setattr(limits, "PROVE_LENGTHS", False)
    g = gj.function([x, y], _many_groups(x, y))
    assert _broadcast_messages(g) > 5


@pytest.mark.parametrize("shapes", [((7,), (7,)), ((1,), (7,)), ((7,), (1,)), ((0,), (1,)), ((7,), (3,))],
                         ids=str)
def test_compact_graph_agrees_with_numpy(shapes: tuple) -> None:
    x, y = gt.dvector("x"), gt.dvector("y")
    rng = np.random.default_rng(1)
    xs, ys = rng.uniform(0.1, 1, shapes[0]), rng.uniform(0.1, 1, shapes[1])
    for mode in ("PY", "FAST_RUN", "FAST_COMPILE"):
        f = gj.function([x, y], _many_groups(x, y), mode=mode)
        if shapes == ((7,), (3,)):
            with pytest.raises(ValueError, match="could not be broadcast"):
                f(xs, ys)
            continue
        for got, want in zip(f(xs, ys[::-1]), _many_groups_ref(xs, ys[::-1])):
            np.testing.assert_allclose(got, want, rtol=1e-12)
