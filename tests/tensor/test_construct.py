"""tri, linspace, logspace, geomspace, identity_like, meshgrid, indices, tile, repeat against numpy in every mode (every layout, zero-size inputs), their
gradients, native lowering and bad arguments."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from op_check import OP_TEST_MODES, Case, arr, check_case, check_infer_shape

CASES = [
    Case("tri_symbolic", lambda n, m, k: gt.tri(n, m, k, dtype="float64"),
         lambda n, m, k: np.tri(int(n), int(m), int(k)),
         [arr((), "int64", values=3), arr((), "int64", values=5), arr((), "int64", values=-1)],
         dtypes=("float64",), zero_size=False),
    Case("linspace", lambda a, b: gt.linspace(a, b, 7), lambda a, b: np.linspace(a, b, 7), [arr(()), arr(())]),
    Case("linspace_no_endpoint", lambda a, b: gt.linspace(a, b, 4, endpoint=False),
         lambda a, b: np.linspace(a, b, 4, endpoint=False), [arr(()), arr(())]),
    Case("linspace_one_and_none", lambda a, b: [gt.linspace(a, b, 1), gt.linspace(a, b, 0)],
         lambda a, b: [np.linspace(a, b, 1), np.linspace(a, b, 0)], [arr(()), arr(())]),
    Case("linspace_int_dtype", lambda a, b: gt.linspace(a, b, 6, dtype="int64"),
         lambda a, b: np.linspace(a, b, 6, dtype="int64"), [arr((), low=-9, high=9), arr((), low=-9, high=9)]),
    Case("logspace", lambda a, b: gt.logspace(a, b, 5), lambda a, b: np.logspace(a, b, 5), [arr(()), arr(())]),
    Case("logspace_base2_no_endpoint", lambda a, b: gt.logspace(a, b, 4, endpoint=False, base=2.0),
         lambda a, b: np.logspace(a, b, 4, endpoint=False, base=2.0), [arr(()), arr(())]),
    Case("indices", lambda: gt.indices((2, 3)), lambda: np.indices((2, 3)), [], dtypes=("int64",)),
    Case("indices_sparse", lambda: list(gt.indices((2, 3, 1), sparse=True)),
         lambda: list(np.indices((2, 3, 1), sparse=True)), [], dtypes=("int64",)),
    Case("meshgrid_xy", lambda x, y, z: gt.meshgrid(x, y, z), lambda a, b, c: list(np.meshgrid(a, b, c)),
         [arr((2,)), arr((3,)), arr((4,))]),
    Case("meshgrid_ij", lambda x, y: gt.meshgrid(x, y, indexing="ij"),
         lambda a, b: list(np.meshgrid(a, b, indexing="ij")), [arr((2,)), arr((3,))]),
    Case("meshgrid_sparse", lambda x, y: gt.meshgrid(x, y, sparse=True),
         lambda a, b: list(np.meshgrid(a, b, sparse=True)), [arr((2,)), arr((3,))]),
    Case("tile", lambda x: gt.tile(x, (2, 3)), lambda a: np.tile(a, (2, 3)), [arr((2, 3))]),
    Case("tile_more_reps", lambda x: gt.tile(x, (2, 1, 3)), lambda a: np.tile(a, (2, 1, 3)), [arr((4,))]),
    Case("tile_fewer_reps", lambda x: gt.tile(x, 2), lambda a: np.tile(a, 2), [arr((2, 3))]),
    Case("repeat_flat", lambda x: gt.repeat(x, 3), lambda a: np.repeat(a, 3), [arr((2, 3))]),
    Case("repeat_axis", lambda x: gt.repeat(x, 2, axis=-1), lambda a: np.repeat(a, 2, axis=-1), [arr((2, 3))]),
    Case("repeat_zero", lambda x: gt.repeat(x, 0, axis=0), lambda a: np.repeat(a, 0, axis=0), [arr((2, 3))]),
    Case("repeat_counts", lambda x, r: [x.repeat(r, 1), gt.repeat(x, r[1:2], 0), gt.repeat(x, [3]),
                                        gt.repeat(x, r[2], -1)],
         lambda a, r: [np.repeat(a, r, 1), np.repeat(a, r[1:2], 0), np.repeat(a, [3]), np.repeat(a, r[2], -1)],
         [arr((2, 3)), arr((3,), "int64", values=[2, 0, 3])], dtypes=("float64", "int32")),
    Case("repeat_counts_bad", lambda x, r: gt.repeat(x, r, 0), lambda a, r: np.repeat(a, r, 0),
         [arr((3,)), arr((3,), "int64", values=[1, -1, 2])], dtypes=("float64",), layouts=False),
    Case("geomspace", lambda a, b, c, d: [gt.geomspace(a, b, 5), gt.geomspace(a, b, 4, endpoint=False),
                                          gt.geomspace(a, b, 5, dtype="int64"), gt.geomspace(c, d, 6),
                                          gt.geomspace(c, d, 1), gt.geomspace(c, d, 0), gt.geomspace(a, d, 3)],
         lambda a, b, c, d: [np.geomspace(a, b, 5), np.geomspace(a, b, 4, endpoint=False),
                             np.geomspace(a, b, 5, dtype="int64"), np.geomspace(c, d, 6), np.geomspace(c, d, 1),
                             np.geomspace(c, d, 0), np.geomspace(a, d, 3)],
         [arr((), values=-2.0), arr((), values=-30.0), arr((), values=0.5), arr((), values=1000.0)],
         dtypes=("float32",)),
    Case("geomspace_zero", lambda a, b: gt.geomspace(a, b, 3), lambda a, b: np.geomspace(a, b, 3),
         [arr((), values=0.0), arr((), values=2.0)], dtypes=("float64",)),
    Case("identity_like", lambda x: [gt.identity_like(x), gt.identity_like(x, "int8")],
         lambda a: [np.eye(*a.shape, dtype=a.dtype), np.eye(*a.shape, dtype="int8")], [arr((2, 3))],
         dtypes=("float64",), layouts=False),      # reads only x's shape
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_against_numpy(case):
    check_case(case)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_gradients(mode):
    rng = np.random.default_rng(0)
    m, v = rng.normal(size=(2, 3)), rng.normal(size=3)
    w = np.arange(36.0).reshape(4, 9)
    for fn, pt in [(lambda x: gt.tile(x, (2, 3)) * w, m),
                   (lambda x: gt.repeat(x, 2, axis=0) ** 2, m),
                   (lambda x: gt.meshgrid(x, x * 2)[1] ** 2, v),
                   (lambda a: gt.linspace(a, 2 * a + 1, 5) ** 2, np.array(0.7))]:
        verify_grad(fn, [pt], mode=mode)


def test_gradients_geomspace_repeat_counts():
    """Checked numerically in PY; test_native_lowering compiles the repeat gradient natively and checks it."""
    verify_grad(lambda a: gt.geomspace(a, 3 * a, 4) ** 2, [np.array(-0.7)], mode="PY")
    verify_grad(lambda x: gt.repeat(x, np.array([2, 0, 1]), axis=1) ** 2, [np.ones((2, 3)) * 0.3], mode="PY")


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_repeat_counts_run_time_errors(mode):
    x, r = gt.dvector("x"), gt.lvector("r")
    f = gj.function([x, r], gt.repeat(x, r), mode=mode)
    for counts, match in [([1, 2, 3], "could not be broadcast"), ([1, -1], "negative"),
                          ([2 ** 62, 2 ** 62], "overflows"), ([2 ** 62], "overflows")]:
        with pytest.raises(ValueError, match=match):
            f(np.ones(2 if len(counts) != 1 else 4), counts)


def test_repeat_counts_infer_shape():
    check_infer_shape(lambda x, r: [gt.repeat(x, r, 1), gt.repeat(x, r[:1], 0), gj.grad(gt.repeat(x, r, 1).sum(), x)],
                      [arr((2, 3)), arr((3,), "int64", values=[2, 0, 3])])


def test_native_lowering():
    x, v, n = gt.dmatrix("x"), gt.dvector("v"), gt.lscalar("n")
    outs = [gt.tri(n, n + 1, 1), gt.linspace(v[0], v[1], 5), *gt.meshgrid(v, v), gt.tile(x, (2, 2)),
            gt.repeat(x, 3, 1), gt.geomspace(v[0] + 1, v[2] + 1, 4), gt.repeat(x, v.astype("int64")[:2], 0),
            gj.grad((gt.repeat(x, v.astype("int64"), 1) ** 2).sum(), x)]
    f = gj.function([x, v, n], outs, mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    res = f(np.ones((2, 3)), np.array([1.0, 0.0, 2.0]), 3)
    np.testing.assert_array_equal(res[0], np.tri(3, 4, 1, dtype=gj.config.floatX))
    np.testing.assert_array_equal(res[-2], np.ones((1, 3)))
    np.testing.assert_array_equal(res[-1], np.full((2, 3), 2.0) * [1, 0, 2])


@pytest.mark.parametrize("call, error", [
    (lambda: gt.linspace(0.0, 1.0, -1), ValueError),
    (lambda: gt.linspace(gt.dvector(), 1.0, 3), ValueError),
    (lambda: gt.indices((2, -1)), ValueError),
    (lambda: gt.meshgrid(gt.dmatrix()), ValueError),
    (lambda: gt.meshgrid(gt.dvector(), indexing="xyz"), ValueError),
    (lambda: gt.tile(gt.dvector(), (2, -1)), ValueError),
    (lambda: gt.repeat(gt.dvector(), gt.dvector()), TypeError),
    (lambda: gt.repeat(gt.dvector(), -2), ValueError),
    (lambda: gt.repeat(gt.dvector(), 2, axis=1), np.exceptions.AxisError),
    (lambda: gt.repeat(gt.dmatrix(), gt.lmatrix(), 0), TypeError),
    (lambda: gt.repeat(gt.tensor("float64", (3,)), [1, 2], 0), ValueError),
    (lambda: gt.repeat(gt.dvector(), [1, -2], 0), ValueError),
    (lambda: gt.geomspace(0.0, 1.0, 3), ValueError),
    (lambda: gt.geomspace(1.0, 2.0, -3), ValueError),
    (lambda: gt.geomspace(gt.dvector(), 2.0), ValueError),
    (lambda: gt.identity_like(gt.dvector()), ValueError),
], ids=["linspace_num", "linspace_vector", "indices_negative", "meshgrid_matrix", "meshgrid_indexing", "tile_negative",
        "repeat_float_counts", "repeat_negative", "repeat_axis", "repeat_matrix_counts", "repeat_static_length",
        "repeat_negative_count", "geomspace_zero", "geomspace_num", "geomspace_vector", "identity_like_vector"])
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call()
