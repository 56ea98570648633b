"""Random draws in a scan step (scan_module/random_draws.py): every step's draw made before the loop, the loop
native, the numbers and the generator's final state exactly numpy's step-by-step ones, in every mode."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scan_module.op import Scan
from tests.op_check import OP_TEST_MODES

# PY mode warns that every node runs perform; the LLVM modes compile everything (asserted)
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def _generator_copy(shared_rng):
    g = np.random.Generator(type(shared_rng.get_value(borrow=True).bit_generator)())
    g.bit_generator.state = shared_rng.get_value(borrow=True).bit_generator.state
    return g


def _same_state(a, b):
    return a.bit_generator.state == b.bit_generator.state


def _only_draws_fall_back(f, mode):
    """The Scan and the draws (hoisted before the loop or not) are native."""
    if mode == "PY":
        return
    assert f.native.fallback_nodes == []


@pytest.mark.parametrize("mode", OP_TEST_MODES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_normal_draws_match_numpy_step_by_step(mode, dtype):
    srng = gt.RandomStream(seed=3)
    x = gt.TensorType(dtype, (None, None))("x")
    loc = gt.dscalar("loc")
    out, updates = gj.scan(lambda xt, h, loc: h * 0.5 + xt + srng.normal(loc, 2.0, size=(3,), dtype=dtype),
                           sequences=x, outputs_info=gt.zeros((3,), dtype=dtype), non_sequences=loc)
    (rng,) = list(updates)
    f = gj.function([x, loc], out, updates=updates, mode=mode)
    _only_draws_fall_back(f, mode)
    xv = np.random.default_rng(0).normal(size=(5, 3)).astype(dtype)[::-1]        # a reversed view
    for call in range(2):
        g = _generator_copy(rng)
        h, want = np.zeros(3, dtype), []
        for row in xv:
            h = (h * dtype_type(dtype)(0.5) + row + g.normal(1.5, 2.0, (3,)).astype(dtype)).astype(dtype)
            want.append(h)
        got = f(xv, 1.5)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-13)
        assert _same_state(rng.get_value(borrow=True), g), f"call {call}: the generator's final state"


def dtype_type(dtype):
    return np.dtype(dtype).type


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_scalar_uniform_and_two_streams(mode):
    """Two draws (each stream draw has its own generator), scalar samples, the sample itself an output."""
    srng = gt.RandomStream(seed=11)
    n = gt.lscalar("n")
    (u, z), updates = gj.scan(lambda: [srng.uniform(-1.0, 3.0), srng.normal()], n_steps=n)
    gens = [rng for rng, _ in srng.state_updates]           # the uniform's generator, then the normal's
    assert set(gens) == set(updates)
    f = gj.function([n], [u, z], updates=updates, mode=mode)
    _only_draws_fall_back(f, mode)
    copies = [_generator_copy(g) for g in gens]
    got_u, got_z = f(4)
    np.testing.assert_array_equal(got_u, [copies[0].uniform(-1.0, 3.0) for _ in range(4)])
    np.testing.assert_array_equal(got_z, [copies[1].normal() for _ in range(4)])
    for g, c in zip(gens, copies):
        assert _same_state(g.get_value(borrow=True), c)
    before = [g.get_value(borrow=True).bit_generator.state for g in gens]
    got_u, got_z = f(0)                                       # zero steps: nothing drawn
    assert got_u.shape == (0,) and got_z.shape == (0,)
    assert [g.get_value(borrow=True).bit_generator.state for g in gens] == before


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_reseeding_reproduces_and_no_updates_still_advances(mode):
    srng = gt.RandomStream(seed=5)
    v = gt.dvector("v")
    out, updates = gj.scan(lambda vt: vt * srng.normal(0.0, 1.0, size=(2,)), sequences=v, go_backwards=True)
    f = gj.function([v], out, updates=updates, mode=mode)
    _only_draws_fall_back(f, mode)
    a, b = f(np.ones(3)), f(np.ones(3))
    assert not np.allclose(a, b)
    srng.seed(5)
    np.testing.assert_array_equal(f(np.ones(3)), a)
    g = gj.function([v], out, mode=mode)                     # the default update: still advanced
    assert not np.allclose(g(np.ones(3)), g(np.ones(3)))


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_draws_the_rewrite_leaves_in_the_loop(mode):
    """Parameters read from the step keep the draw in the loop: drawn natively there, with the same numbers."""
    srng = gt.RandomStream(seed=2)
    x = gt.dvector("x")
    out, updates = gj.scan(lambda xt: srng.normal(xt, 1.0), sequences=x)
    (rng,) = list(updates)
    f = gj.function([x], out, updates=updates, mode=mode)
    if mode != "PY":
        assert f.native.fallback_nodes == []
    g = _generator_copy(rng)
    xv = np.array([0.0, 10.0, -10.0])
    np.testing.assert_array_equal(f(xv), [g.normal(t, 1.0) for t in xv])
    assert _same_state(rng.get_value(borrow=True), g)


def test_negative_n_steps_raises():
    srng = gt.RandomStream(seed=1)
    n = gt.lscalar("n")
    out, updates = gj.scan(lambda: srng.normal(0.0, 1.0, size=(2,)), n_steps=n)
    f = gj.function([n], out, updates=updates, mode="FAST_RUN")
    with pytest.raises(ValueError, match="negative"):
        f(-1)
