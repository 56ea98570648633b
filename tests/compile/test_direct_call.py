"""Functions whose vectorcall is the compiled wrapper (compile/vectorcall.py): same behaviour, no Python frame."""

import gc
import platform
import threading
import weakref

import numpy as np
import pytest

import graphjit
import graphjit.tensor as T
from graphjit.compile import vectorcall
from graphjit.compile.compiled_function import Function
from graphjit.link.llvm.jit.ir_prep import GLUE_SMALL


def _direct(f) -> bool:
    native = vectorcall.vectorcall_of(f) == getattr(f.fn, "function_call_address", -1)
    assert native == (f.call_path == "native")
    return native


@pytest.fixture
def add():
    x, y = T.dvector("x"), T.dvector("y")
    return graphjit.function([x, y], x + y, name="add")


def test_supported_on_cpython():
    if platform.python_implementation() == "CPython":
        assert vectorcall.supported()
        assert Function.__flags__ & vectorcall._HAVE_VECTORCALL


def test_simple_function_calls_the_wrapper_directly(add):
    assert isinstance(add, Function) and _direct(add)
    x, y = np.random.rand(5), np.random.rand(5)
    np.testing.assert_array_equal(add(x, y), x + y)
    np.testing.assert_array_equal(add(x[::-2], y[::2]), x[::-2] + y[::2])


def test_everything_else_reaches_the_python_path(add):
    x = np.random.rand(3)
    np.testing.assert_array_equal(add(x, y=x), 2 * x)
    np.testing.assert_array_equal(add(y=x, x=[1.0, 2.0, 3.0]), x + [1, 2, 3])
    np.testing.assert_array_equal(add([1, 2, 3], x), x + [1, 2, 3])
    assert add(x, x, output_subset=[0])[0].shape == (3,)
    with pytest.raises(TypeError, match="missing argument 1"):
        add(x)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        add(x, x, x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        add(x, z=x)
    with pytest.raises(TypeError, match="argument 0.*'x'"):
        add(np.ones((2, 2)), x)
    with pytest.raises(ValueError, match="shape"):
        add(x, np.ones(4))
    np.testing.assert_array_equal(add.__call__(x, x), 2 * x)      # tp_call goes through _call


def test_stateful_and_multi_output_functions_are_direct_too():
    x = T.dvector("x")
    s = graphjit.shared(np.zeros(2), name="s")
    with_update = graphjit.function([x], x + 1, updates=[(s, s + x)])
    two = graphjit.function([x], [x + 1, x * 2])
    as_list = graphjit.function([x], [x + 1])
    for f in (with_update, two, as_list):
        assert _direct(f)
    v = np.array([1.0, 2.0])
    with_update(v)
    with_update(v)
    np.testing.assert_array_equal(s.get_value(), 2 * v)
    assert isinstance(as_list(v), list) and len(two(v)) == 2


def _fncall_body(f) -> str:
    return f.fn.native.llvm_ir.split(f"{f.fn.native._compiled.library.prefix}fncall\"(", 1)[1].split("\n}\n", 1)[0]


def _stateful(n: int):
    xs = [T.dvector(f"x{k}") for k in range(n)]
    s = graphjit.shared(np.zeros(2), name="s")
    return s, graphjit.function(xs, sum(xs[1:], xs[0]), updates=[(s, s + xs[0])])


def test_slow_paths_of_a_large_graph_s_function_share_one_exit(cache_dir, monkeypatch):
    """With a light glue (a large graph) the locks are released, and the held cell values dropped, in one block
    every refused argument branches to (cpython/wrapper.py, Wrapper.slow), not once per check (W5: 15 copies)."""
    from graphjit.link.llvm.driver import native_entry
    monkeypatch.setattr(native_entry, "LIGHT_GLUE_MIN_INSTRUCTIONS", 0)     # a small graph's glue made light
    s, f = _stateful(6)
    body = _fncall_body(f)
    assert _direct(f) and f.fn.native._compiled.library._parts[-1][1] is True
    assert body.count('@"fncall.slow_path"') <= 3 and body.count('@"glue.fncall.unlock"') <= 5
    v = np.ones(2)
    with pytest.raises(TypeError, match="argument 5"):
        f(v, v, v, v, v, np.ones((2, 2)))                   # refused after the lock: released on the way out
    with pytest.raises(ValueError, match="shape"):
        f(v, v, v, v, np.ones(3), v)
    np.testing.assert_array_equal(f(v, v, v, v, v, x5=v), 6 * v)           # a keyword: through glue.fncall.arg
    f(v, v, v, v, v, v)
    np.testing.assert_array_equal(s.get_value(), 2 * v)     # both calls took and released the lock


def test_a_small_graph_s_function_keeps_an_exit_per_check(cache_dir):
    _, f = _stateful(2)                                     # its glue gets the small glue's pipeline
    assert _fncall_body(f).count('@"glue.fncall.unlock"') > 5
    assert _direct(f) and f.fn.native._compiled.library._parts[-1][1] == GLUE_SMALL


def test_py_mode_functions_use_the_python_path():
    x = T.dvector("x")
    f = graphjit.function([x], x + 1, mode="PY")
    assert not _direct(f)
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])


def test_copies_and_pickles_are_direct_too(add):
    import pickle
    for g in (add.copy(), pickle.loads(pickle.dumps(add))):
        assert _direct(g)
        np.testing.assert_array_equal(g(np.ones(2), np.ones(2)), [2.0, 2.0])


def test_function_is_collected():
    x = T.dvector("x")
    f = graphjit.function([x], x + 1)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_concurrent_direct_calls(add):
    x = np.random.rand(50_000)
    out = []
    threads = [threading.Thread(target=lambda: out.extend(add(x, x) for _ in range(20))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 80 and all(np.array_equal(r, 2 * x) for r in out)


def test_dask_tokenizes_a_function_by_code_and_state():
    """dask special-cases functools.partial: a Function must tokenize finitely, by its code and shared values."""
    base = pytest.importorskip("dask.base")
    x = T.dvector("x")
    s = graphjit.shared(np.zeros(2), name="s")
    f, same, other = (graphjit.function([x], x + s), graphjit.function([x], x + s), graphjit.function([x], x - s))
    assert base.tokenize(f) == base.tokenize(f) == base.tokenize(same) != base.tokenize(other)
    before = base.tokenize(f)
    s.set_value(np.ones(2))
    assert base.tokenize(f) != before
