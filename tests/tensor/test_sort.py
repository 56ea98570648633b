"""sort/argsort, partition/argpartition, topk/argtopk against numpy, in every mode (tests/op_check.py)."""

import importlib
import types

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from graphjit.tensor.lane_index import LaneGather, LaneScatter
from graphjit.tensor.sort import ArgPartition, ArgSort, Partition, Sort, TopK, topk_order
from op_check import OP_TEST_MODES, Case, arr, check_case, check_infer_shape, check_op_contract

INTS = ("uint64", "bool")
SPECIAL = [[3.0, np.nan, -0.0, 0.0, -np.inf, np.inf, 1.0, -0.0, np.nan, 1.0, -2.5, 0.0],
           [np.inf, 2.0, 2.0, -np.inf, np.nan, 0.0, -0.0, 2.0, -1.0, np.nan, -np.inf, 7.0]]


def _stable(fn):
    return lambda *a, **kw: fn(*a, **kw, kind="stable")


def _ties(shape, seed=0):
    """Floats with many ties (a few distinct values) and some NaNs."""
    v = np.random.default_rng(seed).integers(-3, 4, size=shape).astype("float64")
    v.flat[::37] = np.nan
    return v


def _lane_paths(shape, seed=0):
    """Rows taking each path of the native kernel: positive floats (whole lanes sorted in registers from the
    source, keys packed with positions), few values of both signs with NaNs and signed zeros (the scratch path,
    keys too wide to pack), all equal, and positives of one sign with ties (packed leaves with equal keys)."""
    rng = np.random.default_rng(seed)
    v = rng.random(shape) + 0.5
    v[1] = rng.integers(-3, 4, shape[1])
    v[1, ::7], v[1, 3::11] = np.nan, -0.0
    v[2] = 1.5
    v[3] = rng.integers(1, 4, shape[1]) * 0.25
    return v


NETWORK_EDGES = (8, 9, 16, 17, 32, 33, 64, 65)     # lane lengths around the leaf networks' sizes (ops/sort_leaf.py)


def _topk_ref(x, k, axis=-1):
    axis = axis % x.ndim
    if k == 0 or abs(k) > x.shape[axis]:
        raise ValueError("kth out of range")
    order = topk_order(x, k, axis)
    return [np.take_along_axis(x, order, axis), order]


