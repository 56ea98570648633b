"""Issue 21's special functions and numpy ufuncs: values within 2 ulp of scipy/numpy on edge grids (natively,
no perform fallback), scipy's dtype rules, the op-test table in every mode, gradients, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import NullTypeGradError
from op_check import Case, arr, check_case
from special_table import ALL, BY_NAME, SPECIAL, UFUNCS, Fn, grid, max_ulp, reference, ulp_distance

FLOAT_FNS = [fn for fn in ALL if not fn.integer]
INT_FNS = [fn for fn in ALL if fn.integer]
# the input range of the op-test table (inside the domain, so values are finite and comparable)
RANGES = {"gammaln": (0.1, 8), "gamma": (0.1, 6), "digamma": (0.1, 8), "trigamma": (0.1, 8), "betaln": (0.1, 6),
          "gammainc": (0.1, 6), "gammaincc": (0.1, 6), "erfinv": (-0.99, 0.99), "erfcinv": (0.01, 1.99),
          "xlogy": (0, 5), "xlog1py": (-0.9, 5), "log1mexp": (-6, -0.01), "logit": (0.01, 0.99),
          "i0": (-6, 6), "i1": (-6, 6), "i0e": (-6, 6), "i1e": (-6, 6), "fmod": (0.5, 7), "cbrt": (-8, 8)}


def test_ulp_distance_helper() -> None:
    one = np.float64(1.0)
    assert max_ulp(np.array([one]), np.array([np.nextafter(one, 2)])) == 1
    assert max_ulp(np.array([0.0, np.nan, -np.inf]), np.array([-0.0, np.nan, -np.inf])) == 0
    assert max_ulp(np.array([np.nan]), np.array([1.0])) == np.inf
    tiny = np.finfo(np.float32).smallest_subnormal
    assert ulp_distance(np.array([-tiny], np.float32), np.array([tiny], np.float32))[0] == 2


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn", FLOAT_FNS, ids=str)
def test_within_two_ulp_of_scipy_on_edges(fn: Fn, dtype: str) -> None:
    """0, -0, negative integers, tiny, subnormal, huge, +-inf, NaN (and every pair of them for two inputs)."""
    values = grid(fn, dtype)
    want = reference(fn, *values)
    sym = [gt.TensorType(dtype, (None,))(f"x{i}") for i in range(fn.nin)]
    for mode in ("FAST_RUN", "PY"):
        f = gj.function(sym, fn.build(*sym), mode=mode)
        got = f(*values)
        assert got.dtype == want.dtype, (mode, got.dtype, want.dtype)
        worst = ulp_distance(got, want)
        at = int(np.argmax(worst))
        assert worst[at] <= 2, (f"{fn.name} {mode}: {worst[at]} ulp at {tuple(v[at] for v in values)}: "
                                f"{got[at]!r} vs {want[at]!r}")
        if mode == "FAST_RUN":
            assert f.native.fallback_nodes == [], f"{fn.name} runs its perform"


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("fn", INT_FNS, ids=str)
def test_integer_ufuncs_exact(fn: Fn, dtype: str) -> None:
    info = np.iinfo(dtype)
    edge = np.array([0, 1, 2, 3, 6, 12, 15, 35, 97, info.max, info.max - 1, info.min, info.min + 1,
                     info.max // 3], dtype=dtype)
    a, b = (v.ravel() for v in np.meshgrid(edge, edge, indexing="ij"))
    x, y = gt.vector("x", dtype=dtype), gt.vector("y", dtype=dtype)
    f = gj.function([x, y], fn.build(x, y), mode="FAST_RUN")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(f(a, b), fn.reference(a, b))
    assert f(a, b).dtype == fn.reference(a, b).dtype
    assert f.native.fallback_nodes == []


DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]


def _expected_dtype(fn: Fn, dtypes: tuple) -> str:
    values = [np.ones(2, d) for d in dtypes]
    if fn.name == "trigamma":           # not a scipy ufunc: psi's loops
        return str(reference(BY_NAME["digamma"], *values).dtype)
    if fn.name == "log1mexp":           # not in scipy: the rule of scipy's double-first ufuncs (gammaln's)
        return str(reference(BY_NAME["gammaln"], *values).dtype)
    if fn.name == "polygamma":          # scipy's own promotion through gamma and zeta
        return "float32" if dtypes == ("float32", "float32") else "float64"
    out = reference(fn, *values).dtype
    return "float32" if out == np.float16 else str(out)     # graphjit never computes in float16


@pytest.mark.parametrize("fn", [f for f in FLOAT_FNS if f.name != "softplus"], ids=str)
def test_dtype_rules_are_scipys(fn: Fn) -> None:
    for dts in ([(d,) for d in DTYPES] if fn.nin == 1 else
                [(a, b) for a in DTYPES for b in ("bool", "int8", "int32", "float32", "float64")]):
        sym = [gt.vector(f"x{i}", dtype=d) for i, d in enumerate(dts)]
        assert fn.build(*sym).dtype == _expected_dtype(fn, dts), (fn.name, dts)


def test_erf_and_erfc_follow_scipys_dtype_rule_too() -> None:
    import scipy.special as sp
    for name in ("erf", "erfc"):
        for d in DTYPES:
            want = getattr(sp, name)(np.ones(2, d)).dtype
            assert getattr(gt, name)(gt.vector("x", dtype=d)).dtype == want, (name, d)


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "bool"])
def test_integer_inputs_compute_natively_like_scipy(dtype: str) -> None:
    x = gt.vector("x", dtype=dtype)
    values = np.array([0, 1, 2, 5, 7], dtype=dtype)
    for name in ("gammaln", "digamma", "erfinv", "i0e", "logit", "expit", "cbrt", "rint", "deg2rad", "spacing"):
        fn = BY_NAME[name]
        f = gj.function([x], fn.build(x), mode="FAST_RUN")
        want = reference(fn, values)
        if want.dtype == np.float16:    # numpy's float16 loop: graphjit computes in float32 (docs/dtypes.md)
            want = reference(fn, values.astype(np.float32))
        got = f(values)
        assert f.native.fallback_nodes == [] and got.dtype == want.dtype, (name, got.dtype, want.dtype)
        assert max_ulp(got, want) <= 2, name


def _case(fn: Fn) -> Case:
    low, high = RANGES.get(fn.name, (-3.0, 3.0))
    if fn.name == "polygamma":
        return Case("polygamma", fn.build, lambda n, x: np.asarray(fn.reference(n, x), x.dtype),
                    [arr((3, 4), values=np.tile([0.0, 1.0, 2.0, 3.0], 3)), arr((4,), low=0.2, high=6)])
    if fn.integer:
        return Case(fn.name, fn.build, fn.reference, [arr((3, 4), low=-20, high=20), arr((4,), low=-20, high=20)],
                    dtypes=("int64", "int32", "uint8"))
    inputs = [arr((3, 4), low=low, high=high)] + [arr((4,), low=low, high=high)] * (fn.nin - 1)
    ref = (lambda *v: np.asarray(fn.reference(*v)).astype(v[0].dtype)) if fn.name != "trigamma" else fn.reference
    return Case(fn.name, fn.build, ref, inputs)


@pytest.mark.parametrize("case", [_case(fn) for fn in ALL], ids=str)
def test_op_table(case: Case) -> None:
    """Every mode, float32/float64, broadcasting, Fortran, strided, reversed and zero-size inputs."""
    check_case(case)


@pytest.mark.parametrize("fn", ALL, ids=str)
def test_bad_input_kind_names_the_input(fn: Fn) -> None:
    bad = gt.vector("weights", dtype="complex128" if not fn.integer else "float64")
    good = gt.vector("other", dtype="float64" if not fn.integer else "int64")
    with pytest.raises(TypeError, match="weights"):
        fn.build(*([bad] + [good] * (fn.nin - 1)))


@pytest.mark.parametrize("fn", [f for f in ALL if f.differentiable], ids=str)
def test_gradients_match_finite_differences(fn: Fn) -> None:
    rng = np.random.default_rng(3)
    low, high = fn.smooth
    values = [rng.uniform(low, high, 5) for _ in range(fn.nin)]
    if fn.name == "polygamma":
        values[0] = np.array([0.0, 1.0, 2.0, 1.0, 0.0])
    if fn.name in ("gammainc", "gammaincc"):
        values[0] = values[0] + 1.0
    fixed = [i for i in range(fn.nin) if i not in fn.differentiable]

    def build(*free):
        args, it = [], iter(free)
        for i in range(fn.nin):
            args.append(gt.constant(values[i]) if i in fixed else next(it))
        return fn.build(*args)

    free = [values[i] for i in range(fn.nin) if i in fn.differentiable]
    gj.verify_grad(build, free, mode="FAST_RUN", rng=np.random.default_rng(0))


def test_piecewise_constant_ufuncs_have_zero_gradients() -> None:
    x = gt.dvector("x")
    for build in (gt.rint, gt.spacing, lambda v: gt.copysign(2.0, v)):
        g = gj.grad(build(x).sum(), x)
        np.testing.assert_array_equal(gj.function([x], g, mode="FAST_RUN")(np.array([0.3, -1.7])), 0.0)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
def test_gammainc_derivative_in_a_against_mpmath(mode: str) -> None:
    import mpmath
    a_vals = np.array([0.5, 1.0, 2.0, 5.0, 10.0, 100.0, 1e4, 0.05, 30.0])
    x_vals = np.array([0.3, 1.0, 3.0, 2.0, 15.0, 90.0, 1.01e4, 2.0, 45.0])
    with mpmath.workdps(40):
        want = [float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, float(x), regularized=True), float(a)))
                for a, x in zip(a_vals, x_vals)]
    a, x = gt.dvector("a"), gt.dvector("x")
    ga, gc = gj.grad(gt.gammainc(a, x).sum(), a), gj.grad(gt.gammaincc(a, x).sum(), a)
    f = gj.function([a, x], [ga, gc, gt.gammainc_da(a, x)], mode=mode)
    got_p, got_q, direct = f(a_vals, x_vals)
    np.testing.assert_allclose(got_p, want, rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(got_q, -np.array(want), rtol=1e-10, atol=1e-300)
    edge = f(np.array([3.0, 3.0, 0.0, -1.0, 2.0, 3.0]), np.array([0.0, np.inf, 1.0, 1.0, np.nan, 800.0]))[2]
    np.testing.assert_array_equal(edge, [0.0, 0.0, np.nan, np.nan, np.nan, 0.0])
    if mode != "PY":
        assert f.native.fallback_nodes == []
    with pytest.raises(NullTypeGradError, match="not implemented"):
        gj.grad(ga.sum(), a)


def test_gradient_edges_are_finite_where_the_function_is_flat() -> None:
    x, y = gt.dvector("x"), gt.dvector("y")
    g = gj.grad(gt.xlogy(x, y).sum(), y)
    np.testing.assert_array_equal(gj.function([x, y], g, mode="FAST_RUN")(np.zeros(2), np.array([0.0, 2.0])), 0.0)
    g1 = gj.grad(gt.i1(x).sum() + gt.i1e(x).sum(), x)
    np.testing.assert_allclose(gj.function([x], g1, mode="FAST_RUN")(np.zeros(1)), [1.0])


def test_softplus_edges() -> None:
    x = gt.vector("x", dtype="float64")
    values = np.array([-np.inf, -1e308, -800.0, -40.0, 0.0, 40.0, 800.0, 1e308, np.inf, np.nan])
    for mode in ("PY", "FAST_RUN"):
        got = gj.function([x], gt.softplus(x), mode=mode)(values)
        with np.errstate(invalid="ignore"):
            want = np.logaddexp(0.0, values)
        assert max_ulp(got, want) <= 1, mode


def test_names_in_tensor_special_and_math() -> None:
    from graphjit.tensor import math as tmath, special as tspecial
    for fn in SPECIAL:
        assert getattr(tspecial, fn.name) is getattr(gt, fn.name) is getattr(tmath, fn.name)
    for fn in UFUNCS:
        assert getattr(tmath, fn.name) is getattr(gt, fn.name)
    assert gt.psi is gt.digamma and gt.expit is gt.sigmoid


@pytest.mark.parametrize("mode", ["PY", "FAST_COMPILE"])
def test_gradients_in_the_other_modes(mode: str) -> None:
    rng = np.random.default_rng(5)
    a, b = rng.uniform(0.5, 3.0, 4), rng.uniform(0.5, 3.0, 4)
    gj.verify_grad(lambda u, v: gt.gammaln(u) * gt.digamma(v) + gt.betaln(u, v) + gt.xlogy(u, v), [a, b],
                   mode=mode)
    gj.verify_grad(lambda u: gt.trigamma(u) + gt.logaddexp(u, -u) + gt.gammaincc(u + 1, u), [a], mode=mode)


def test_forward_mode_matches_reverse_mode() -> None:
    from graphjit.gradient import Rop
    x, v = gt.dvector("x"), gt.dvector("v")
    y = gt.gammaln(x) + gt.erfinv(x / 4) + gt.i1(x) + gt.polygamma(2.0, x)
    jvp = Rop(y, x, v)
    vjp = gj.grad((y * v).sum(), x)           # elementwise: the Jacobian is diagonal, so J v == J^T v
    f = gj.function([x, v], [jvp, vjp], mode="FAST_RUN")
    forward, reverse = f(np.array([0.5, 1.5, 3.0]), np.array([1.0, -2.0, 0.5]))
    np.testing.assert_allclose(forward, reverse, rtol=1e-12)
