"""Gemv and Ger (tensor/blas_vector.py) against numpy through op_check, and their op contract."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from graphjit.tensor.blas_vector import Gemv, Ger, gemv, ger
from op_check import OP_TEST_MODES, Case, arr, check_case, check_infer_shape, check_op_contract

F = ("float64", "float32")


def _gemv_ref(trans=False):
    def ref(a, x, alpha=None, y=None, beta=None):
        p = np.dot(a.T if trans else a, x)
        p = p * 2 if alpha is None else alpha * p
        return p if y is None else beta * y + p
    return ref


CASES = [
    # Gemv without y: matrix @ vector and (trans) vector @ matrix; sizes below and above the BLAS cutoff
    Case("gemv_N", lambda a, x: gemv(a, x, 2.0), _gemv_ref(), [arr((3, 4)), arr((4,))], F, zero_len=4),
    Case("gemv_N_rows0", lambda a, x: gemv(a, x, 2.0), _gemv_ref(), [arr((3, 4)), arr((4,))], F, zero_len=3),
    Case("gemv_N_big", lambda a, x: gemv(a, x, 2.0), _gemv_ref(), [arr((30, 41)), arr((41,))], F, zero_len=30),
    Case("gemv_T", lambda a, x: gemv(a, x, 2.0, trans=True), _gemv_ref(True), [arr((4, 3)), arr((4,))], F,
         zero_len=4),
    Case("gemv_T_big", lambda a, x: gemv(a, x, 2.0, trans=True), _gemv_ref(True), [arr((41, 30)), arr((41,))],
         F, zero_len=41),
    # Gemv with y and symbolic alpha/beta
    Case("gemv_y", lambda a, x, al, y, be: gemv(a, x, al, y, be),
         lambda a, x, al, y, be: _gemv_ref()(a, x, al, y, be),
         [arr((3, 4)), arr((4,)), arr(()), arr((3,)), arr(())], F, zero_len=3),
    Case("gemv_y_big", lambda a, x, al, y, be: gemv(a, x, al, y, be),
         lambda a, x, al, y, be: _gemv_ref()(a, x, al, y, be),
         [arr((40, 30)), arr((30,)), arr(()), arr((40,)), arr(())], F, zero_len=30),
    Case("gemv_T_y_big", lambda a, x, al, y, be: gemv(a, x, al, y, be, trans=True),
         lambda a, x, al, y, be: _gemv_ref(True)(a, x, al, y, be),
         [arr((30, 40)), arr((30,)), arr(()), arr((40,)), arr(())], F, zero_len=40),
    # the native row-blocked kernel (ops/gemv_blocked.py: blocks of 8 rows, vector-wide columns, a column tail):
    # rows not a multiple of 4, columns not a multiple of the vector width, fewer columns than one vector
    Case("gemv_blocked_tails", lambda a, x, al, y, be: gemv(a, x, al, y, be),
         lambda a, x, al, y, be: _gemv_ref()(a, x, al, y, be),
         [arr((13, 19)), arr((19,)), arr(()), arr((13,)), arr(())], F, zero_len=13),
    Case("gemv_blocked_exact", lambda a, x: gemv(a, x, 2.0), _gemv_ref(), [arr((8, 16)), arr((16,))], F,
         zero_len=8),
    Case("gemv_blocked_two_blocks", lambda a, x, y: gemv(a, x, 2.0, y, 0.5), lambda a, x, y: 0.5 * y + 2.0 * (a @ x),
         [arr((16, 32)), arr((32,)), arr((16,))], F, zero_len=16),
    Case("gemv_blocked_narrow", lambda a, x: gemv(a, x, 2.0), _gemv_ref(), [arr((6, 3)), arr((3,))], F,
         zero_len=6),
    # its column form (op(A) = A.T of a row-major A): blocks of 4 vectors of rows (32 float64 / 64 float32
    # lanes) and a tail, below the BLAS cutoff
    Case("gemv_T_blocked", lambda a, x, al, y, be: gemv(a, x, al, y, be, trans=True),
         lambda a, x, al, y, be: _gemv_ref(True)(a, x, al, y, be),
         [arr((3, 40)), arr((3,)), arr(()), arr((40,)), arr(())], F, zero_len=40),
    Case("gemv_T_blocked_wide", lambda a, x: gemv(a, x, 2.0, trans=True), _gemv_ref(True),
         [arr((2, 70)), arr((2,))], F, zero_len=70),
    # the column form's two accumulator sets (even and odd columns): one column (none paired), odd counts
    Case("gemv_T_blocked_one_column", lambda a, x: gemv(a, x, 2.0, trans=True), _gemv_ref(True),
         [arr((1, 64)), arr((1,))], F, zero_len=64),
    Case("gemv_T_blocked_odd_columns", lambda a, x: gemv(a, x, 2.0, trans=True), _gemv_ref(True),
         [arr((7, 33)), arr((7,))], F, zero_len=33),
    # numpy's broadcasting: a length-1 y, a one-row product
    Case("gemv_y_broadcast", lambda a, x, y: gemv(a, x, 1.5, y, 0.5), lambda a, x, y: 0.5 * y + 1.5 * (a @ x),
         [arr((30, 20)), arr((20,)), arr((1,))], F, zero_len=30),
    Case("gemv_product_broadcast", lambda a, x, y: gemv(a, x, 1.5, y, 0.5),
         lambda a, x, y: 0.5 * y + 1.5 * (a @ x), [arr((1, 20)), arr((20,)), arr((7,))], F, zero_len=7),
    # zero factors: BLAS would skip the product / y, numpy keeps 0 * inf = nan
    Case("gemv_zero_alpha_inf", lambda a, x, y: gemv(a, x, 0.0, y, 1.0), lambda a, x, y: y + 0.0 * (a @ x),
         [arr((20, 20), values=np.where(np.eye(20) > 0, np.inf, 1.0)), arr((20,)), arr((20,))], F,
         zero_size=False),
    Case("gemv_zero_beta_nan", lambda a, x, y: gemv(a, x, 1.0, y, 0.0), lambda a, x, y: 0.0 * y + a @ x,
         [arr((20, 20)), arr((20,)), arr((20,), values=np.full(20, np.nan))], F, zero_size=False),
    # bad shapes at run time
    Case("gemv_bad_x", lambda a, x: gemv(a, x), lambda a, x: a @ x, [arr((3, 4)), arr((5,))], zero_size=False),
    Case("gemv_bad_y", lambda a, x, y: gemv(a, x, 1.0, y), lambda a, x, y: y + a @ x,
         [arr((3, 4)), arr((4,)), arr((2,))], zero_size=False),
    # Ger
    Case("ger", lambda a, al, x, y: ger(x, y, al, a), lambda a, al, x, y: a + al * np.outer(x, y),
         [arr((3, 4)), arr(()), arr((3,)), arr((4,))], F, zero_len=3),
    Case("ger_big", lambda a, al, x, y: ger(x, y, al, a), lambda a, al, x, y: a + al * np.outer(x, y),
         [arr((30, 40)), arr(()), arr((30,)), arr((40,))], F, zero_len=40),
    Case("ger_no_a", lambda x, y: ger(x, y, 3.0), lambda x, y: 3.0 * np.outer(x, y), [arr((30,)), arr((40,))],
         F, zero_len=30),
    Case("ger_a_row_broadcast", lambda a, x, y: ger(x, y, 2.0, a), lambda a, x, y: a + 2.0 * np.outer(x, y),
         [arr((1, 40)), arr((30,)), arr((40,))], F, zero_len=30),
    Case("ger_x_broadcast", lambda a, x, y: ger(x, y, 2.0, a), lambda a, x, y: a + 2.0 * np.outer(x, y),
         [arr((30, 40)), arr((1,)), arr((40,))], F, zero_len=30),
    Case("ger_zero_alpha_inf", lambda a, x, y: ger(x, y, 0.0, a), lambda a, x, y: a + 0.0 * np.outer(x, y),
         [arr((20, 20)), arr((20,), values=np.full(20, np.inf)), arr((20,))], F, zero_size=False),
    Case("ger_bad", lambda a, x, y: ger(x, y, 1.0, a), lambda a, x, y: a + np.outer(x, y),
         [arr((3, 4)), arr((2,)), arr((4,))], zero_size=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gemv_ger(case):
    check_case(case)


def test_lowered_without_fallback():
    a, x, y = gt.dmatrix(), gt.dvector(), gt.dvector()
    for out in (gemv(a, x), gemv(a, x, 2.0, y, 3.0, trans=True), ger(x, y, 2.0, a), ger(x, y)):
        f = gj.function([a, x, y], out, mode="FAST_RUN", on_unused_input="ignore")
        assert not f.native.fallback_nodes


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("big", [False, True])
def test_inplace_forms_overwrite_the_destroyed_input(mode, big):
    rng = np.random.default_rng(1)
    m, n = (40, 30) if big else (3, 2)
    a, x, y = gt.dmatrix("a"), gt.dvector("x"), gt.dvector("y")
    av, xv, yv = rng.normal(size=(m, n)), rng.normal(size=n), rng.normal(size=m)
    f = gj.function([a, x, gj.In(y, mutable=True)], Gemv(False, True, True)(y, 2.0, a, x, 0.5), mode=mode,
                    accept_inplace=True)
    ycopy = yv.copy()
    got = f(av, xv, ycopy)
    np.testing.assert_allclose(got, 0.5 * yv + 2.0 * (av @ xv), rtol=1e-12)
    np.testing.assert_allclose(ycopy, got, rtol=1e-12)       # y itself was overwritten
    g = gj.function([gj.In(a, mutable=True), y, x], Ger(True, True)(a, 2.0, y, x), mode=mode,
                    accept_inplace=True)
    acopy = av.copy()
    got = g(acopy, yv, xv)
    np.testing.assert_allclose(got, av + 2.0 * np.outer(yv, xv), rtol=1e-12)
    np.testing.assert_allclose(acopy, got, rtol=1e-12)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_inplace_forms_refuse_a_smaller_destroyed_input(mode):
    a, x, y = gt.dmatrix("a"), gt.dvector("x"), gt.dvector("y")
    f = gj.function([a, x, gj.In(y, mutable=True)], Gemv(False, True, True)(y, 1.0, a, x, 1.0), mode=mode,
                    accept_inplace=True)
    with pytest.raises(ValueError, match="cannot hold"):
        f(np.ones((3, 2)), np.ones(2), np.ones(1))
    g = gj.function([gj.In(a, mutable=True), y, x], Ger(True, True)(a, 1.0, y, x), mode=mode,
                    accept_inplace=True)
    with pytest.raises(ValueError, match="cannot hold"):
        g(np.ones((1, 2)), np.ones(3), np.ones(2))


def test_bad_inputs_raise_type_errors_naming_them():
    a, v = gt.dmatrix("a"), gt.dvector("v")
    with pytest.raises(TypeError, match="A must be a float32 or float64 matrix.*'v'"):
        gemv(v, v)
    with pytest.raises(TypeError, match="A must be a float32 or float64 matrix"):
        gemv(gt.lmatrix(), gt.lvector())
    with pytest.raises(TypeError, match="x must have the dtype of the other operands"):
        gemv(a, gt.fvector("f"))
    with pytest.raises(TypeError, match="alpha must be a real 0-d tensor"):
        gemv(a, v, alpha=v)
    with pytest.raises(TypeError, match="beta must be a real 0-d tensor"):
        gemv(a, v, 1.0, v, beta=a)
    with pytest.raises(TypeError, match="takes"):
        Gemv()(a, v)
    with pytest.raises(TypeError, match="y must be a float32 or float64 vector.*'a'"):
        ger(v, a)
    with pytest.raises(TypeError, match="A must have the dtype"):
        ger(v, v, 1.0, gt.fmatrix())
    with pytest.raises(ValueError, match="inplace"):
        Gemv(inplace=True)
    with pytest.raises(ValueError, match="inplace"):
        Ger(with_a=False, inplace=True)


def test_static_shapes_checked_and_propagated():
    a = gt.TensorType("float64", (3, 4))("a")
    with pytest.raises(ValueError, match="x has 5 elements but op\\(A\\) has 4 columns"):
        gemv(a, gt.TensorType("float64", (5,))("x"))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        gemv(a, gt.dvector(), 1.0, gt.TensorType("float64", (2,))("y"))
    assert gemv(a, gt.dvector()).type.shape == (3,)
    assert gemv(a, gt.dvector(), trans=True).type.shape == (4,)
    assert gemv(a, gt.dvector(), 1.0, gt.TensorType("float64", (1,))("y")).type.shape == (3,)
    assert ger(gt.dvector(), gt.TensorType("float64", (4,))(), 1.0, gt.TensorType("float64", (1, None))()
               ).type.shape == (None, 4)
    with pytest.raises(ValueError, match="cannot be broadcast"):
        ger(gt.TensorType("float64", (2,))(), gt.dvector(), 1.0, a)
    assert gemv(gt.fmatrix(), gt.fvector(), 2.0).dtype == "float32"   # a float alpha is cast


INFER = [
    (lambda a, x: gemv(a, x), [arr((3, 4)), arr((4,))]),
    (lambda a, x: gemv(a, x, trans=True), [arr((4, 3)), arr((4,))]),
    (lambda a, x, y: gemv(a, x, 1.0, y), [arr((3, 4)), arr((4,)), arr((3,))]),
    (lambda a, x, y: gemv(a, x, 1.0, y), [arr((3, 4)), arr((4,)), arr((1,))]),
    (lambda a, x, y: gemv(a, x, 1.0, y), [arr((1, 4)), arr((4,)), arr((5,))]),
    (lambda x, y: ger(x, y), [arr((3,)), arr((4,))]),
    (lambda a, x, y: ger(x, y, 1.0, a), [arr((3, 4)), arr((3,)), arr((4,))]),
    (lambda a, x, y: ger(x, y, 1.0, a), [arr((1, 4)), arr((3,)), arr((4,))]),
]


@pytest.mark.parametrize("k", range(len(INFER)))
def test_infer_shape(k):
    build, inputs = INFER[k]
    check_infer_shape(build, inputs)


@pytest.mark.parametrize("op, make_inputs", [
    (Gemv(), lambda: [gt.dscalar(), gt.dmatrix(), gt.dvector()]),
    (Gemv(True, True, True), lambda: [gt.fvector(), gt.fscalar(), gt.fmatrix(), gt.fvector(), gt.fscalar()]),
    (Ger(), lambda: [gt.dmatrix(), gt.dscalar(), gt.dvector(), gt.dvector()]),
    (Ger(False), lambda: [gt.dscalar(), gt.dvector(), gt.dvector()]),
], ids=lambda v: str(v) if hasattr(v, "make_node") else None)
def test_op_contract(op, make_inputs):
    check_op_contract(op, make_inputs)


R = np.random.default_rng(3)
GRADS = [
    ("gemv", lambda a, x: gemv(a, x, 1.5), [R.normal(size=(3, 4)), R.normal(size=4)]),
    ("gemv_T_y", lambda a, x, al, y, be: gemv(a, x, al, y, be, trans=True),
     [R.normal(size=(4, 3)), R.normal(size=4), np.array(0.7), R.normal(size=3), np.array(-1.3)]),
    ("gemv_y_broadcast", lambda a, x, y: gemv(a, x, 2.0, y, 3.0), [R.normal(size=(3, 4)), R.normal(size=4),
                                                                   R.normal(size=1)]),
    ("ger", lambda a, al, x, y: ger(x, y, al, a), [R.normal(size=(3, 4)), np.array(0.6), R.normal(size=3),
                                                   R.normal(size=4)]),
    ("ger_broadcast", lambda a, x, y: ger(x, y, 2.0, a), [R.normal(size=(1, 4)), R.normal(size=3),
                                                          R.normal(size=4)]),
    ("ger_no_a", lambda x, y: ger(x, y, -2.0), [R.normal(size=3), R.normal(size=4)]),
]


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("name, fun, pt", GRADS, ids=[g[0] for g in GRADS])
def test_grad(name, fun, pt, mode):
    verify_grad(fun, pt, mode=mode, rng=np.random.default_rng(0))


def test_rop_matches_finite_differences():
    from graphjit.gradient import Rop
    a, x = gt.dmatrix("a"), gt.dvector("x")
    va, vx = gt.dmatrix("va"), gt.dvector("vx")
    out = gemv(a, x, 2.0)
    f = gj.function([a, x, va, vx], Rop(out, [a, x], [va, vx]), mode="PY")
    av, xv, dav, dxv = R.normal(size=(3, 4)), R.normal(size=4), R.normal(size=(3, 4)), R.normal(size=4)
    np.testing.assert_allclose(f(av, xv, dav, dxv), 2.0 * (dav @ xv + av @ dxv), rtol=1e-12)
