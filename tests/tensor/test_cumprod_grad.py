"""cumprod's gradient (and R_op) without division: exact where the input has zeros, against an O(n^2) numpy
reference of dL/dx_k = sum_{i>=k} g_i prod_{j<=i, j!=k} x_j, in every mode and layout."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from graphjit.tensor.extra_ops import CumprodDiff
from op_check import OP_TEST_MODES, Case, arr, check_case, check_infer_shape, check_op_contract


def _vjp_1d(x, g):
    """The exact formula, term by term (no division)."""
    out = np.zeros(len(x), dtype=np.float64)
    for k in range(len(x)):
        for i in range(k, len(x)):
            out[k] += g[i] * np.prod([x[j] for j in range(i + 1) if j != k], dtype=np.float64)
    return out


def _jvp_1d(x, v):
    """d(cumprod(x))_i in the direction v: sum_{k<=i} v_k prod_{j<=i, j!=k} x_j."""
    out = np.zeros(len(x), dtype=np.float64)
    for i in range(len(x)):
        for k in range(i + 1):
            out[i] += v[k] * np.prod([x[j] for j in range(i + 1) if j != k], dtype=np.float64)
    return out


def _along(fn, axis):
    """fn of two 1-d arrays applied along axis (over the flattened inputs for axis None)."""
    def ref(x, g):
        dtype = np.result_type(x, g)
        if axis is None:
            return fn(x.ravel(), g.ravel()).reshape(x.shape).astype(dtype)
        out = np.zeros(np.broadcast_shapes(x.shape, g.shape))
        xm, gm, om = (np.moveaxis(a, axis, -1) for a in (x, g, out))
        for idx in np.ndindex(xm.shape[:-1]):
            om[idx] = fn(xm[idx], gm[idx])
        return out.astype(dtype)
    return ref


def _grad_of_cumprod(axis):
    return lambda x, g: gj.grad((gt.cumprod(x, axis) * (g.flatten() if axis is None else g)).sum(), x)


def _rop_of_cumprod(axis):
    return lambda x, v: gj.Rop(gt.cumprod(x, axis), x, v)


ZERO_VALUES = {
    "one_zero": [[2.0, 0.0, 3.0, 1.5], [0.5, -1.0, 2.0, 0.0], [1.0, 2.0, -3.0, 0.5]],
    "several_zeros": [[0.0, 2.0, 0.0, 3.0], [1.5, 0.0, 0.0, 2.0], [0.0, 0.0, 4.0, 0.0]],
    "all_zeros": np.zeros((3, 4)),
    "first_last": [[0.0, 2.0, 3.0, 0.0], [0.0, -1.5, 2.0, 1.0], [1.0, 2.0, 3.0, 0.0]],
}
AXES = {"flat": None, "axis0": 0, "axis1": 1, "neg_axis": -1}

CASES = []
for _vname, _values in ZERO_VALUES.items():
    for _aname, _axis in AXES.items():
        CASES.append(Case(f"grad_{_vname}_{_aname}", _grad_of_cumprod(_axis), _along(_vjp_1d, _axis),
                          [arr((3, 4), values=_values), arr((3, 4))], zero_size=False))
    CASES.append(Case(f"rop_{_vname}", _rop_of_cumprod(1), _along(_jvp_1d, 1),
                      [arr((3, 4), values=_values), arr((3, 4))], zero_size=False))
for _aname, _axis in AXES.items():     # random inputs, and the zero-size ones (every length 4 set to 0)
    CASES.append(Case(f"grad_random_{_aname}", _grad_of_cumprod(_axis), _along(_vjp_1d, _axis),
                      [arr((3, 4)), arr((3, 4))], zero_len=4))
CASES += [
    Case("grad_3d_neg_axis", _grad_of_cumprod(-2), _along(_vjp_1d, -2),
         [arr((2, 3, 4), values=np.where(np.arange(24) % 5 == 0, 0.0, np.arange(24) / 9.0 - 1.0)),
          arr((2, 3, 4))], zero_size=False),
    Case("grad_vector_zero_first", _grad_of_cumprod(0), _along(_vjp_1d, 0),
         [arr((5,), values=[0.0, 2.0, 3.0, 4.0, 5.0]), arr((5,))], zero_size=False),
    Case("grad_vector_zero_last", _grad_of_cumprod(None), _along(_vjp_1d, None),
         [arr((5,), values=[2.0, 3.0, 4.0, 5.0, 0.0]), arr((5,))], zero_size=False),
    Case("grad_scalar", _grad_of_cumprod(None), _along(_vjp_1d, None), [arr(()), arr((1,))]),
    Case("rop_random_flat", _rop_of_cumprod(None), lambda x, v: _along(_jvp_1d, None)(x, v).ravel(),
         [arr((3, 4)), arr((3, 4))], zero_len=4),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_cumprod_grad_exact_at_zeros(case):
    check_case(case)


def test_old_division_form_would_fail():
    """The reference is not the division form: at a zero that one is nan/inf, this one is finite."""
    x, g = np.array([2.0, 0.0, 3.0]), np.ones(3)
    np.testing.assert_array_equal(_vjp_1d(x, g), [1.0, 2.0 + 6.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        assert not np.isfinite(np.cumsum((g * np.cumprod(x))[::-1])[::-1] / x).all()


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_verify_grad_through_zeros(mode, axis):
    pt = np.array([[0.0, 1.5, -2.0, 0.0], [1.2, 0.0, 0.0, 0.7], [0.0, 0.0, 0.0, 0.0]])
    verify_grad(lambda x: gt.cumprod(x, axis), [pt], mode=mode, rng=np.random.default_rng(0))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_transposed_form_has_its_gradient_in_v(mode):
    """CumprodDiff is linear in v; its gradient in v is the other form (what Rop's Lop fallback uses)."""
    x = np.array([[0.0, 1.5, -2.0, 0.0], [1.2, 0.0, 0.8, 0.7]])
    for transpose in (True, False):
        verify_grad(lambda v: CumprodDiff(1, transpose)(gt.constant(x), v), [np.ones((2, 4)) * 0.3],
                    mode=mode, rng=np.random.default_rng(1))


def test_fast_run_is_native_float32():
    x, g = gt.fmatrix("x"), gt.fmatrix("g")
    f = gj.function([x, g], _grad_of_cumprod(-1)(x, g), mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    xv = np.array([[0.0, 2.0, 0.0, 3.0]], dtype="float32")
    got = f(xv, np.ones_like(xv))
    assert got.dtype == "float32"
    np.testing.assert_array_equal(got, [[1.0 + 2.0 + 0.0 + 0.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("axis", [0, 1, None])
def test_second_derivative_away_from_zeros(mode, axis):
    """The gradient's derivative in x (Hessians through cumprod), checked by finite differences and against the
    Hessian of a closed form on nonzero inputs."""
    w = np.random.default_rng(3).uniform(0.5, 1.5, size=(3, 4))
    weight = w.ravel() if axis is None else w         # axis None: cumprod of the flattened x
    gj.verify_grad(lambda x: gj.grad((gt.cumprod(x, axis=axis) * weight).sum(), x), [w[::-1] * 1.1], mode=mode)
    v = gt.dvector("v")
    cost = (gt.cumprod(v) * np.array([1.0, -2.0, 0.5])).sum()
    H = gj.function([v], gj.hessian(cost, v), mode=mode)(np.array([2.0, 3.0, -1.5]))
    a, b, c = 2.0, 3.0, -1.5              # cost = a - 2ab + 0.5abc
    want = [[0, -2 + 0.5 * c, 0.5 * b], [-2 + 0.5 * c, 0, 0.5 * a], [0.5 * b, 0.5 * a, 0]]
    np.testing.assert_allclose(H, want, rtol=1e-12)


def test_derivative_in_x_of_the_forward_form_is_reported_not_wrong():
    x, t = gt.dvector("x"), gt.dvector("t")
    jv = gj.Rop(gt.cumprod(x), x, t)
    with pytest.raises(Exception, match="forward derivative"):
        gj.grad(jv.sum(), x)


def test_shapes_must_agree():
    f = gj.function([x := gt.dvector("x"), v := gt.dvector("v")], CumprodDiff(0, True)(x, v), mode="FAST_RUN")
    with pytest.raises(ValueError, match="shapes differ"):
        f(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="one rank"):
        CumprodDiff(0, True)(gt.dvector(), gt.dmatrix())


@pytest.mark.parametrize("transpose", [True, False])
def test_op_contract_and_infer_shape(transpose):
    check_op_contract(CumprodDiff(1, transpose), lambda: [gt.dmatrix(), gt.dmatrix()])
    check_infer_shape(lambda x, v: CumprodDiff(1, transpose)(x, v), [arr((3, 4)), arr((3, 4))])
