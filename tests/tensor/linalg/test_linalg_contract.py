"""Every linalg op: eq/hash/str/pickle and make_node (op_check.check_op_contract), inferred shapes equal to
the real ones without computing the op (check_infer_shape), static shapes and dtypes at build time."""

import numpy as np
import pytest

import graphjit.tensor as gt
from graphjit.tensor import linalg as la
from linalg_inputs import fixed, general, spd
from op_check import arr, check_infer_shape, check_op_contract

M = lambda: [gt.dmatrix("a")]                    # noqa: E731
MV = lambda: [gt.dmatrix("a"), gt.dvector("b")]  # noqa: E731
CONTRACTS = [
    (la.Cholesky(False, "nan"), M), (la.Solve("pos", 1), MV), (la.SolveTriangular(True, 1, True, 1), MV),
    (la.ChoSolve(False, 1), MV), (la.Inv("nan"), M), (la.Det(), M), (la.SlogDet(), M), (la.Pinv(1e-3), M),
    (la.Eigh("U"), M), (la.Eig(), M), (la.SVD(False, True), M), (la.QR("complete"), M), (la.LU(), M),
    (la.LUFactor(), M), (la.LUSolve(1, 1), lambda: [gt.dmatrix(), gt.ivector(), gt.dvector()]),
    (la.Expm(), M), (la.Lstsq(None), MV), (la.ExtractDiag(), M), (la.CholInvDiag(), MV),
]


@pytest.mark.parametrize("op, inputs", CONTRACTS, ids=lambda v: str(v) if not callable(v) else "")
def test_op_contract(op, inputs):
    check_op_contract(op, inputs)


SHAPES = [
    ("cholesky", la.cholesky, [fixed(spd((2, 3, 3)))]),
    ("solve_bcast", la.solve, [fixed(general((2, 1, 3, 3))), arr((4, 3, 2))]),
    ("solve_vec", la.solve, [fixed(general((2, 3, 3))), arr((3,))]),
    ("cho_solve", lambda c, b: la.cho_solve((c, True), b), [fixed(np.linalg.cholesky(spd((3, 3)))), arr((3, 2))]),
    ("lu_solve", lambda a, b: la.lu_solve(la.lu_factor(a), b), [fixed(general((3, 3))), arr((3, 2))]),
    ("qr", lambda a: list(la.qr(a)), [arr((5, 3))]),
    ("qr_complete", lambda a: list(la.qr(a, "complete")), [arr((3, 5))]),
    ("det", la.det, [fixed(general((2, 3, 3)))]),
    ("slogdet", lambda a: list(la.slogdet(a)), [fixed(general((2, 3, 3)))]),
    ("eigh", lambda a: list(la.eigh(a)), [fixed(spd((3, 3)))]),
    ("svd", lambda a: list(la.svd(a, full_matrices=False)), [arr((2, 5, 3))]),
    ("svd_full", lambda a: list(la.svd(a)), [arr((3, 5))]),
    ("pinv", la.pinv, [arr((5, 3))]),
    ("diagonal", la.diagonal, [arr((2, 3, 5))]),
    ("expm", la.expm, [arr((3, 3))]),
    ("inv", la.inv, [fixed(general((3, 3)))]),
]


@pytest.mark.parametrize("name, build, inputs", SHAPES, ids=[s[0] for s in SHAPES])
def test_infer_shape(name, build, inputs):
    check_infer_shape(build, inputs)


def test_static_shapes_and_dtypes():
    a = gt.tensor("float32", (2, 4, 4))
    assert la.cholesky(a).type.shape == (2, 4, 4) and la.cholesky(a).dtype == "float32"
    x = la.solve(a, gt.tensor("float64", (4, 3)))
    assert x.type.shape == (2, 4, 3) and x.dtype == "float64"
    assert la.det(gt.tensor("int64", (5, 3, 3))).type.shape == (5,) and la.det(gt.lmatrix()).dtype == "float64"
    u, s, vh = la.svd(gt.tensor("float64", (5, 3)), full_matrices=False)
    assert (u.type.shape, s.type.shape, vh.type.shape) == ((5, 3), (3,), (3, 3))
    w, v = la.eig(gt.fmatrix())
    assert w.dtype == v.dtype == "complex64"
    with pytest.raises(ValueError, match="incompatible"):
        la.solve(gt.tensor("float64", (3, 3)), gt.tensor("float64", (4,)))
    with pytest.raises(ValueError, match="on_error"):
        la.cholesky(gt.dmatrix(), on_error="ignore")
    with pytest.raises(ValueError, match="assume_a"):
        la.solve(gt.dmatrix(), gt.dvector(), assume_a="banded")
