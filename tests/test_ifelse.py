"""ifelse: values, shapes and dtypes in every mode, laziness, gradients, rewrites, errors, the disk cache."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.ifelse import IfElse, ifelse
from op_check import OP_TEST_MODES, Case, arr, check_case, check_infer_shape, check_op_contract

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
YES, NO = arr((), values=1.0), arr((), values=0.0)


def _pick(c, then, other):
    return then() if np.asarray(c).item() else other()


def _cases():
    cases = []
    for label, cond in (("then", YES), ("else", NO)):
        cases += [
            Case(f"broadcast-{label}", lambda c, x, y: ifelse(c, gt.exp(x) * y, y - x),
                 lambda c, x, y: _pick(c, lambda: np.exp(x) * y, lambda: y - x),
                 [cond, arr((3, 4)), arr((4,))]),
            # output shape follows the branch: (3, 4) or (1, 4)
            Case(f"shapes-{label}", lambda c, x, y: ifelse(c, x * 2, (y * 3).dimshuffle("x", 0)),
                 lambda c, x, y: _pick(c, lambda: x * 2, lambda: (y * 3)[None, :]),
                 [cond, arr((3, 4)), arr((4,))]),
            Case(f"list-{label}", lambda c, x, y: ifelse(c, [x + 1, y.sum()], [x[::-1] - 1, y.max()]),
                 lambda c, x, y: _pick(c, lambda: [x + 1, y.sum()], lambda: [x[::-1] - 1, y.max()]),
                 [cond, arr((3, 4)), arr((4,))], zero_size=False),
            Case(f"nested-{label}", lambda c, x, y: ifelse(c, ifelse(x.sum() > 0, x, -x), ifelse(c + 1, y, x) * 2),
                 lambda c, x, y: _pick(c, lambda: x if x.sum() > 0 else -x, lambda: y * 2),
                 [cond, arr((3, 4)), arr((3, 4))]),
            # branch values that are inputs come back as copies (the inputs are checked unmodified)
            Case(f"inputs-{label}", lambda c, x, y: ifelse(c, x, y),
                 lambda c, x, y: _pick(c, lambda: x.copy(), lambda: y.copy()),
                 [cond, arr((2, 3)), arr((5,)[:0] + (2, 3))]),
            # numpy's dtype rule: float32 and float64 branches give float64
            Case(f"upcast-{label}", lambda c, x, y: ifelse(c, x, y),
                 lambda c, x, y: _pick(c, lambda: x.astype("float64"), lambda: y.astype("float64")),
                 [cond, arr((3,), dtype="float32"), arr((3,), dtype="float64")], dtypes=("float64",)),
            Case(f"int-branches-{label}", lambda c, x, y: ifelse(c, x * 2, y),
                 lambda c, x, y: _pick(c, lambda: x * 2, lambda: y.copy()),
                 [cond, arr((4,)), arr((4,))], dtypes=("int64", "int32")),
            # the taken branch fails as numpy does; the other's broadcasting error never happens
            Case(f"bad-shapes-taken-{label}", lambda c, x, y: ifelse(c, x + y, x - y),
                 lambda c, x, y: x + y, [cond, arr((3,)), arr((4,))], zero_size=False, layouts=False),
        ]
    cases += [
        Case("cond-int", lambda c, x: ifelse(c, x, -x), lambda c, x: x if c else -x,
             [arr((), dtype="int64", values=3), arr((3,))]),
        Case("cond-bool", lambda c, x: ifelse(c, x, -x), lambda c, x: x if c else -x,
             [arr((), dtype="bool", values=False), arr((3,))]),
        Case("cond-from-data", lambda x, y: ifelse(gt.lt(x.sum(), y.sum()), x, y),
             lambda x, y: (x if x.sum() < y.sum() else y).copy(), [arr((3, 2)), arr((3, 2))]),
        Case("untaken-error", lambda c, x, y: ifelse(c, x.sum(), (x + y).sum()),
             lambda c, x, y: x.sum(), [YES, arr((3,)), arr((4,))], zero_size=False, layouts=False),
    ]
    return cases


@pytest.mark.parametrize("case", _cases(), ids=str)
def test_ifelse_cases(case):
    check_case(case)


# ------------------------------------------------------------------ laziness

class Counting(Op):
    """x * 2, counting its perform calls (a Python op: a callback in the LLVM modes)."""

    __props__ = ()
    calls = 0

    def make_node(self, x):
        x = gt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, out):
        type(self).calls += 1
        out[0][0] = inputs[0] * 2


@pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")
@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_untaken_branch_never_runs_an_op(mode):
    c, x = gt.dscalar("c"), gt.dvector("x")
    f = gj.function([c, x], ifelse(c > 0, Counting()(x).sum() + 1, gt.sin(x).sum()), mode=mode)
    before = Counting.calls
    v = np.arange(3.0)
    assert f(-1.0, v) == pytest.approx(np.sin(v).sum())
    assert Counting.calls == before
    assert f(1.0, v) == pytest.approx(7.0)
    assert Counting.calls == before + 1


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_untaken_branch_costs_nothing(mode):
    """An n x n allocation (n = 1e7: 800 TB) and an out-of-range index in the branch not taken."""
    c, x, n = gt.dscalar("c"), gt.dvector("x"), gt.lscalar("n")
    huge = gt.sin(gt.alloc(x[0], n, n)).max()
    f = gj.function([c, x, n], ifelse(c > 0, (x * 2).sum(), huge + x[n]), mode=mode)
    assert "Alloc" in _ops(f)
    if mode != "PY":
        assert f.native.fallback_nodes == []
    assert f(1.0, np.ones(3), 10 ** 7) == 6.0
    assert f(-1.0, np.ones(3), 2) == pytest.approx(np.sin(1.0) + 1)
    with pytest.raises(IndexError):
        f(-1.0, np.ones(3), 3)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_nested_laziness(mode):
    c, d, x, n = gt.dscalar("c"), gt.dscalar("d"), gt.dvector("x"), gt.lscalar("n")
    z = ifelse(c > 0, ifelse(d > 0, x.sum(), gt.sin(gt.alloc(x[0], n, n)).max()),
               gt.cos(gt.alloc(x[1], n, n)).min() * 2)
    f = gj.function([c, d, x, n], z, mode=mode)
    assert f(1.0, 1.0, np.ones(4), 10 ** 7) == 4.0
    assert f(1.0, -1.0, np.ones(4), 3) == pytest.approx(np.sin(1.0))
    assert f(-1.0, 1.0, np.ones(4), 3) == pytest.approx(2 * np.cos(1.0))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_value_read_by_two_branches_is_eager(mode):
    """The documented limit: a value read outside one branch's region (here by a branch of each of two
    ifelse nodes) is computed before both, whichever branch is taken."""
    c, d, x, n = gt.dscalar("c"), gt.dscalar("d"), gt.dvector("x"), gt.lscalar("n")
    huge = gt.sin(gt.alloc(x[0], n, n)).max()
    f = gj.function([c, d, x, n], ifelse(c > 0, ifelse(d > 0, x.sum(), huge), huge * 2), mode=mode)
    assert f(1.0, -1.0, np.ones(4), 3) == pytest.approx(np.sin(1.0))
    with pytest.raises(MemoryError):
        f(1.0, 1.0, np.ones(4), 10 ** 7)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_shared_work_is_computed_once(mode):
    """A value both branches read is computed before the branch; each branch's own work only when taken."""
    c, x = gt.dscalar("c"), gt.dvector("x")
    common = gt.exp(x)
    f = gj.function([c, x], [ifelse(c > 0, common.sum(), common.max()), common * 2], mode=mode)
    v = np.array([0.0, 1.0])
    r = f(1.0, v)
    np.testing.assert_allclose(r[0], np.exp(v).sum())
    np.testing.assert_allclose(f(0.0, v)[0], np.exp(v).max())