CASES = [
    Case("sort_argsort_axes",
         lambda x: [gt.sort(x), gt.sort(x, 0), gt.argsort(x, -2), gt.sort(x, None), gt.argsort(x, None)],
         lambda x: [np.sort(x), np.sort(x, 0), np.argsort(x, -2, kind="stable"), np.sort(x, None),
                    np.argsort(x, None, kind="stable")], [arr((3, 5))], ("float64",)),
    Case("sort_argsort_ints_bool", lambda x: [gt.sort(x, 1), gt.argsort(x, 0)],
         lambda x: [np.sort(x, 1), np.argsort(x, 0, kind="stable")], [arr((4, 6), low=-3, high=3)],
         INTS, zero_size=False, layouts=False),
    Case("nan_inf_signed_zero_ties",
         lambda x: [gt.sort(x, 1), gt.argsort(x, 1), gt.argsort(x, 0), *gt.topk_and_argtopk(x, 5), gt.topk(x, -7)],
         lambda x: [np.sort(x, 1), np.argsort(x, 1, kind="stable"), np.argsort(x, 0, kind="stable"),
                    *_topk_ref(x, 5), _topk_ref(x, -7)[0]],
         [arr((2, 12), values=SPECIAL)], ("float32",), zero_size=False, layouts=False),
    # lanes of several radix levels, with ties: stability decides the permutation
    Case("long_lanes_ties", lambda x: [gt.sort(x, 1), gt.argsort(x, 1)],
         lambda x: [np.sort(x, 1), np.argsort(x, 1, kind="stable")], [arr((2, 5000), values=_ties((2, 5000)))],
         ("float64",), zero_size=False, layouts=False),
    Case("mid_lanes_ties", lambda x: [gt.sort(x, 0), gt.argsort(x, 0)],
         lambda x: [np.sort(x, 0), np.argsort(x, 0, kind="stable")], [arr((700, 2), values=_ties((700, 2)))],
         ("float64",), zero_size=False),
    # topk sorts only the buckets it keeps
    Case("long_int_lanes_topk", lambda x: [gt.sort(x), gt.argsort(x), *gt.topk_and_argtopk(x, 40), gt.argtopk(x, -700)],
         lambda x: [np.sort(x), np.argsort(x, kind="stable")] + _topk_ref(x, 40) + [_topk_ref(x, -700)[1]],
         [arr((3000,), low=-50, high=50)], ("int8", "int32"), zero_size=False, layouts=False),
    Case("lanes_around_network_sizes",
         lambda x: [f(x[:, :n]) for n in NETWORK_EDGES for f in (gt.sort, gt.argsort)] + [gt.topk(x[:, :40], -35)],
         lambda x: [f(x[:, :n], kind="stable") for n in NETWORK_EDGES for f in (np.sort, np.argsort)]
         + [_topk_ref(x[:, :40], -35)[0]],
         [arr((4, 65), values=_lane_paths((4, 65)))], ("float64", "float32"), zero_size=False),
    Case("int_lanes_around_network_sizes",
         lambda x: [f(x[:, :n]) for n in NETWORK_EDGES for f in (gt.sort, gt.argsort)],
         lambda x: [f(x[:, :n], kind="stable") for n in NETWORK_EDGES for f in (np.sort, np.argsort)],
         [arr((3, 65), low=-100, high=100)], ("int8",), zero_size=False, layouts=False),
    Case("topk", lambda x: [*gt.topk_and_argtopk(x, 2, axis=0), gt.argtopk(x, -3), gt.topk(x, 1, axis=None)],
         lambda x: _topk_ref(x, 2, 0) + [_topk_ref(x, -3)[1], _topk_ref(x.ravel(), 1)[0]],
         [arr((4, 5), values=_ties((4, 5), 2))], ("float64",), zero_size=False),
    Case("topk_symbolic_kth_int", lambda x, k: gt.topk_and_argtopk(x, k, idx_dtype="int32"),
         lambda x, k: [r.astype("int32") if i else r for i, r in enumerate(_topk_ref(x, int(k)))],
         [arr((3, 6), low=-4, high=4), arr((), "int64", values=-4)], ("int16",)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sort_ops(case):
    check_case(case)


def _check_partition(a, kth, axis, p, ip):
    s = np.sort(a, axis)
    for got in (p, np.take_along_axis(a, ip, axis)):
        np.testing.assert_array_equal(np.sort(got, axis), s)
        for k in kth:
            kv = np.take(got, [k], axis)
            np.testing.assert_array_equal(kv, np.take(s, [k], axis))
            n = a.shape[axis]
            before, after = np.take(got, range(k % n), axis), np.take(got, range(k % n + 1, n), axis)
            assert ((before <= kv) | np.isnan(kv)).all() and ((after >= kv) | np.isnan(after)).all()
    assert (np.sort(ip, axis) == np.arange(a.shape[axis]).reshape([-1 if d == axis % a.ndim else 1
                                                                   for d in range(a.ndim)])).all()


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_partition_contract(mode):
    """numpy's contract (kth in sorted place, smaller before, larger after), not numpy's exact order."""
    x = gt.dmatrix("x")
    cases = [((1, -1), 1), ((0, 3), 0), ((2,), -1)]
    outs = [o for kth, axis in cases for o in (gt.partition(x, kth, axis), gt.argpartition(x, kth, axis))]
    f = gj.function([x], outs, mode=mode)
    a = _ties((5, 7), 3)[:, ::-1]
    got = f(a)
    for (kth, axis), p, ip in zip(cases, got[::2], got[1::2]):
        _check_partition(a, kth, axis, p, ip)
    flat = gj.function([x], [gt.partition(x, 5, None), gt.argpartition(x, 5, None)], mode=mode)(a)
    _check_partition(a.ravel(), (5,), 0, *flat)
    with pytest.raises(ValueError, match="kth"):
        f(np.ones((5, 2)))


def test_signed_zeros_and_nan_bits_keep_input_order():
    """Zeros and NaNs come out with their own bits, in input order (sort, and topk in both directions)."""
    x = gt.dvector("x")
    a = np.array([0.0, -0.0, 1.0, -0.0, 0.0, -np.nan, np.nan, -np.inf, np.inf] * 600)
    for mode in OP_TEST_MODES:
        got = gj.function([x], [gt.sort(x), gt.topk(x, 3000), gt.topk(x, -3000)], mode=mode)(a)
        want = [np.sort(a, kind="stable"), _topk_ref(a, 3000)[0], _topk_ref(a, -3000)[0]]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w), err_msg=mode)


def test_already_sorted_and_reversed_lanes():
    x = gt.dmatrix("x")
    f = gj.function([x], [gt.sort(x), gt.argsort(x)], mode="FAST_RUN")
    a = np.vstack([np.arange(6000.0), np.arange(6000.0)[::-1], np.full(6000, 2.0), np.repeat([3.0, -1.0, 2.0], 2000),
                   np.arange(6000.0) % 2])
    s, i = f(a)
    np.testing.assert_array_equal(s, np.sort(a))
    np.testing.assert_array_equal(i, np.argsort(a, kind="stable"))


def test_short_lane_ending_at_a_page_boundary():
    """A lane whose vector load would read into the next page is read with a masked load (the vector's end
    may not be mapped); one in the middle of a page with a plain load."""
    x = gt.dvector("x")
    f = gj.function([x], [gt.sort(x), gt.argsort(x), gt.sort(x[:5])], mode="FAST_RUN")
    buf = np.random.default_rng(0).normal(size=2048)
    buf[::3] += 1e6
    first = (4096 - (buf.ctypes.data + 10 * 8) % 4096) % 4096 // 8      # lane of 10 ending at the boundary
    for a in (buf[first:first + 10], buf[first + 2:first + 12], np.abs(buf[first:first + 10])):
        got = f(a)
        np.testing.assert_array_equal(got[0], np.sort(a))
        np.testing.assert_array_equal(got[1], np.argsort(a, kind="stable"))
        np.testing.assert_array_equal(got[2], np.sort(a[:5]))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_gradients(mode):
    rng = np.random.default_rng(0)
    w = np.arange(12.0).reshape(3, 4)
    pt = rng.normal(size=(3, 4))
    verify_grad(lambda v: (gt.sort(v, 0) * w).sum() + (gt.topk(v, -2, axis=1) ** 3).sum(), [pt], mode=mode,
                rng=rng)


