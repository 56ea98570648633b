"""Native draws (link/llvm/ops/random*.py): numpy's own C distributions from libnpyrandom.a, called in numpy's order,
so FAST_RUN gives PY's numbers bit for bit and leaves the generator in PY's state; numpy's parameter checks; the
bit generator's lock; the fallback (with its reason) when the archive cannot be used."""

import os
import threading
import time
import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.fallback_warning import FallbackWarning
from graphjit.link.llvm.ir import fallback as fallback_module
from graphjit.link.llvm.jit import npyrandom
from graphjit.tensor.random import NormalRV, RandomStream, RandomVariable


class GammaRV(RandomVariable):
    """A distribution declared the way the contract says (c_draw, param_checks): the generic lowering draws it."""

    name, n_params = "gamma", 2
    c_draw = ("random_gamma", "double", ("double", "double"))
    param_checks = ("non_negative", "non_negative")

    def draw(self, rng, size, shape, scale):
        return rng.gamma(shape, scale, size)


def draws(mode, seed=3):
    """A function drawing from each native lowering (broadcast parameters, size, float32, zero-size) in mode."""
    srng = RandomStream(seed)
    loc, scale = gt.dvector("loc"), gt.dmatrix("scale")
    lo = gt.ivector("lo")
    outs = [srng.normal(loc, scale),
            srng.uniform(-1.0, loc, size=(2, 3), dtype="float32"),
            srng.integers(-5, 7, size=(4, 5), dtype="int8"),
            srng.integers(lo, np.int32(50), size=(3, 4), dtype="int32"),
            srng.integers(0, 2 ** 40, size=(6,)),
            srng.normal(0.0, 1.0, size=(0, 3)),
            srng.integers(5, 5, size=(0,))]        # numpy returns an empty sample before checking the bounds
    return gj.function([loc, scale, lo], outs, mode=mode), srng


def state(srng):
    return [rng.get_value(borrow=True).bit_generator.state for rng, _ in srng.state_updates]


def test_fast_run_draws_numpys_numbers_natively_and_leaves_numpys_state():
    f, fs = draws("FAST_RUN")
    assert f.native.fallback_nodes == []
    p, ps = draws("PY")
    args = (np.array([0.5, 1.5, 2.5]), np.array([[1.0], [2.0]]), np.arange(4, dtype="int32"))
    for _ in range(2):
        got, want = f(*args), p(*args)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
    assert state(fs) == state(ps)


def test_a_c_draw_class_and_a_draw_without_update_are_native():
    a, scale = gt.dvector("a"), gt.dscalar("scale")
    outs = [GammaRV("float32", True)(gj.shared(np.random.default_rng(4)), (2, 3), a, scale),
            NormalRV("float64")(gj.shared(np.random.default_rng(5)), a, 1.0)]     # no update: a copy each call
    f = gj.function([a, scale], outs)
    assert f.native.fallback_nodes == []
    values = (np.array([0.5, 1.0, 7.0]), 2.0)
    first, again = f(*values), f(*values)
    assert np.array_equal(first[0], np.random.default_rng(4).gamma(values[0], 2.0, (2, 3)).astype("float32"))
    assert np.array_equal(first[1], np.random.default_rng(5).normal(values[0], 1.0))
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    with pytest.raises(ValueError, match="GammaRV.*shape < 0"):
        f(np.array([1.0, -1.0, 1.0]), 1.0)


def test_normal_inline_on_pcg64_takes_numpys_slow_paths_too():
    """200,000 draws go through the ziggurat's wedge and tail (random_pcg64.py) about 1,500 times: numpy's numbers;
    another bit generator (Philox) takes numpy's own function."""
    srng = RandomStream(13)
    f = gj.function([], [srng.normal(1.0, 3.0, size=(200000,)), srng.normal(0.0, 1.0, size=(7,), dtype="float32")])
    assert "glue.rng.pcg64_normal" in f.native.llvm_ir
    gens = [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(13).spawn(2)]
    got = f()
    assert np.array_equal(got[0], gens[0].normal(1.0, 3.0, 200000))
    assert np.array_equal(got[1], gens[1].normal(0.0, 1.0, 7).astype("float32"))
    philox = gj.shared(np.random.Generator(np.random.Philox(5)))
    g = gj.function([], NormalRV("float64", True)(philox, (5,), 0.0, 1.0), updates=[])
    assert np.array_equal(g(), np.random.Generator(np.random.Philox(5)).normal(0.0, 1.0, 5))


