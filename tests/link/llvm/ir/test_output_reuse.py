"""Large outputs view a recycled buffer once every earlier result is gone (ir/output_reuse.py)."""

import threading

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.ir.output_reuse import OUTPUT_REUSE_MIN_BYTES

N = OUTPUT_REUSE_MIN_BYTES // 8 + 7            # float64 items just above the threshold


def data_ptr(a):
    return a.__array_interface__["data"][0]


@pytest.fixture(scope="module")
def f():
    x, y = gt.dvector("x"), gt.dvector("y")
    return gj.function([x, y], gt.exp(x) * y + 1.0)


def test_reused_only_when_every_result_is_gone(f):
    rng = np.random.default_rng(0)
    a, b = rng.random(N), rng.random(N)
    first = f(a, b)
    np.testing.assert_allclose(first, np.exp(a) * b + 1)
    second = f(a * 2, b)                                        # first is alive: another buffer
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(first, np.exp(a) * b + 1)        # untouched by the second call
    np.testing.assert_allclose(second, np.exp(a * 2) * b + 1)
    kept = data_ptr(second)
    del first, second
    third = f(a, b)
    assert data_ptr(third) == kept                              # the last buffer, recycled
    np.testing.assert_allclose(third, np.exp(a) * b + 1)
    view = third[::3]
    del third
    fourth = f(a * 3, b)                                        # a view of the result keeps it alive
    assert not np.shares_memory(view, fourth)
    np.testing.assert_allclose(view, (np.exp(a) * b + 1)[::3])
    f.native.release_buffers()
    np.testing.assert_allclose(f(a, b), np.exp(a) * b + 1)


def test_shape_or_dtype_change_and_small_outputs():
    x = gt.fvector("x")
    g = gj.function([x], x * 2.0)
    a = np.arange(2 * N, dtype="float32")
    np.testing.assert_array_equal(g(a), a * 2)
    np.testing.assert_array_equal(g(a[:N]), a[:N] * 2)           # another shape: a new buffer
    out = g(a[:N])
    assert out.dtype == np.float32 and not out.flags.owndata and out.flags.c_contiguous and out.flags.writeable
    small = g(a[:10])
    assert small.flags.owndata                                  # below the threshold: an ordinary array


def test_two_outputs_never_share_and_threads():
    x = gt.dvector("x")
    h = gj.function([x], [x + 1.0, x * 2.0])
    a = np.linspace(0, 1, N)
    p, q = h(a)
    assert not np.shares_memory(p, q)
    np.testing.assert_allclose(p, a + 1)
    np.testing.assert_allclose(q, a * 2)
    errors = []

    def work(k):
        for _ in range(20):
            u, v = h(a * k)
            if not (np.allclose(u, a * k + 1) and np.allclose(v, a * k * 2)):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1.0, 3.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
