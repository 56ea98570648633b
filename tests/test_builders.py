"""OpFromGraph: values in every mode, shared variables, nesting, derivatives, shapes, pickling, the disk cache."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.builders import OpFromGraph
from graphjit.compile.mode import Mode
from graphjit.scalar import math as smath
from graphjit.scalar.basic import ScalarType, as_scalar
from op_check import OP_TEST_MODES, Case, arr, check_case, check_infer_shape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fma(x, y, z):
    """An OpFromGraph over inputs of x, y, z's types computing x + y * z, applied to them."""
    a, b, c = x.type(), y.type(), z.type()
    return OpFromGraph([a, b, c], a + b * c, name="fma")(x, y, z)


def _two(x, y):
    a, b = x.type(), y.type()
    return OpFromGraph([a, b], [gt.exp(a) - b, (a * b).sum()])(x, y)


def _nested(x, y):
    a, b = x.type(), y.type()
    inner = OpFromGraph([a, b], a * b)
    c, d = x.type(), y.type()
    outer = OpFromGraph([c, d], inner(c, d) + inner(c, c * 0 + 1))
    return outer(outer(x, y), y)


CASES = [
    Case("fma-broadcast", _fma, lambda x, y, z: x + y * z, [arr((3, 4)), arr((4,)), arr((3, 1))]),
    Case("two-outputs", _two, lambda x, y: [np.exp(x) - y, (x * y).sum()], [arr((3, 4)), arr((3, 4))]),
    Case("nested", _nested, lambda x, y: (x * y + x) * y + (x * y + x), [arr((2, 5)), arr((2, 5))]),
    Case("int", _fma, lambda x, y, z: x + y * z, [arr((4,)), arr((4,)), arr((4,))], dtypes=("int64",)),
    Case("bad-broadcast", _fma, lambda x, y, z: x + y * z, [arr((3,)), arr((4,)), arr((3,))],
         zero_size=False, layouts=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_opfromgraph_cases(case):
    check_case(case)


def _ops(f):
    return [type(n.op).__name__ for n in f.maker.fgraph.toposort()]


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_shared_variable_inside(mode):
    x = gt.dvector("x")
    w = gj.shared(np.array([1.0, 2.0]), name="w")
    op = OpFromGraph([x], (x * w).sum())
    assert op.shared_inputs == [w]
    y = gt.dvector("y")
    f = gj.function([y], op(y), mode=mode)
    assert f(np.array([3.0, 4.0])) == 11.0
    w.set_value(np.array([0.0, 1.0]))
    assert f(np.array([3.0, 4.0])) == 4.0
    assert ("OpFromGraph" in _ops(f)) == (mode == "PY")     # the LLVM modes compile its graph inline


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_inline_true_expands_in_every_mode(mode):
    x, y = gt.dmatrix("x"), gt.dmatrix("y")
    a, b = gt.dmatrix(), gt.dmatrix()
    op = OpFromGraph([a, b], gt.tanh(a) * b, inline=True)
    f = gj.function([x, y], op(x, y) + 1, mode=mode)
    assert "OpFromGraph" not in _ops(f)
    v = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(f(v, v), np.tanh(v) * v + 1)


def test_llvm_mode_excluding_the_inlining_calls_perform():
    from graphjit.link.llvm.ir.fallback import FallbackWarning
    x = gt.dvector("x")
    a = gt.dvector()
    op = OpFromGraph([a], a * 3)
    with pytest.warns(FallbackWarning):
        f = gj.function([x], op(x), mode=Mode(linker="llvm", rewriter="fast_run").excluding("inline_inner_graphs"))
    assert [type(n.op).__name__ for n in f.native.fallback_nodes] == ["OpFromGraph"]
    np.testing.assert_allclose(f(np.ones(2)), [3.0, 3.0])


# ------------------------------------------------------------------ derivatives

@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_verify_grad(mode):
    rng = np.random.default_rng(1)
    pt = [rng.uniform(0.5, 1.5, (2, 3)) for _ in range(3)]
    gj.verify_grad(lambda x, y, z: _fma(x, _fma(x, y, z), gt.sin(z)), pt, mode=mode)
    gj.verify_grad(lambda x, y: _nested(x, y), pt[:2], mode=mode)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_grad_through_shared_variable(mode):
    x = gt.dvector("x")
    w = gj.shared(np.array([1.0, 2.0]), name="w")
    op = OpFromGraph([x], (x * w ** 2).sum())
    y = gt.dvector("y")
    gy, gw = gj.grad(op(y), [y, w])
    f = gj.function([y], [gy, gw], mode=mode)
    got_y, got_w = f(np.array([3.0, 4.0]))
    np.testing.assert_allclose(got_y, [1.0, 4.0])
    np.testing.assert_allclose(got_w, [6.0, 16.0])


def test_grad_overrides():
    x = gt.dvector("x")
    a = gt.dvector()
    op = OpFromGraph([a], a ** 2, grad_overrides=lambda inputs, grads: [grads[0] * 100])
    f = gj.function([x], gj.grad(op(x).sum(), x), mode="PY")
    np.testing.assert_allclose(f(np.ones(2)), [100.0, 100.0])
    op2 = OpFromGraph([a], a ** 2, lop_overrides=lambda inputs, outputs, grads: [outputs[0] * grads[0]])
    f2 = gj.function([x], gj.grad(op2(x).sum(), x), mode="FAST_RUN")
    np.testing.assert_allclose(f2(np.array([2.0, 3.0])), [4.0, 9.0])
    with pytest.raises(ValueError, match="not both"):
        OpFromGraph([a], a, grad_overrides=lambda i, g: g, lop_overrides=lambda i, o, g: g)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_rop(mode):
    x, v = gt.dvector("x"), gt.dvector("v")
    a = gt.dvector()
    op = OpFromGraph([a], gt.sin(a) * a)
    f = gj.function([x, v], gj.Rop(op(x), x, v), mode=mode)
    p, w = np.array([0.3, 1.2]), np.array([1.0, -2.0])
    np.testing.assert_allclose(f(p, w), (np.cos(p) * p + np.sin(p)) * w)
    op2 = OpFromGraph([a], a * 2, rop_overrides=lambda inputs, points: [points[0] * 7])
    g = gj.function([x, v], gj.Rop(op2(x), x, v), mode="PY", on_unused_input="ignore")
    np.testing.assert_allclose(g(p, w), w * 7)


# ------------------------------------------------------------------ shapes, pickling, errors

def test_infer_shape():
    check_infer_shape(lambda x, y: _two(x, y), [arr((3, 4)), arr((3, 4))])
    check_infer_shape(lambda x, y, z: _fma(x, y, z), [arr((3, 1)), arr((4,)), arr((1, 4))])


def test_pickle_op_and_function():
    x, y, z = gt.dmatrices("x", "y", "z")
    a, b = gt.dmatrix("a"), gt.dmatrix("b")
    op = OpFromGraph([a, b], a - b, name="sub")
    again = pickle.loads(pickle.dumps(op))
    v = np.arange(4.0).reshape(2, 2)
    np.testing.assert_allclose(gj.function([x, y], again(x, y), mode="PY")(v, v * 2), -v)
    for mode in ("PY", "FAST_RUN"):
        f = gj.function([x, y, z], op(op(x, y), z), mode=mode)
        g = pickle.loads(pickle.dumps(f))
        np.testing.assert_allclose(g(v, v, v), -v)


def test_errors():
    x, y = gt.dvector("x"), gt.dvector("y")
    a = gt.dvector("a")
    op = OpFromGraph([a], a * 2)
    with pytest.raises(TypeError, match="takes 1 input"):
        op(x, y)
    with pytest.raises(TypeError, match="input 0"):
        op(gt.dmatrix("m"))
    with pytest.raises(ValueError, match="'y'.*not among the inputs"):
        OpFromGraph([a], a + y)
    with pytest.raises(TypeError, match="constant"):
        OpFromGraph([gt.constant(1.0)], a)


def test_exported_from_graphjit():
    assert gj.OpFromGraph is OpFromGraph


CHILD = """
import json, numpy as np, graphjit as gj, graphjit.tensor as gt
x, y = gt.dmatrix("x"), gt.dmatrix("y")
a, b = gt.dmatrix("a"), gt.dmatrix("b")
op = gj.OpFromGraph([a, b], gt.exp(a) * b + a)
f = gj.function([x, y], op(op(x, y), y))
t = f.native.timings
v = np.full((2, 2), 0.5)
want = np.exp(np.exp(v) * v + v) * v + (np.exp(v) * v + v)
print(json.dumps({"hit": bool(t.get("cache_hit") or t.get("plan_hit")), "ok": bool(np.allclose(f(v, v), want))}))
"""


def test_disk_cache_hit_in_a_new_process(tmp_path):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))
    results = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert results[0] == {"hit": False, "ok": True} and results[1] == {"hit": True, "ok": True}