def test_uniform_draws_inline_on_pcg64_keep_numpys_half_word():
    """random (float32: next_uint32, numpy's buffered half-word; float64: next_double) and uniform run PCG64 inline:
    numpy's numbers and state, from a generator with a half-word already buffered and with an odd count that
    leaves one buffered for the next call; Philox takes numpy's function."""
    import copy
    srng = RandomStream(3)
    x32, x64 = srng.random(size=(7,), dtype="float32"), srng.random(size=(3,))
    u = srng.uniform(-2.0, 3.0, size=(5,), dtype="float32")
    f = gj.function([], [x32, x64, u])
    assert "glue.rng.pcg64_uniform_f" in f.native.llvm_ir and "glue.rng.pcg64_uniform\"" in f.native.llvm_ir
    g = np.random.default_rng(5)
    g.random(dtype=np.float32)                        # half a word buffered
    x32.rng.set_value(copy.deepcopy(g), borrow=True)
    refs = [g] + [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(3).spawn(3)[1:]]
    for _ in range(2):
        got = f()
        want = [refs[0].random(7, dtype=np.float32), refs[1].random(3),
                refs[2].uniform(-2.0, 3.0, 5).astype("float32")]
        assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got, want))
    assert [v.rng.get_value().bit_generator.state for v in (x32, x64, u)] == [r.bit_generator.state for r in refs]
    philox = np.random.Generator(np.random.Philox(5))
    x32.rng.set_value(copy.deepcopy(philox), borrow=True)
    assert np.array_equal(f()[0], philox.random(7, dtype=np.float32))


def test_choice_with_replacement_follows_numpys_algorithm():
    def choices(mode):
        srng = RandomStream(4)
        a, p = gt.fvector("a"), gt.dvector("p")
        outs = [srng.choice(7, size=(3, 4)), srng.choice(a, size=(5,)), srng.choice(5, size=(6,), p=p),
                srng.choice(a, p=p), srng.choice(3, size=(0,))]
        return gj.function([a, p], outs, mode=mode), srng

    f, fs = choices("FAST_RUN")
    g, gs = choices("PY")
    assert f.native.fallback_nodes == []
    a, p = np.arange(5, dtype="float32") * 1.5, np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    for _ in range(2):
        for got, want in zip(f(a, p), g(a, p)):
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    assert state(fs) == state(gs)
    for bad, text in (([0.5, 0.5, 0.1, -0.1, 0.0], "not non-negative"), ([0.5, 0.5, 0.5, 0, 0], "do not sum to 1"),
                      ([np.nan] * 5, "contain NaN"), ([0.5] * 4, "a and p must have same size")):
        with pytest.raises(ValueError, match=text):
            f(a, np.array(bad))


def test_numpys_parameter_checks_natively():
    srng = RandomStream(0)
    scale, hi = gt.dvector("scale"), gt.lvector("hi")
    lo_s, hi_s = gt.lscalar("lo_s"), gt.lscalar("hi_s")
    f = gj.function([scale], srng.normal(0.0, scale))
    g = gj.function([hi], srng.integers(0, hi))
    h = gj.function([lo_s, hi_s], srng.integers(lo_s, hi_s, size=(2,), dtype="int8"))
    u = gj.function([scale], srng.uniform(0.0, scale))
    assert [fn.native.fallback_nodes for fn in (f, g, h, u)] == [[]] * 4
    with pytest.raises(ValueError, match="scale < 0"):
        f(np.array([1.0, -0.0]))
    assert np.isnan(f(np.array([np.nan]))[0])          # numpy lets a NaN scale through
    with pytest.raises(ValueError, match="high <= 0"):
        g(np.array([3, 0]))
    with pytest.raises(ValueError, match="high is out of bounds for int8"):
        h(0, 129)
    with pytest.raises(ValueError, match="low >= high"):
        h(4, 4)
    with pytest.raises(OverflowError, match="Range exceeds valid bounds"):
        u(np.array([np.inf]))
    with pytest.raises(ValueError, match="high - low < 0"):
        u(np.array([-1.0]))


