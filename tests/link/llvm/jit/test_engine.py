"""Compiled code is freed with its last user, and stays valid while any user holds it (link/llvm/jit/engine.py)."""

import gc
import os
import pickle
import weakref

import numba
import numpy as np
import pytest

import graphjit as gj
import graphjit.numba  # noqa: F401 - registers the numba typing of Functions
import graphjit.tensor as gt
from graphjit.link.llvm.cache import in_memory
from graphjit.link.llvm.jit.compiler import get_compiler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

# The memory a dropped graph leaves behind (cold and warm): test_memory_residue.py.


@pytest.mark.soak
def test_a_dropped_function_frees_its_library():
    x = gt.dvector("x")
    f = gj.function([x], x * 3.25 + 0.125)
    lib = weakref.ref(f.native._compiled.library)
    for _ in range(in_memory.RECENT):           # push it out of the recent list
        gj.function([x], x * 3.25 + 0.125 + np.float64(_ + 1.5))
    gc.collect()
    assert lib() is not None, "freed while its Function lives"
    np.testing.assert_allclose(f(np.ones(2)), [3.375, 3.375])
    del f
    gc.collect()
    assert lib() is None, "the code outlived its last Function"


@pytest.mark.soak
def test_the_code_stays_valid_while_any_user_holds_it():
    x = gt.dvector("x")
    f = gj.function([x], gt.exp(x) * 1.75 - 0.5)
    a = np.linspace(0, 1, 4)
    want = np.exp(a) * 1.75 - 0.5
    copy = f.copy()
    clone = pickle.loads(pickle.dumps(f))
    direct = f.fn.native_call                     # the builtin alone (holds the library)
    lib = weakref.ref(f.native._compiled.library)
    del f
    in_memory.clear()
    compiler = get_compiler()
    compiler._libraries.clear()
    for k in range(in_memory.RECENT + 2):       # other graphs come and go, reusing freed memory
        gj.function([x], x + (k + 0.5))(a)
        gc.collect()
    for user in (copy, clone, direct):
        np.testing.assert_allclose(user(a), want)
    del copy, clone, user
    gc.collect()
    np.testing.assert_allclose(direct(a), want)
    assert lib() is not None
    del direct
    gc.collect()
    assert lib() is None


def test_a_numba_caller_keeps_the_code():
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], x * y + 2.5)
    lib = weakref.ref(f.native._compiled.library)

    @numba.njit
    def caller(a, b):
        return f(a, b)

    a = np.arange(3.0)
    np.testing.assert_allclose(caller(a, a), a * a + 2.5)
    del f
    in_memory.clear()
    gc.collect()
    assert lib() is not None                     # the numba type of f keeps its library
    np.testing.assert_allclose(caller(a, a), a * a + 2.5)


def test_buffers_are_released_when_the_last_function_goes():
    x = gt.dvector("x")
    f = gj.function([x], gt.exp(gt.exp(x) * 2.0) + gt.sum(x))
    compiled = f.native._compiled
    f(np.ones(1000))
    g = gj.function([x], gt.exp(gt.exp(x) * 2.0) + gt.sum(x))
    assert g.native._compiled is compiled and compiled.users == 2
    del f
    gc.collect()
    assert compiled.users == 1
    del g
    gc.collect()
    assert compiled.users == 0
