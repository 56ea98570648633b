"""Theano's RandomStreams surface, written as Theano's tutorial ("Using Random Numbers") writes it, and the
reproducibility of a seed: across processes, modes and a pickle round trip."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import graphjit as theano
import graphjit.tensor as T
from graphjit.sandbox.rng_mrg import MRG_RandomStreams
from graphjit.tensor.random import RandomStream as RandomStreams
from graphjit import function

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def test_tutorial_brief_example_and_seeding():
    srng = RandomStreams(seed=234)
    rv_u = srng.uniform(size=(2, 2))            # Theano: srng.uniform((2, 2)) (size first: refused, see below)
    rv_n = srng.normal(size=(2, 2))
    f = function([], rv_u)
    g = function([], rv_n, no_default_updates=True)    # not updating rv_n.rng
    nearly_zeros = function([], rv_u + rv_u - 2 * rv_u)
    f_val0, f_val1 = f(), f()
    assert not np.array_equal(f_val0, f_val1)
    g_val0, g_val1 = g(), g()
    np.testing.assert_array_equal(g_val0, g_val1)
    np.testing.assert_allclose(nearly_zeros(), 0.0, atol=1e-15)

    # Seeding streams: one draw's generator (Theano: rng_val.seed(89234) on the numpy RandomState)
    rng_val = rv_u.rng.get_value(borrow=True)
    rng_val = np.random.default_rng(89234)
    rv_u.rng.set_value(rng_val, borrow=True)
    np.testing.assert_array_equal(f(), np.random.default_rng(89234).uniform(0.0, 1.0, (2, 2)))
    # ... or all of them
    srng.seed(902340)
    a = f()
    srng.seed(902340)
    np.testing.assert_array_equal(f(), a)


def test_tutorial_sharing_streams_between_functions():
    srng = RandomStreams(seed=234)
    rv_u = srng.uniform(size=(2, 2))
    f = function([], rv_u)
    nearly_zeros = function([], rv_u + rv_u - 2 * rv_u)
    # Theano: rv_u.rng.get_value().get_state() / rng.set_state(...): numpy Generators keep it in bit_generator
    state_after_v0 = rv_u.rng.get_value().bit_generator.state
    nearly_zeros()       # this affects rv_u's generator
    v1 = f()
    rng = rv_u.rng.get_value(borrow=True)
    rng.bit_generator.state = state_after_v0
    rv_u.rng.set_value(rng, borrow=True)
    v2 = f()             # v2 != v1
    v3 = f()             # v3 == v1
    assert not np.array_equal(v1, v2)
    np.testing.assert_array_equal(v1, v3)


class Graph:
    def __init__(self, seed=123):
        self.rng = RandomStreams(seed)
        self.y = self.rng.uniform(size=(1,))


def copy_random_state(g1, g2):
    if isinstance(g1.rng, MRG_RandomStreams):
        g2.rng.rstate = g1.rng.rstate
    for (su1, su2) in zip(g1.rng.state_updates, g2.rng.state_updates):
        su2[0].set_value(su1[0].get_value())


def test_tutorial_copying_random_state_between_graphs():
    g1 = Graph(seed=123)
    f1 = function([], g1.y)
    g2 = Graph(seed=987)
    f2 = function([], g2.y)
    assert f1() != f2()             # by default, the two functions are out of sync
    copy_random_state(g1, g2)
    assert f1() == f2()
    assert g1.rng.rstate.entropy == g2.rng.rstate.entropy == 123


def test_mrg_random_streams_is_random_stream():
    assert MRG_RandomStreams is RandomStreams is T.RandomStream
    srng = MRG_RandomStreams(seed=1)
    f = function([], [srng.uniform(size=(3,)), srng.normal(size=(3,), avg=5.0, std=0.001),
                      srng.binomial(size=(4,), p=0.5), srng.truncated_normal(size=(3,), avg=1.0, std=0.1)])
    u, n, b, t = f()
    assert ((0 <= u) & (u < 1)).all() and np.allclose(n, 5.0, atol=0.01)
    assert set(b) <= {0, 1} and b.dtype == np.int64 and ((0.8 <= t) & (t <= 1.2)).all()


def test_theano_keywords_and_defaults():
    srng = RandomStreams(3)
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(3).spawn(1)[0]))
    draw = function([], srng.normal(avg=2.0, std=3.0, size=(4,)), mode="PY")()
    np.testing.assert_array_equal(draw, gen.normal(2.0, 3.0, (4,)))
    with pytest.raises(TypeError, match="both loc and Theano's avg"):
        srng.normal(1.0, avg=2.0)
    with pytest.raises(TypeError, match="looks like a shape"):
        srng.binomial((2, 2), 1, 0.5)        # Theano's binomial(size, n, p)
    with pytest.raises(TypeError, match="looks like a shape"):
        srng.truncated_normal((3,))


def _draws(seed):
    srng = RandomStreams(seed)
    return [srng.normal(size=(3,)), srng.integers(100, size=(3,)), srng.dirichlet([1.0, 2.0]),
            srng.cauchy(size=(2,)), srng.binomial(5, 0.5, size=(3,))]


CHILD = """
import json, numpy as np, graphjit as gj
from graphjit.tensor.random import RandomStream
srng = RandomStream(77)
outs = [srng.normal(size=(3,)), srng.integers(100, size=(3,)), srng.dirichlet([1.0, 2.0]),
        srng.cauchy(size=(2,)), srng.binomial(5, 0.5, size=(3,))]
f = gj.function([], outs, mode="PY")
print(json.dumps([[np.asarray(v).tolist() for v in f()] for _ in range(2)]))
"""


def test_same_seed_same_numbers_in_another_process():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    f = theano.function([], _draws(77), mode="PY")
    here = [[np.asarray(v).tolist() for v in f()] for _ in range(2)]
    assert child == here


def test_same_seed_same_numbers_in_every_mode():
    got = [[function([], _draws(8), mode=mode)() for _ in range(2)] for mode in ("PY", "FAST_RUN")]
    for call_py, call_fast in zip(*got):
        for a, b in zip(call_py, call_fast):
            np.testing.assert_array_equal(a, b)


def test_state_after_a_pickle_round_trip():
    srng = RandomStreams(9)
    f = function([], _draws(9)[:2] + [srng.gamma(2.0, size=(2,))])
    f()
    g = pickle.loads(pickle.dumps(f))
    for _ in range(2):                          # the copy continues from the state the original had
        for a, b in zip(f(), g()):
            np.testing.assert_array_equal(a, b)
    rng = srng.state_updates[0][0]
    restored = pickle.loads(pickle.dumps(rng.get_value()))
    assert restored.bit_generator.state == rng.get_value().bit_generator.state