def test_two_threads_share_one_generator_through_its_lock():
    srng = RandomStream(11)
    f = gj.function([], srng.integers(0, 2 ** 62, size=(100000,)))      # one next_uint64 per value
    assert f.native.fallback_nodes == []
    rng = srng.state_updates[0][0].get_value(borrow=True)
    reference = np.random.Generator(type(rng.bit_generator)())
    reference.bit_generator.state = rng.bit_generator.state
    # another thread holds numpy's lock: the native draw waits for it (with the GIL released)
    held, go, times = threading.Event(), threading.Event(), {}

    def holder():
        with rng.bit_generator.lock:
            held.set()
            go.wait()
            time.sleep(0.05)
            times["released"] = time.perf_counter()

    results = {"f": [], "numpy": []}

    def native():
        results["f"].append(f())
        times["drawn"] = time.perf_counter()

    t_hold = threading.Thread(target=holder, daemon=True)
    t_hold.start()
    held.wait()
    t_draw = threading.Thread(target=native, daemon=True)
    t_draw.start()
    t_draw.join(0.2)
    waited = t_draw.is_alive()                     # still waiting for the lock
    go.set()
    t_hold.join()
    t_draw.join()
    assert waited and times["drawn"] > times["released"]

    # both threads drawing at once: every value is one step of the one stream (no step lost or repeated)
    def natives():
        results["f"].extend(f() for _ in range(10))

    def direct():
        results["numpy"].extend(rng.integers(0, 2 ** 62, size=100000) for _ in range(10))

    threads = [threading.Thread(target=natives), threading.Thread(target=direct)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    drawn = np.concatenate(results["f"] + results["numpy"])
    assert np.array_equal(np.sort(drawn), np.sort(reference.integers(0, 2 ** 62, size=drawn.size)))
    assert srng.state_updates[0][0].get_value(borrow=True).bit_generator.state == reference.bit_generator.state
    with rng.bit_generator.lock:                   # numpy's lock is an RLock: a draw inside it does not deadlock
        assert f().shape == (100000,)


def test_without_numpys_archive_draws_keep_perform_and_say_why(monkeypatch):
    monkeypatch.setattr(npyrandom, "_STATE", {"error": "numpy's libnpyrandom.a could not be loaded (test)"})
    monkeypatch.setattr(fallback_module, "_WARNED", set())
    srng = RandomStream(5)
    with pytest.warns(FallbackWarning, match=r"why: NormalRV.*libnpyrandom\.a could not be loaded \(test\)"):
        f = gj.function([], srng.normal(2.0, 3.0, size=(3, 1, 2)))
    assert len(f.native.fallback_nodes) == 1
    want = np.random.Generator(np.random.PCG64(np.random.SeedSequence(5).spawn(1)[0])).normal(2.0, 3.0, (3, 1, 2))
    assert np.array_equal(f(), want)


def test_the_archive_is_read_as_numpy_ships_it():
    with open(npyrandom.archive_path(), "rb") as fh:
        members = dict(npyrandom.ar_members(fh.read()))
    assert any(name.endswith("distributions.c.o") for name in members)
    assert all(body.startswith(b"\x7fELF") for body in members.values())
    with pytest.raises(ValueError, match="not an ar archive"):
        npyrandom.ar_members(b"nothing")
    assert os.path.basename(npyrandom.archive_path()) == "libnpyrandom.a"


def test_a_scan_step_drawing_from_its_state_compiles_into_the_loop():
    def walk(mode):
        srng = RandomStream(8)
        x0 = gt.dvector("x0")
        steps, updates = gj.scan(lambda x: srng.normal(x, 1.0) + srng.uniform(0.0, x * x),
                                 outputs_info=x0, n_steps=5)
        return gj.function([x0], steps, updates=updates, mode=mode), srng

    f, fs = walk("FAST_RUN")
    p, ps = walk("PY")
    assert f.native.fallback_nodes == []
    x0 = np.array([0.5, -1.0])
    for _ in range(2):                              # the generators advance once per step, call after call
        assert np.array_equal(f(x0), p(x0))
    assert state(fs) == state(ps)


def test_a_chain_of_draws_from_one_generator_in_a_scan_step_compiles_into_the_loop():
    """draw2 reads draw1's new generator (PyTensor-style threading of rng): native, perform's numbers and state;
    a step returning the middle state (which its second draw advances) keeps perform, and its numbers."""
    def walk(mode, returned):
        rng = gj.shared(np.random.default_rng(4))
        x = gt.dvector("x")

        def step(xt, r):
            r1, a = NormalRV("float64")(r, 0.0, 1.0).owner.outputs
            r2, b = NormalRV("float64")(r1, 0.0, 2.0).owner.outputs
            return [xt + a * b], {r: r2 if returned == "last" else r1}
        out, updates = gj.scan(step, sequences=x, non_sequences=[rng])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FallbackWarning)
            return gj.function([x], out, updates=updates, mode=mode), rng

    for returned, fallbacks in (("last", []), ("middle", ["Scan"])):
        f, fr = walk("FAST_RUN", returned)
        p, pr = walk("PY", returned)
        assert [type(n.op).__name__ for n in f.native.fallback_nodes] == fallbacks
        for _ in range(2):
            assert np.array_equal(f(np.zeros(4)), p(np.zeros(4)))
        assert fr.get_value().bit_generator.state == pr.get_value().bit_generator.state