# ------------------------------------------------------------------ gradients

@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("cond", [1.0, -1.0])
def test_verify_grad(mode, cond):
    rng = np.random.default_rng(0)
    pt = [rng.uniform(0.5, 1.5, (3, 2)), rng.uniform(0.5, 1.5, (2,))]

    def fn(x, y):
        c = gt.constant(cond)
        return ifelse(c > 0, gt.sin(x) * y, ifelse(c < 5, gt.exp(y) * x, x)) ** 2
    gj.verify_grad(fn, pt, mode=mode)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_grad_is_ifelse_of_grads(mode):
    c, x, y = gt.dscalar("c"), gt.dvector("x"), gt.dvector("y")
    z = ifelse(c > 0, (x * y).sum(), (x ** 2).sum() + c * x[0])      # c feeds the branch too
    gx, gy, gc = gj.grad(z, [x, y, c])
    f = gj.function([c, x, y], [gx, gy, gc], mode=mode)
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    for got, want in zip(f(1.0, a, b), [b, a, 0.0]):
        np.testing.assert_allclose(got, want)
    for got, want in zip(f(-1.0, a, b), [2 * a + [-1.0, 0.0], [0.0, 0.0], a[0]]):
        np.testing.assert_allclose(got, want)


def test_condition_has_no_gradient():
    c, x = gt.dscalar("c"), gt.dvector("x")
    z = ifelse(c > 0, x.sum(), x.max())
    with pytest.raises(gj.gradient.DisconnectedInputError):
        gj.grad(z, c)
    assert IfElse(1).connection_pattern(z.owner)[0] == [False]


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_rop(mode):
    c, x, v = gt.dscalar("c"), gt.dvector("x"), gt.dvector("v")
    z = ifelse(c > 0, x ** 2, gt.sin(x))
    f = gj.function([c, x, v], gj.Rop(z, x, v), mode=mode)
    a, w = np.array([0.5, 2.0]), np.array([1.0, 3.0])
    np.testing.assert_allclose(f(1.0, a, w), 2 * a * w)
    np.testing.assert_allclose(f(0.0, a, w), np.cos(a) * w)


