"""Every distribution of RandomStream: numpy's numbers for numpy's call (PY and FAST_RUN equal), static and
inferred shapes, zero-size draws, numpy's ValueError for bad parameters."""

import numpy as np
import pytest
import scipy.stats

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.random import RandomStream
from op_check import arr, check_infer_shape, check_op_contract
from graphjit import function

MODES = ["PY", "FAST_RUN"]   # FAST_RUN draws natively: the same numbers as numpy's (PY's perform)

SEED = 11
P3 = np.array([0.2, 0.5, 0.3])
COV = np.array([[2.0, 0.6], [0.6, 1.0]])


def gen():
    """The generator of the first draw of RandomStream(SEED)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(SEED).spawn(1)[0]))


def _categorical(g, p, size):
    u = g.random(size)
    cdf = np.cumsum(p, axis=-1)[..., :-1]
    return (u[..., None] >= cdf).sum(-1)


def _truncnorm(g, loc, scale, lo, hi, size):
    return scipy.stats.truncnorm.ppf(g.random(size), (lo - loc) / scale, (hi - loc) / scale, loc, scale)


# (name, the draw from a stream, numpy's numbers from the draw's generator); compositions compare to 1e-12
DRAWS = [
    ("normal", lambda s: s.normal(np.zeros((2, 1)), [1.0, 2.0, 3.0]),
     lambda g: g.normal(np.zeros((2, 1)), [1.0, 2.0, 3.0])),
    ("uniform", lambda s: s.uniform(-1.0, [1.0, 2.0], size=(3, 2)), lambda g: g.uniform(-1.0, [1.0, 2.0], (3, 2))),
    ("standard_normal", lambda s: s.standard_normal(size=(4,)), lambda g: g.standard_normal((4,))),
    ("standard_normal_f32", lambda s: s.standard_normal(size=(4,), dtype="float32"),
     lambda g: g.standard_normal((4,), dtype="float32")),
    ("random", lambda s: s.random(size=(2, 2)), lambda g: g.random((2, 2))),
    ("random_f32", lambda s: s.random(size=(3,), dtype="float32"), lambda g: g.random((3,), dtype="float32")),
    ("integers", lambda s: s.integers(3, [5, 9], size=(2, 2)), lambda g: g.integers(3, [5, 9], (2, 2))),
    ("choice_p", lambda s: s.choice(5, size=(4,), p=[0.1, 0.2, 0.3, 0.2, 0.2]),
     lambda g: g.choice(5, (4,), p=[0.1, 0.2, 0.3, 0.2, 0.2])),
    ("choice_no_replace", lambda s: s.choice(np.arange(6.0), size=(3,), replace=False),
     lambda g: g.choice(np.arange(6.0), (3,), replace=False)),
    ("permutation_n", lambda s: s.permutation(6), lambda g: g.permutation(6)),
    ("permutation_axis1", lambda s: s.permutation(np.arange(12.0).reshape(3, 4), axis=1),
     lambda g: g.permutation(np.arange(12.0).reshape(3, 4), axis=1)),
    ("permuted", lambda s: s.permuted(np.arange(12.0).reshape(3, 4), axis=1),
     lambda g: g.permuted(np.arange(12.0).reshape(3, 4), axis=1)),
    ("bernoulli", lambda s: s.bernoulli([0.2, 0.9], size=(3, 2)), lambda g: (g.random((3, 2)) < [0.2, 0.9]) * 1),
    ("binomial", lambda s: s.binomial(10, [0.3, 0.6]), lambda g: g.binomial(10, [0.3, 0.6])),
    ("binomial_theano_defaults", lambda s: s.binomial(size=(5,)), lambda g: g.binomial(1, 0.5, (5,))),
    ("poisson", lambda s: s.poisson([1.0, 30.0], size=(2, 2)), lambda g: g.poisson([1.0, 30.0], (2, 2))),
    ("exponential", lambda s: s.exponential([1.0, 2.0]), lambda g: g.exponential([1.0, 2.0])),
    ("gamma", lambda s: s.gamma([0.5, 3.0], 2.0), lambda g: g.gamma([0.5, 3.0], 2.0)),
    ("beta", lambda s: s.beta(0.5, [2.0, 3.0], size=(2, 2)), lambda g: g.beta(0.5, [2.0, 3.0], (2, 2))),
    ("dirichlet", lambda s: s.dirichlet([1.0, 2.0, 0.5], size=(2,)), lambda g: g.dirichlet([1.0, 2.0, 0.5], (2,))),
    ("dirichlet_batched", lambda s: s.dirichlet([[1.0, 2.0], [0.05, 0.02]]),
     lambda g: np.stack([g.dirichlet([1.0, 2.0]), g.dirichlet([0.05, 0.02])])),
    ("categorical", lambda s: s.categorical(P3, size=(5,)), lambda g: _categorical(g, P3, (5,))),
    ("categorical_batched", lambda s: s.categorical([P3, P3[::-1]]),
     lambda g: _categorical(g, np.stack([P3, P3[::-1]]), (2,))),
    ("multinomial", lambda s: s.multinomial([5, 10], P3), lambda g: g.multinomial([5, 10], P3)),
    ("multivariate_normal", lambda s: s.multivariate_normal([1.0, -1.0], COV, size=(3,)),
     lambda g: g.multivariate_normal([1.0, -1.0], COV, (3,), method="cholesky")),
    ("multivariate_normal_batched", lambda s: s.multivariate_normal([[1.0, -1.0], [0.0, 0.0]], COV),
     lambda g: np.stack([g.multivariate_normal(m, COV, method="cholesky") for m in ([1.0, -1.0], [0.0, 0.0])])),
    ("laplace", lambda s: s.laplace(1.0, [1.0, 2.0]), lambda g: g.laplace(1.0, [1.0, 2.0])),
    ("logistic", lambda s: s.logistic(1.0, [1.0, 2.0]), lambda g: g.logistic(1.0, [1.0, 2.0])),
    ("lognormal", lambda s: s.lognormal([0.0, 1.0], 0.5), lambda g: g.lognormal([0.0, 1.0], 0.5)),
    ("gumbel", lambda s: s.gumbel(size=(3,)), lambda g: g.gumbel(0.0, 1.0, (3,))),
    ("student_t", lambda s: s.student_t([3.0, 10.0], 1.0, 2.0), lambda g: 1.0 + 2.0 * g.standard_t([3.0, 10.0])),
    ("cauchy", lambda s: s.cauchy(1.0, 2.0, size=(3,)), lambda g: 1.0 + 2.0 * g.standard_cauchy((3,))),
    ("halfnormal", lambda s: s.halfnormal([0.0, 1.0], 2.0), lambda g: [0.0, 1.0] + 2.0 * abs(g.standard_normal(2))),
    ("truncated_normal", lambda s: s.truncated_normal(1.0, 2.0, [-1.0, 3.0], [0.0, np.inf]),
     lambda g: _truncnorm(g, 1.0, 2.0, np.array([-1.0, 3.0]), np.array([0.0, np.inf]), (2,))),
    ("geometric", lambda s: s.geometric([0.2, 0.9], size=(2, 2)), lambda g: g.geometric([0.2, 0.9], (2, 2))),
    ("negative_binomial", lambda s: s.negative_binomial(3, [0.4, 0.7]), lambda g: g.negative_binomial(3, [0.4, 0.7])),
    ("vonmises", lambda s: s.vonmises(0.5, [0.0, 2.0, 1e-9]), lambda g: g.vonmises(0.5, [0.0, 2.0, 1e-9])),
    ("weibull", lambda s: s.weibull([0.5, 2.0], size=(2, 2)), lambda g: g.weibull([0.5, 2.0], (2, 2))),
]
COMPOSED = {"bernoulli", "categorical", "categorical_batched", "student_t", "cauchy", "halfnormal", "truncated_normal"}


@pytest.fixture(scope="module")
def draws_by_mode():
    outs = [build(RandomStream(SEED)) for _, build, _ in DRAWS]
    # no updates: both modes draw from the generators in their first state
    return outs, {mode: function([], outs, mode=mode, no_default_updates=True)() for mode in MODES}


@pytest.mark.parametrize("k", range(len(DRAWS)), ids=[d[0] for d in DRAWS])
def test_numpy_numbers_in_every_mode(draws_by_mode, k):
    name, _, ref = DRAWS[k]
    outs, got = draws_by_mode
    want = np.asarray(ref(gen()))
    assert outs[k].type.shape == tuple(s if s is None else want.shape[i] for i, s in enumerate(outs[k].type.shape))
    for mode in MODES:
        g = got[mode][k]
        assert g.shape == want.shape and g.dtype == outs[k].dtype, (mode, g.shape, g.dtype)
        if name in COMPOSED:
            np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12, err_msg=mode)
        else:
            np.testing.assert_array_equal(g, want.astype(g.dtype), err_msg=mode)
    np.testing.assert_array_equal(got["PY"][k], got["FAST_RUN"][k])


def test_every_draw_carries_its_generator():
    srng = RandomStream(SEED)
    for _, build, _ in DRAWS:
        rv = build(srng)
        assert rv.update[0] is rv.rng and rv.rng.default_update is rv.update[1]
    assert [u[0] for u in srng.updates()] == [u[0] for u in srng.state_updates]
    assert len(srng.updates()) == len(DRAWS)


# --- zero-size draws ---------------------------------------------------------------------------

ZERO = [
    (lambda s: s.normal(size=(2, 0)), (2, 0)), (lambda s: s.standard_normal(size=(0,)), (0,)),
    (lambda s: s.random(size=(0, 3)), (0, 3)), (lambda s: s.integers(5, size=(0,)), (0,)),
    (lambda s: s.binomial(size=(0,)), (0,)), (lambda s: s.poisson(np.ones((0, 2))), (0, 2)),
    (lambda s: s.gamma(np.ones(0)), (0,)), (lambda s: s.vonmises(0.0, 1.0, size=(0,)), (0,)),
    (lambda s: s.dirichlet(np.ones(3), size=(0,)), (0, 3)), (lambda s: s.dirichlet(np.ones((0, 3))), (0, 3)),
    (lambda s: s.multinomial(np.ones(0, "int64"), P3), (0, 3)),
    (lambda s: s.multivariate_normal(np.zeros((0, 2)), COV), (0, 2)),
    (lambda s: s.categorical(P3, size=(0,)), (0,)), (lambda s: s.cauchy(size=(0,)), (0,)),
    (lambda s: s.truncated_normal(np.zeros(0), 1.0, -1.0, 1.0), (0,)), (lambda s: s.permutation(0), (0,)),
    (lambda s: s.permuted(np.ones((0, 2)), axis=1), (0, 2)), (lambda s: s.choice(3, size=(0,)), (0,)),
]


def test_zero_size_draws():
    srng = RandomStream(SEED)
    outs = [build(srng) for build, _ in ZERO]
    for mode in MODES:
        got = function([], outs, mode=mode)()
        assert [g.shape for g in got] == [shape for _, shape in ZERO], mode


# --- bad parameters: numpy's ValueError, naming the parameter ----------------------------------

# (name, method, its parameters as (value, bad value or None)); one compiled function holds every draw
BAD = [
    ("normal", "normal", [(0.0, None), (1.0, -1.0)], "scale < 0"),
    ("uniform", "uniform", [(0.0, None), (1.0, -1.0)], "high - low < 0"),
    ("exponential", "exponential", [(1.0, -1.0)], "scale < 0"),
    ("gamma", "gamma", [(1.0, -1.0), (1.0, None)], "shape < 0"),
    ("beta", "beta", [(1.0, 0.0), (1.0, None)], "a <= 0"),
    ("laplace", "laplace", [(0.0, None), (1.0, -1.0)], "scale < 0"),
    ("lognormal", "lognormal", [(0.0, None), (1.0, -1.0)], "sigma < 0"),
    ("weibull", "weibull", [(1.0, -1.0)], "a < 0"),
    ("vonmises", "vonmises", [(0.0, None), (1.0, -1.0)], "kappa < 0"),
    ("student_t", "student_t", [(3.0, 0.0)], "df <= 0"),
    ("cauchy", "cauchy", [(0.0, None), (1.0, -1.0)], "scale < 0"),
    ("halfnormal", "halfnormal", [(0.0, None), (1.0, -1.0)], "scale < 0"),
    ("poisson", "poisson", [(1.0, -1.0)], "lam < 0"),
    ("geometric", "geometric", [(0.5, 0.0)], "p <= 0"),
    ("binomial", "binomial", [(np.int64(3), None), (0.5, 1.5)], "p > 1"),
    ("negative_binomial", "negative_binomial", [(3.0, None), (0.5, 0.0)], "p <= 0"),
    ("bernoulli", "bernoulli", [(0.5, 1.5)], "p > 1"),
    ("truncated_normal", "truncated_normal", [(0.0, None), (1.0, None), (-1.0, 2.0), (1.0, None)], "lower >= upper"),
]
BAD_VECTOR = [
    ("dirichlet", "dirichlet", [([1.0, 1.0], [1.0, -1.0])], "alpha"),
    ("multinomial", None, [([0.5, 0.5], [1.5, 0.0])], "pvals"),
    ("categorical", "categorical", [([0.5, 0.5], [0.5, 0.4])], "do not sum to 1"),
    ("choice", None, [([0.5, 0.5], [0.5, 0.4])], "sum to 1"),
]


def _bad_graph():
    srng = RandomStream(SEED)
    inputs, outs, cases = [], [], []
    for name, method, params, msg in BAD + BAD_VECTOR:
        syms = []
        for good, bad in params:
            v = gt.as_tensor_variable(good)
            sym = v.type() if bad is not None else v
            if bad is not None:
                inputs.append(sym)
                cases.append((name, len(inputs) - 1, good, bad, msg))
            syms.append(sym)
        if name == "multinomial":
            outs.append(srng.multinomial(3, syms[0]))
        elif name == "choice":
            outs.append(srng.choice(2, size=(2,), p=syms[0]))
        else:
            outs.append(getattr(srng, method)(*syms))
    return inputs, outs, cases


@pytest.fixture(scope="module")
def bad_functions():
    inputs, outs, cases = _bad_graph()
    return {mode: function(inputs, outs, mode=mode) for mode in MODES}, cases


def test_good_parameters_draw(bad_functions):
    fns, cases = bad_functions
    values = [np.asarray(good) for _, _, good, _, _ in cases]
    for mode, f in fns.items():
        assert len(f(*values)) == len(BAD) + len(BAD_VECTOR), mode


@pytest.mark.parametrize("name", [c[0] for c in BAD + BAD_VECTOR])
def test_bad_parameter_raises_numpys_value_error(bad_functions, name):
    fns, cases = bad_functions
    values = [np.asarray(good) for _, _, good, _, _ in cases]
    (_, i, _, bad, msg), = [c for c in cases if c[0] == name]
    values[i] = np.asarray(bad, dtype=values[i].dtype)
    for mode, f in fns.items():
        with pytest.raises(ValueError, match=msg):
            f(*values)


def test_bad_covariance_is_numpy_s_error():
    srng = RandomStream(SEED)
    cov = gt.dmatrix("cov")
    for mode in MODES:
        f = function([cov], srng.multivariate_normal([0.0, 0.0], cov), mode=mode)
        with pytest.raises(ValueError):        # numpy.linalg.LinAlgError, a ValueError
            f(np.array([[1.0, 2.0], [2.0, 1.0]]))


# --- shapes ------------------------------------------------------------------------------------

def test_static_shapes_of_multivariate_draws():
    s = RandomStream(0)
    assert s.dirichlet(gt.tensor("float64", (None, 3))).type.shape == (None, 3)
    assert s.dirichlet(gt.dvector(), size=(4, 2)).type.shape == (4, 2, None)
    assert s.multinomial(gt.tensor("int64", (5, 1)), gt.tensor("float64", (2, 3))).type.shape == (5, 2, 3)
    assert s.multivariate_normal(gt.tensor("float64", (4, 2)), gt.tensor("float64", (None, 2))).type.shape == (4, 2)
    assert s.categorical(gt.tensor("float64", (6, 3))).type.shape == (6,)
    assert s.permutation(gt.lscalar()).type.shape == (None,)
    f32 = [s.cauchy(size=(3,), dtype="float32"), s.halfnormal(gt.fvector(), 1.0, dtype="float32"),
           s.student_t(3.0, 0.0, 1.0, size=(2,), dtype="float32"), s.truncated_normal(size=(2,), dtype="float32")]
    assert [x.dtype for x in f32] == ["float32"] * 4
    assert s.cauchy(gt.fvector()).dtype == gj.config.floatX        # floatX, as the numpy draws
    with pytest.raises(ValueError):
        s.multinomial(gt.tensor("int64", (5,)), gt.tensor("float64", (2, 3)))
    with pytest.raises(TypeError):
        s.dirichlet(gt.dscalar())
    with pytest.raises(TypeError):
        s.multinomial(2.5, P3)
    with pytest.raises(TypeError):
        s.poisson(1.0, dtype="float64")
    with pytest.raises(TypeError):
        s.gamma(1.0, dtype="int64")
    with pytest.raises(TypeError):
        s.standard_normal(dtype="float16")


INFER = [
    (lambda a: RandomStream(0).dirichlet(a), [arr((4, 3), low=0.5)]),
    (lambda a: RandomStream(0).dirichlet(a[0], size=gt.as_tensor([a.shape[0], 2])), [arr((4, 3), low=0.5)]),
    (lambda n, p: RandomStream(0).multinomial(n, p), [arr((2, 1), "int64", low=1, high=5), arr((3, 4), low=0, high=0.2)]),
    (lambda m, c: RandomStream(0).multivariate_normal(m, c[0][None] * 0 + np.eye(3)),
     [arr((2, 3)), arr((1, 3, 3))]),
    (lambda p: RandomStream(0).categorical(p / p.sum(-1, keepdims=True)), [arr((5, 3), low=0.1, high=1)]),
    (lambda n: RandomStream(0).permutation(n), [arr((), "int64", low=3, high=6)]),
    (lambda x: RandomStream(0).permuted(x, axis=0), [arr((3, 2))]),
    (lambda x: RandomStream(0).cauchy(x, 2.0), [arr((3, 2))]),
]


@pytest.mark.parametrize("build, inputs", INFER)
def test_infer_shape(build, inputs):
    check_infer_shape(build, inputs)


def test_op_contract():
    from graphjit.tensor.random import random_generator_type
    from graphjit.tensor.random_continuous import GammaRV
    from graphjit.tensor.random_multivariate import MultivariateNormalRV
    from graphjit.tensor.random_permute import PermutedRV
    check_op_contract(GammaRV("float32", True), lambda: [random_generator_type(), (2,), 1.0, gt.dvector()])
    check_op_contract(MultivariateNormalRV("float64"), lambda: [random_generator_type(), gt.dvector(), gt.dmatrix()])
    check_op_contract(PermutedRV("float64", axis=1), lambda: [random_generator_type(), gt.dmatrix()])


def test_c_draw_declarations():
    """The classes numpy draws with one libnpyrandom call per element declare it (the native side's contract)."""
    from graphjit.tensor import random_continuous as rc, random_discrete as rd, random_elementwise as re_
    from graphjit.tensor.random import NormalRV, UniformRV, RandomVariable
    declared = [NormalRV, rc.ExponentialRV, rc.GammaRV, rc.BetaRV, rc.LaplaceRV, rc.LogisticRV, rc.GumbelRV,
                rc.LognormalRV, rc.WeibullRV, rc.VonMisesRV, rc.StandardTRV, rc.StandardCauchyRV, rd.PoissonRV,
                rd.GeometricRV]
    for cls in declared:
        fn, result, args = cls.c_draw
        assert fn.startswith("random_") and result in ("double", "int64") and len(args) == cls.n_params, cls
        assert len(cls.param_checks) == cls.n_params, cls
    for cls in (UniformRV, rd.BinomialRV, rd.NegativeBinomialRV):
        assert cls.c_draw is None and RandomVariable.param_checks == ()
    assert re_.StandardNormalRV("float32").c_draw == ("random_standard_normal_f", "float", ())
    assert re_.RandomRV("float64").c_draw == ("random_standard_uniform", "double", ())
