"""A Function call with its updates is atomic with respect to other calls sharing its state (compile/locking.py)."""

import threading

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.locking import container_lock, ordered_locks

N_THREADS, N_CALLS, SIZE = 8, 2000, 16_384 + 7   # big enough for the in-place update to run without the GIL


def _hammer(*functions, n_threads=N_THREADS, n_calls=N_CALLS, check=None):
    """Run n_calls of functions[t % len] in each of n_threads threads; collect failures of check."""
    start, problems = threading.Barrier(n_threads), []

    def run(t):
        fn = functions[t % len(functions)]
        start.wait()
        try:
            for _ in range(n_calls):
                out = fn()
                if check is not None and not check(out):
                    problems.append(out)
        except Exception as e:  # noqa: BLE001 - reported by the test
            problems.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return problems


@pytest.mark.parametrize("mode", ["FAST_RUN", "PY"])
def test_no_update_is_lost_from_threads(mode):
    w = gj.shared(np.zeros(SIZE), name="w")
    f = gj.function([], [], updates=[(w, w + 1)], mode=mode)
    n_calls = N_CALLS if mode == "FAST_RUN" else 200
    _hammer(f, n_calls=n_calls)
    v = w.get_value()
    assert v.min() == v.max() == N_THREADS * n_calls        # exactly, and every element alike (never torn)


def test_two_functions_updating_one_variable_from_threads():
    w = gj.shared(np.zeros(SIZE), name="w")
    inc = gj.function([], [], updates=[(w, w + 1)])
    dec = gj.function([], [], updates=[(w, w - 2)])
    _hammer(inc, dec)
    v = w.get_value()
    assert v.min() == v.max() == (N_THREADS // 2) * N_CALLS * (1 - 2)


def test_readers_never_see_a_torn_value():
    w = gj.shared(np.zeros(SIZE), name="w")
    inc = gj.function([], [], updates=[(w, w + 1)])
    snapshot = gj.function([], w * 1.0)                   # reads only: takes the lock too
    torn = _hammer(inc, snapshot, lambda: w.get_value(),
                   n_threads=6, n_calls=500, check=lambda out: not isinstance(out, np.ndarray) or out.min() == out.max())
    assert torn == []
    assert w.get_value()[0] == 2 * 500


def test_functions_holding_several_variables_in_opposite_orders_do_not_deadlock():
    a, b = gj.shared(np.zeros(SIZE), name="a"), gj.shared(np.zeros(SIZE), name="b")
    ab = gj.function([], [], updates=[(a, a + b + 1), (b, b + 1)])
    ba = gj.function([], [], updates=[(b, b + 1), (a, a + 1)])
    done = []
    runner = threading.Thread(target=lambda: done.append(_hammer(ab, ba, n_threads=4, n_calls=300)))
    runner.start()
    runner.join(timeout=120)
    assert done, "deadlock"
    assert b.get_value()[0] == 4 * 300


def test_lock_order_and_sharing():
    w = gj.shared(np.zeros(3))
    v = gj.shared(np.zeros(3))
    assert container_lock(w.container) is container_lock(w.clone().container)
    assert container_lock(w.container)[0] < container_lock(v.container)[0]
    locks = ordered_locks([v.container, w.container, v.container])
    assert locks == (container_lock(w.container)[1], container_lock(v.container)[1])


def test_stateless_functions_take_no_lock():
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], x + y)
    assert f._locks == () and f._fast_guard is None
    w = gj.shared(np.zeros(2))
    g = gj.function([x], x + w)
    assert g._locks == (container_lock(w.container)[1],)