def test_a_function_with_draws_is_callable_from_numba():
    import numba
    srng = RandomStream(9)
    x = gt.dvector("x")
    f = gj.function([x], x * srng.normal(0.0, 1.0, size=(3,)))
    (rng, _), = srng.state_updates
    expected = np.random.Generator(np.random.PCG64())
    expected.bit_generator.state = rng.get_value().bit_generator.state

    @numba.njit
    def twice(a):
        return f(a), f(a)

    first, second = twice(np.full(3, 2.0))
    assert np.array_equal(first, 2.0 * expected.normal(0.0, 1.0, 3))
    assert np.array_equal(second, 2.0 * expected.normal(0.0, 1.0, 3))
    assert rng.get_value(borrow=True).bit_generator.state == expected.bit_generator.state
    srng.seed(9)                                    # the call reads the generator the variable holds now
    assert np.array_equal(twice(np.full(3, 2.0))[0], first)


THREADS_CHILD = """
import hashlib, sys
import numpy as np
import graphjit as gj, graphjit.tensor as gt
from graphjit.tensor.random import RandomStream
srng = RandomStream(21)
x = gt.dvector("x")
f = gj.function([x], gt.exp(x * srng.normal(0.0, 1.0, size=(400000,))) * 2.0 + 1.0)
assert f.native.fallback_nodes == [] and "GOMP_parallel" in f.native.llvm_ir
print(hashlib.sha256(f(np.full(400000, 0.5)).tobytes()).hexdigest())
"""


def test_the_numbers_do_not_depend_on_the_thread_count():
    """The draw runs on one thread; the fused loop after it is threaded (libgomp), same numbers either way."""
    import subprocess
    import sys
    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        proc = subprocess.run([sys.executable, "-c", THREADS_CHILD], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(proc.stdout.strip())
    assert outs[0] == outs[1] and len(outs[0]) == 64


def test_debug_mode_checks_draws_like_any_op():
    """DebugMode runs each draw's perform and its compiled form from the same state: they agree, and the
    numbers are PY's."""
    def draws(mode):
        srng = RandomStream(5)
        x = gt.dvector("x")
        out = x * srng.normal(0, 1, size=(3,)) + srng.gamma(2.0, 1.0, size=(3,)) + srng.choice(5, size=(3,),
                                                                                              replace=False)
        return gj.function([x], out, mode=mode)
    f, p = draws("DebugMode"), draws("PY")
    for _ in range(2):
        assert np.array_equal(f(np.ones(3)), p(np.ones(3)))
