"""Failed statuses leave a function through its one exit block (ir/context.exit_if_failed / exit_with): a large
(compact) graph still reports each failing node by its own message, node and line, and keeps working after it."""

import inspect

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt

# one step per line: an error's "Created at" line tells which step failed
STEPS = [
    lambda o, v: gt.tanh(o * 1.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 2.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 3.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 4.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 5.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 6.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 7.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 8.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 9.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 10.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 11.0 + v) + o.sum(axis=1, keepdims=True),
    lambda o, v: gt.tanh(o * 12.0 + v) + o.sum(axis=1, keepdims=True),
]
DOT_AFTER = 6


def _reference(a, vs, w):
    out = a
    for k, v in enumerate(vs):
        out = np.tanh(out * (k + 1.0) + v) + out.sum(axis=1, keepdims=True)
        if k == DOT_AFTER:
            out = out @ w
    return out


@pytest.fixture(scope="module")
def big():
    x, w = gt.dmatrix("x"), gt.dmatrix("w")
    vs = [gt.dvector(f"v{k}") for k in range(len(STEPS))]
    out = x
    for k, (step, v) in enumerate(zip(STEPS, vs)):
        out = step(out, v)
        if k == DOT_AFTER:
            out = gt.dot(out, w)          # the line of this dot is in the error below
    return gj.function([x, *vs, w], out)


def _inputs(n=4, rows=3):
    rng = np.random.default_rng(0)
    return rng.normal(size=(rows, n)), [rng.normal(size=n) for _ in STEPS], rng.normal(size=(n, n)) / n


def test_big_graph_shares_one_exit(big):
    text = big.native.llvm_ir
    entry = text[text.index('_entry"('):]
    entry = entry[:entry.index("\n}\n")]
    assert entry.count('\nfail:\n') == 1                # one exit block in the entry...
    assert "ret i32 %" not in entry.replace('ret i32 %"status"', "")   # ...and no other status return
    a, vs, w = _inputs()
    np.testing.assert_allclose(big(a, *vs, w), _reference(a, vs, w), rtol=1e-10)


@pytest.mark.parametrize("k", [0, 5, 11])
def test_broadcast_failure_names_its_node(big, k):
    a, vs, w = _inputs()
    bad = list(vs)
    bad[k] = np.ones(5)
    line = inspect.getsourcelines(STEPS[k])[1]
    with pytest.raises(ValueError, match=r"lengths 4 and 5 in dimension 1") as info:
        big(a, *bad, w)
    message = str(info.value)
    assert "Apply node that caused the error: Elemwise{add}" in message
    assert message.endswith(f"test_failure_exit.py:{line}"), message
    # the next call with good inputs is right (the failed call released what it held)
    np.testing.assert_allclose(big(a, *vs, w), _reference(a, vs, w), rtol=1e-10)


def test_dot_failure_names_the_dot(big):
    a, vs, w = _inputs()
    with pytest.raises(ValueError, match=r"shapes not aligned") as info:
        big(a, *vs, np.eye(3))
    assert "Apply node that caused the error: Dot(" in str(info.value)
    np.testing.assert_allclose(big(a, *vs, w), _reference(a, vs, w), rtol=1e-10)


def test_allocation_failure_leaves_through_the_exit():
    x, y = gt.dvector("x"), gt.dvector("y")
    out = gt.outer(x, y)
    for k in range(10):                   # a compact graph: the temporaries are allocated through the glue
        out = gt.tanh(out * (k + 1.0)) + out.sum(axis=1, keepdims=True)
    f = gj.function([x, y], out)
    huge = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(1 << 21,), strides=(0,))
    with pytest.raises(MemoryError):
        f(huge, huge)
    a, b = np.linspace(-1, 1, 3), np.linspace(0, 1, 4)
    want = np.outer(a, b)
    for k in range(10):
        want = np.tanh(want * (k + 1.0)) + want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(f(a, b), want, rtol=1e-10)