# ------------------------------------------------------------------ shapes, rewrites, contract

@pytest.mark.parametrize("cond", [YES, NO], ids=["then", "else"])
def test_infer_shape(cond):
    check_infer_shape(lambda c, x, y: ifelse(c, [x * 2, x.sum(0)], [y.dimshuffle("x", 0), y[1:]]),
                      [cond, arr((3, 4)), arr((4,))])


def test_op_contract():
    check_op_contract(IfElse(2), lambda: [gt.dscalar(), gt.dvector(), gt.dmatrix(), gt.dvector(), gt.dmatrix()])
    assert IfElse(1) == IfElse(1, name="other") and IfElse(1) != IfElse(2)


def _ops(f):
    return [type(n.op).__name__ for n in f.maker.fgraph.toposort()]


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_constant_condition_folds(mode):
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], ifelse(1, x * 2, y), mode=mode, on_unused_input="ignore")
    assert "IfElse" not in _ops(f)
    np.testing.assert_allclose(f(np.ones(2), np.zeros(3)), [2.0, 2.0])
    g = gj.function([x, y], ifelse(gt.constant(0.0), x, y + 1), mode=mode, on_unused_input="ignore")
    assert "IfElse" not in _ops(g)


def test_equal_branches_fold():
    c, x = gt.dscalar("c"), gt.dvector("x")
    f = gj.function([c, x], ifelse(c, x * 2, x * 2), mode="PY", on_unused_input="ignore")
    assert "IfElse" not in _ops(f)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_lift_elemwise_into_branches(mode):
    c, a, b, x = gt.dscalar("c"), gt.dvector("a"), gt.dvector("b"), gt.dvector("x")
    z = ifelse(c > 0, a, b) * x + 1
    f = gj.function([c, a, b, x], z, mode=mode)
    if mode != "FAST_COMPILE":          # canonicalize is a fast_run phase
        last = f.maker.fgraph.outputs[0].owner
        assert isinstance(last.op, IfElse), _ops(f)
    va, vb, vx = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])
    np.testing.assert_allclose(f(1.0, va, vb, vx), va * vx + 1)
    np.testing.assert_allclose(f(0.0, va, vb, vx), vb * vx + 1)


def test_no_lift_when_the_ifelse_has_other_readers():
    c, a, b, x = gt.dscalar("c"), gt.dvector("a"), gt.dvector("b"), gt.dvector("x")
    o = ifelse(c > 0, gt.exp(a), gt.sin(b))
    f = gj.function([c, a, b, x], [o * x, o], mode="PY")
    assert sum(isinstance(n.op, IfElse) for n in f.maker.fgraph.toposort()) == 1


# ------------------------------------------------------------------ errors

def test_condition_must_be_a_scalar():
    x = gt.dvector("flags")
    with pytest.raises(TypeError, match="flags.*scalar"):
        ifelse(x, x, x)
    with pytest.raises(TypeError, match="dtype complex128"):
        ifelse(gt.zscalar("zc"), x, x)
    with pytest.raises(TypeError, match="condition"):
        ifelse("yes", x, x)


def test_branch_mismatches():
    c, x, m = gt.dscalar("c"), gt.dvector("x"), gt.dmatrix("m")
    with pytest.raises(TypeError, match="dimension"):
        ifelse(c, x, m)
    with pytest.raises(ValueError, match="as many"):
        ifelse(c, [x, x], [x])
    with pytest.raises(ValueError, match="as many"):
        ifelse(c, [x], x)
    with pytest.raises(TypeError, match="same dtype"):
        IfElse(1)(c, x, gt.fvector())


