"""Dot, Matmul, TensorDot and the dot/matmul/tensordot/outer helpers against numpy."""


import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.blas import Dot, Matmul, TensorDot, dot, matmul, outer, tensordot
from op_check import Case, arr, check_case, check_infer_shape, check_op_contract

ALL = ("float64", "float32", "int64", "int32")

CASES = [
    # Dot: every 1-d/2-d combination, the contracted length is the one zeroed
    Case("dot_mm", dot, np.dot, [arr((3, 4)), arr((4, 5))], ALL, zero_len=4),
    Case("dot_mv", dot, np.dot, [arr((3, 4)), arr((4,))], ALL, zero_len=4),
    Case("dot_vm", dot, np.dot, [arr((4,)), arr((4, 5))], ALL, zero_len=4),
    Case("dot_vv", dot, np.dot, [arr((4,)), arr((4,))], ALL),
    # blas_small.py's kernel (two groups of columns, an odd row count), and ?gemm past SMALL_GEMM_MAX
    Case("dot_mm_small_kernel", dot, np.dot, [arr((33, 17)), arr((17, 40))], zero_size=False),
    Case("dot_mm_gemm", dot, np.dot, [arr((65, 3)), arr((3, 70))], zero_size=False),
    Case("dot_mm_zero_rows", dot, np.dot, [arr((3, 4)), arr((4, 5))], zero_len=3),
    Case("dot_mixed_dtypes", dot, np.dot, [arr((3, 4), "float32"), arr((4, 2), "int32")],
         ("float64",)),
    Case("dot_mixed_float", dot, np.dot, [arr((3, 4), "float32"), arr((4, 2), "float64")],
         ("float64",)),
    Case("dot_bool", dot, np.dot, [arr((3, 4)), arr((4, 2))], ("bool",)),
    Case("dot_scalar", dot, np.dot, [arr(()), arr((3, 4))]),
    Case("dot_3d_2d", dot, np.dot, [arr((2, 3, 4)), arr((4, 5))], ALL, zero_len=4),
    Case("dot_2d_3d", dot, np.dot, [arr((3, 4)), arr((2, 4, 5))], zero_len=4),
    Case("dot_3d_1d", dot, np.dot, [arr((2, 3, 4)), arr((4,))], zero_len=2),
    Case("dot_bad_shapes", dot, np.dot, [arr((3, 4)), arr((5,))], zero_size=False),
    Case("dot_bad_shapes_mm", dot, np.dot, [arr((3, 4)), arr((3, 4))], zero_size=False),
    # matmul: 1-d promotion, batch dims and their broadcasting
    Case("matmul_2d", matmul, np.matmul, [arr((3, 4)), arr((4, 5))], ALL),
    Case("matmul_batch", matmul, np.matmul, [arr((2, 3, 4)), arr((2, 4, 5))], ALL),
    Case("matmul_batch_bcast", matmul, np.matmul, [arr((2, 1, 3, 4)), arr((5, 4, 2))], ALL,
         zero_len=5),
    Case("matmul_batch_2d", matmul, np.matmul, [arr((6, 3, 4)), arr((4, 5))], zero_len=6),
    Case("matmul_vec_batch", matmul, np.matmul, [arr((4,)), arr((2, 4, 5))], zero_len=4),
    Case("matmul_batch_vec", matmul, np.matmul, [arr((2, 3, 4)), arr((4,))], zero_len=3),
    Case("matmul_operator", lambda a, b: a @ b, np.matmul, [arr((2, 3, 4)), arr((2, 4, 3))]),
    Case("matmul_mixed", matmul, np.matmul, [arr((2, 3, 4), "int32"), arr((4, 5), "float32")],
         ("float64",)),
    Case("matmul_bad_core", matmul, np.matmul, [arr((2, 3, 4)), arr((2, 3, 4))], zero_size=False),
    Case("matmul_bad_batch", matmul, np.matmul, [arr((2, 3, 4)), arr((3, 4, 5))], zero_size=False),
    # tensordot
    Case("tensordot_2", tensordot, np.tensordot, [arr((2, 3, 4)), arr((3, 4, 5))], ALL, zero_len=3),
    Case("tensordot_0", lambda a, b: tensordot(a, b, 0), lambda a, b: np.tensordot(a, b, 0),
         [arr((2, 3)), arr((4,))]),
    Case("tensordot_lists", lambda a, b: tensordot(a, b, [[0, 2], [2, 0]]),
         lambda a, b: np.tensordot(a, b, [[0, 2], [2, 0]]), [arr((2, 3, 4)), arr((4, 5, 2))]),
    Case("tensordot_neg_axes", lambda a, b: tensordot(a, b, (-1, 0)),
         lambda a, b: np.tensordot(a, b, (-1, 0)), [arr((2, 3)), arr((3, 4))]),
    Case("tensordot_bad", tensordot, np.tensordot, [arr((2, 3, 4)), arr((4, 3, 5))],
         zero_size=False),
    # the same product of summed lengths (6) from different lengths: still a ValueError after the rewrite to dot
    Case("tensordot_same_product_mismatch", lambda a, b: tensordot(a, b, [[0, 1], [0, 1]]),
         lambda a, b: np.tensordot(a, b, [[0, 1], [0, 1]]), [arr((2, 3, 4)), arr((3, 2, 5))], zero_size=False),
    Case("tensordot_full", lambda a, b: tensordot(a, b, 2), lambda a, b: np.tensordot(a, b, 2),
         [arr((3, 4)), arr((3, 4))]),
    # outer
    Case("outer", outer, np.outer, [arr((3,)), arr((4,))], ALL),
]
OUTER_FLATTENS = Case("outer_flattens", outer, np.outer, [arr((2, 3)), arr((4,))], zero_len=4)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_products(case):
    check_case(case)