def _built(c=2.0, fn=gt.exp, inline=False, name=None):
    x, y = gt.dvector("x"), gt.dvector("y")
    return OpFromGraph([x, y], [fn(x) * c + y], inline=inline, name=name)


def test_equality_by_structure():
    a, b = _built(), _built(name="other name")
    assert a == b and hash(a) == hash(b)                          # the name is documentation only
    assert a != _built(c=3.0) and a != _built(fn=gt.sin) and a != _built(inline=True)
    x, y = gt.dvector(), gt.dvector()
    assert a != OpFromGraph([x, y], [gt.exp(y) * 2.0 + x])        # the inputs' roles differ
    assert OpFromGraph([x, y], [x + y], grad_overrides=lambda i, g: g) != OpFromGraph([x, y], [x + y])
    big = np.arange(12.0)
    assert OpFromGraph([x], [x * big]) == OpFromGraph([x], [x * big.copy()])
    assert OpFromGraph([x], [x * big]) != OpFromGraph([x], [x * (big + 1)])
    s1, s2 = gj.shared(np.ones(3)), gj.shared(np.ones(3))
    assert OpFromGraph([x], [x + s1]) == OpFromGraph([x], [x + s1])
    assert OpFromGraph([x], [x + s1]) != OpFromGraph([x], [x + s2])   # another shared variable: other input
    nested = [OpFromGraph([x], [_built()(x, x)]) for _ in range(2)]
    assert nested[0] == nested[1]