def test_gradient_at_ties_follows_the_stable_permutation():
    x = gt.dvector("x")
    g = gj.grad((gt.sort(x) * np.arange(4.0)).sum(), x)
    for mode in OP_TEST_MODES:
        np.testing.assert_array_equal(gj.function([x], g, mode=mode)(np.array([2.0, 1.0, 2.0, 1.0])), [2, 0, 3, 1])


def test_native_lowering():
    x, k = gt.fmatrix("x"), gt.iscalar("k")
    cost = (gt.sort(x, 0) ** 2).sum() + gt.topk(x, k).sum() + (gt.partition(x, 1) * 3).sum()
    outs = [gt.argsort(x), gt.argpartition(x, (0, 1)), gt.argtopk(x, k), gj.grad(cost, x)]
    f = gj.function([x, k], outs, mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    a = np.random.default_rng(0).random((3, 5)).astype("float32")
    got = f(a, 2)
    np.testing.assert_array_equal(got[0], np.argsort(a, kind="stable"))
    assert got[3].dtype == "float32"
    with pytest.raises(ValueError, match="kth"):
        f(a, 0)
    with pytest.raises(ValueError, match="kth"):
        f(a, -6)


def test_bad_arguments_raise_numpy_families():
    x = gt.dmatrix("x")
    with pytest.raises(np.exceptions.AxisError):
        gt.sort(x, 2)
    with pytest.raises(np.exceptions.AxisError):
        gt.argsort(x, -3)
    with pytest.raises(np.exceptions.AxisError):
        gt.partition(x, 0, axis=5)
    with pytest.raises(ValueError, match="kind"):
        gt.sort(x, kind="bogo")
    with pytest.raises(ValueError, match="same time"):
        gt.argsort(x, kind="stable", stable=True)
    with pytest.raises(ValueError, match="kth"):
        gt.topk(x, 0)
    with pytest.raises(ValueError, match="kth"):
        gt.partition(gt.tensor("float64", (2, 3)), 3)
    with pytest.raises(TypeError):
        gt.partition(x, 1.5)


def test_methods_kinds_and_static_types():
    importlib.import_module("graphjit.link.llvm.ops.sort")      # the submodule graphjit.tensor.sort loaded again
    assert gt.sort.__module__ == "graphjit.tensor.sort" and not isinstance(gt.sort, types.ModuleType)
    x = gt.tensor("int8", (2, None))
    assert isinstance(x.sort().owner.op, Sort) and x.argsort(0).owner.op == ArgSort(0, "quicksort")
    assert gt.sort(x, kind="mergesort").owner.op.kind == "stable" == gt.sort(x, stable=True).owner.op.kind
    assert gt.argsort(x).type == gt.TensorType("int64", (2, None))
    assert gt.sort(x, None).type.shape == (None,)
    assert gt.topk(gt.tensor("float64", (4, 9)), -3).type.shape == (4, 3)
    assert gt.argtopk(x, 1, axis=0, idx_dtype="int32").dtype == "int32"


def test_op_contracts_and_shapes():
    x = gt.dmatrix("x")
    for op in (Sort(1, "stable"), ArgSort(0, "quicksort"), Partition((1, -1), 1), ArgPartition(0, 0)):
        check_op_contract(op, lambda: [x])
    check_op_contract(TopK(0, True, "int64", True, True), lambda: [x, gt.lscalar("k")])
    check_op_contract(LaneGather(1), lambda: [x, gt.lmatrix("i")])
    check_op_contract(LaneScatter(1), lambda: [x, gt.lmatrix("i"), gt.lscalar("n")])
    check_infer_shape(lambda v, k: gt.topk_and_argtopk(v, k, axis=0), [arr((5, 3)), arr((), "int64", values=-2)])
    check_infer_shape(lambda v: [gt.sort(v, None), gt.argpartition(v, 2)], [arr((2, 4))])


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_lane_gather_scatter_check_their_indices(mode):
    x, i = gt.dmatrix("x"), gt.lmatrix("i")
    f = gj.function([x, i], [LaneGather(1)(x, i), LaneScatter(1)(x, i, 3)], mode=mode)
    a = np.arange(6.0).reshape(2, 3)
    got = f(a, np.array([[2, 2, 0], [1, 0, 1]]))
    np.testing.assert_array_equal(got[0], [[2, 2, 0], [4, 3, 4]])
    np.testing.assert_array_equal(got[1], [[2, 0, 1], [4, 3 + 5, 0]])
    with pytest.raises(IndexError):
        f(a, np.array([[3, 0, 0], [0, 0, 0]]))
    with pytest.raises(ValueError):
        f(a, np.zeros((3, 3), dtype="int64"))