def test_python_number_branch_takes_the_other_dtype():
    c, x = gt.dscalar("c"), gt.fscalar("x")
    z = ifelse(c, x, 0.5)
    assert z.type.dtype == "float32"
    assert gj.function([c, x], z, mode="PY")(0.0, np.float32(2)) == np.float32(0.5)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_wrong_condition_value(mode):
    c, x = gt.dscalar("c"), gt.dvector("x")
    f = gj.function([c, x], ifelse(c, x, -x), mode=mode)
    with pytest.raises(TypeError):
        f(np.ones(2), np.ones(2))


# ------------------------------------------------------------------ pickling and the disk cache

def test_pickle_function():
    c, x = gt.dscalar("c"), gt.dvector("x")
    f = gj.function([c, x], ifelse(c > 0, x * 2, x - 1))
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_allclose(g(1.0, np.ones(2)), [2.0, 2.0])
    np.testing.assert_allclose(g(0.0, np.ones(2)), [0.0, 0.0])


CHILD = """
import json, numpy as np, graphjit as gj, graphjit.tensor as gt
from graphjit.ifelse import ifelse
c, x, n = gt.dscalar("c"), gt.dvector("x"), gt.lscalar("n")
f = gj.function([c, x, n], ifelse(c > 0, gt.exp(x).sum(), gt.alloc(np.float64(1.0), n, n).sum()))
t = f.native.timings
print(json.dumps({"hit": bool(t.get("cache_hit") or t.get("plan_hit")), "then": float(f(1.0, np.zeros(3), 10**7)),
                  "else": float(f(-1.0, np.zeros(3), 3))}))
"""


def test_disk_cache_hit_in_a_new_process(tmp_path):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))
    results = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert not results[0]["hit"] and results[1]["hit"]
    for r in results:
        assert r["then"] == 3.0 and r["else"] == 9.0


def test_docs_page_runs(capsys):
    """Every python block of docs/ifelse.md runs, in order, in one namespace (the docs convention)."""
    import re
    with open(os.path.join(ROOT, "docs", "ifelse.md")) as fh:
        text = fh.read()
    namespace = {}
    blocks = re.findall(r"(<!-- no-run -->\n)?```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 8
    for skip, code in blocks:
        if not skip:
            exec(compile(code, "docs/ifelse.md", "exec"), namespace)
    assert "IfElse" in capsys.readouterr().out


def test_example_script_runs(capsys):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        import ifelse_vs_switch
    finally:
        sys.path.pop(0)
    ifelse_vs_switch.main(rows=200, repeats=3)
    assert "ratio" in capsys.readouterr().out


def test_readers_of_an_overwritten_buffer_stay_out_of_regions():
    """An in-place update is ordered after the readers of what it overwrites: those are never moved into a
    region (which runs later), so they read the old value."""
    from graphjit.graph.branch_schedule import exclusive_regions
    w = gj.shared(np.ones(3), name="w")
    v = gj.shared(np.float64(0), name="v")
    c = gt.dscalar("c")
    for mode in OP_TEST_MODES:
        w.set_value(np.ones(3))
        f = gj.function([c], [], updates=[(w, w + 1), (v, ifelse(c > 0, (w * 3).sum(), (w * 2).max()))], mode=mode)
        order = f.maker.fgraph.toposort()
        if any(n.op.destroy_map for n in order):
            regions = exclusive_regions(f.maker.fgraph, order)
            readers = {n for n in order if any(i.owner is None and i.name == "w" for i in n.inputs)
                       and not n.op.destroy_map}
            assert all(not (r & readers) for rs in regions.values() for r in rs)
        f(1.0)
        assert v.get_value() == 9.0 and np.array_equal(w.get_value(), [2.0, 2.0, 2.0])
        f(-1.0)
        assert v.get_value() == 4.0


def test_debug_mode_agrees():
    """DEBUG runs the native branch and the lazy Python reference on every call and compares them."""
    c, x, y = gt.dscalar("c"), gt.dvector("x"), gt.dvector("y")
    f = gj.function([c, x, y], ifelse(c > 0, [gt.exp(x) * y, x.sum()], [y[::-1] - x, y.max()]), mode="DEBUG")
    for cond in (1.0, -1.0):
        got = f(cond, np.arange(3.0), np.ones(3))
        want = ([np.exp(np.arange(3.0)), 3.0] if cond > 0 else [1 - np.arange(3.0), 1.0])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w)