def test_equality_sees_input_types_and_signed_zeros():
    x, y = gt.dvector(), gt.dvector()
    a = OpFromGraph([x, y], [x + y])
    f, g, m = gt.fvector(), gt.fvector(), gt.dmatrix()
    assert a != OpFromGraph([f, g], [f + g]) and a != OpFromGraph([m, y], [m + y])
    assert a != OpFromGraph([x, y, gt.dvector()], [x + y])        # one more (unused) input
    s = ScalarType("float64")()
    zero, negative_zero = (OpFromGraph([s], [smath.mul(s, as_scalar(np.float64(c)))]) for c in (0.0, -0.0))
    assert zero != negative_zero                                   # 0.0 == -0.0, but x * -0.0 is -0.0
    f = gj.function([s], [zero(s), negative_zero(s)], mode="PY")
    assert [np.signbit(r) for r in f(1.0)] == [False, True]


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_equal_ops_merge_in_every_mode(mode):
    x, y = gt.dvector("x"), gt.dvector("y")
    a, b, c = _built(), _built(name="b"), _built(c=3.0)
    count = lambda f: len(f.maker.fgraph.toposort())          # noqa: E731
    two = gj.function([x, y], a(x, y) * b(x, y), mode=mode)
    one = gj.function([x, y], a(x, y) * a(x, y), mode=mode)
    other = gj.function([x, y], a(x, y) * c(x, y), mode=mode)
    assert count(two) == count(one) < count(other)
    v, w = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    np.testing.assert_allclose(two(v, w), (np.exp(v) * 2 + w) ** 2)
    np.testing.assert_allclose(other(v, w), (np.exp(v) * 2 + w) * (np.exp(v) * 3 + w))
    if mode != "PY":                     # one graph after the rewrites: the second compile reuses the first's code
        assert one.native.memory_hit


def test_equal_ops_merge():
    x = gt.dvector("x")
    a, b, c = _built(), _built(), _built(c=3.0)
    f = gj.function([x], [a(x, x) + b(x, x), c(x, x)], mode="PY")
    assert sum(isinstance(n.op, OpFromGraph) for n in f.maker.fgraph.toposort()) == 2
    v = np.array([0.5, -1.0])
    r1, r2 = f(v)
    np.testing.assert_allclose(r1, 2 * (np.exp(v) * 2 + v))
    np.testing.assert_allclose(r2, np.exp(v) * 3 + v)
    again = pickle.loads(pickle.dumps(a))
    assert again == a and hash(again) == hash(a)
    np.testing.assert_allclose(gj.function([x], again(x, x), mode="PY")(v), np.exp(v) * 2 + v)