def test_outer_flattens():
    check_case(OUTER_FLATTENS)


def test_dot_static_shape_mismatch_raises_at_build():
    a, b = gt.tensor("float64", (3, 4), "a"), gt.tensor("float64", (5,), "b")
    with pytest.raises(ValueError, match=r"Dot.*\(3, 4\).*\(5,\).*'a'.*'b'"):
        dot(a, b)


@pytest.mark.parametrize("build, shapes", [
    (matmul, [(2, 3, 4), (2, 5, 6)]),
    (matmul, [(2, 3, 4), (3, 4, 5)]),
    (lambda a, b: tensordot(a, b, 1), [(2, 3), (4, 5)]),
])
def test_static_mismatch_raises_at_build(build, shapes):
    a, b = (gt.tensor("float64", s) for s in shapes)
    with pytest.raises(ValueError):
        build(a, b)


def test_static_shapes_and_dtypes():
    a = gt.tensor("float32", (3, None))
    b = gt.tensor("int64", (None, 5))
    out = dot(a, b)
    assert isinstance(out.owner.op, Dot) and out.type.shape == (3, 5) and out.dtype == "float64"
    m = matmul(gt.tensor("float64", (1, 3, 4)), gt.tensor("float64", (7, 4, None)))
    assert isinstance(m.owner.op, Matmul) and m.type.shape == (7, 3, None)
    t = tensordot(gt.tensor("float64", (2, 3, 4)), gt.tensor("float64", (3, 4, 5)))
    assert isinstance(t.owner.op, TensorDot) and t.type.shape == (2, 5)
    assert gt.dmatrix().dot(gt.dvector()).ndim == 1


@pytest.mark.parametrize("axes", [1, 2, [[0, 2], [2, 0]]], ids=str)
def test_tensordot_is_one_matrix_product_under_fast_run(axes):
    """FAST_RUN rewrites TensorDot to transposes, reshapes and one Dot (BLAS), not a loop per output element."""
    a, b = gt.tensor3("a"), gt.tensor3("b")
    f = gj.function([a, b], tensordot(a, b, axes), mode="FAST_RUN")
    ops = [type(n.op) for n in f.maker.fgraph.toposort()]
    assert TensorDot not in ops and Dot in ops and f.native.fallback_nodes == []
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(4, 5, 6)), rng.normal(size=(6, 5, 4) if axes != 2 else (5, 6, 3))
    if axes == 1:
        y = rng.normal(size=(6, 2, 3))
    np.testing.assert_allclose(f(x, y), np.tensordot(x, y, axes), rtol=1e-12, atol=1e-12)


def test_bad_arguments():
    with pytest.raises(TypeError, match="Dot"):
        Dot()(gt.tensor3(), gt.matrix())
    with pytest.raises(ValueError, match="Matmul"):
        Matmul()(gt.dscalar(), gt.dmatrix())
    with pytest.raises(ValueError):
        matmul(gt.dscalar(), gt.dmatrix())
    with pytest.raises(np.exceptions.AxisError):
        tensordot(gt.dmatrix(), gt.dmatrix(), [[2], [0]])
    with pytest.raises(ValueError):
        tensordot(gt.dmatrix(), gt.dmatrix(), 3)
    with pytest.raises(TypeError):
        tensordot(gt.dmatrix(), gt.dmatrix(), "x")


def test_runtime_error_names_op_and_shapes():
    a, b = gt.dmatrix("a"), gt.dmatrix("b")
    f = gj.function([a, b], dot(a, b), mode="PY")
    with pytest.raises(ValueError, match=r"Dot.*\(3, 4\).*\(5, 2\)"):
        f(np.ones((3, 4)), np.ones((5, 2)))


def test_dot_uses_blas_dtype_and_returns_ndarray():
    a, b = gt.fvector(), gt.fvector()
    got = gj.function([a, b], dot(a, b), mode="PY")(np.ones(3, "float32"), np.ones(3, "float32"))
    assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == np.float32


INFER = [
    (dot, [arr((3, 4)), arr((4, 5))]),
    (dot, [arr((3, 4)), arr((4,))]),
    (dot, [arr((4,)), arr((4,))]),
    (dot, [arr((2, 3, 4)), arr((4, 5))]),
    (matmul, [arr((2, 1, 3, 4)), arr((5, 4, 2))]),
    (matmul, [arr((4,)), arr((2, 4, 5))]),
    (matmul, [arr((2, 3, 4)), arr((4,))]),
    (matmul, [arr((1, 3, 4), static=True), arr((6, 4, 2))]),
    (tensordot, [arr((2, 3, 4)), arr((3, 4, 5))]),
    (outer, [arr((3,)), arr((4,))]),
]


@pytest.mark.parametrize("build, inputs", INFER, ids=lambda x: getattr(x, "__name__", ""))
def test_infer_shape(build, inputs):
    check_infer_shape(build, inputs)


@pytest.mark.parametrize("op, make_inputs", [
    (Dot(), lambda: [gt.dmatrix(), gt.dvector()]),
    (Matmul(), lambda: [gt.dtensor3(), gt.dmatrix()]),
    (TensorDot(((1,), (0,))), lambda: [gt.dmatrix(), gt.dmatrix()]),
], ids=lambda v: str(v) if hasattr(v, "make_node") else None)  # no addresses in ids (xdist)
def test_op_contract(op, make_inputs):
    check_op_contract(op, make_inputs)
