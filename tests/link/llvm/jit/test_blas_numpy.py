"""The BLAS behind graphjit's products: numpy's own OpenBLAS through ILP64 shims (link/llvm/jit/blas_library.py)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.ir import blas_shims
from graphjit.link.llvm.jit import blas_library
from graphjit.link.llvm.jit.runtime import BLAS_SIGNATURES, _INFO, ensure_blas


def test_the_source_is_numpys_library_when_numpy_bundles_one():
    ensure_blas()
    expected = "numpy" if blas_library._loaded_library() else "scipy"
    assert _INFO.blas_source == expected
    assert set(_INFO.blas) == set(BLAS_SIGNATURES)


def test_parse_marks_the_integer_arguments():
    ret, ints = blas_shims._parse(BLAS_SIGNATURES["sdot"])
    assert ret == "float" and ints == [True, False, True, False, True]
    ret, ints = blas_shims._parse(BLAS_SIGNATURES["dgemm"])
    assert ret == "void" and ints.count(True) == 6 and not ints[0] and not ints[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_routine_through_the_shims_matches_numpy(dtype):
    """gemm (both transpositions), gemv, dot and ger reach BLAS with the right lengths and strides."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((70, 50)).astype(dtype), rng.standard_normal((50, 40)).astype(dtype)
    v, u = rng.standard_normal(50).astype(dtype), rng.standard_normal(70).astype(dtype)
    x, y = gt.matrix("x", dtype=dtype), gt.matrix("y", dtype=dtype)
    p, q = gt.vector("p", dtype=dtype), gt.vector("q", dtype=dtype)
    f = gj.function([x, y, p, q], [gt.dot(x, y), gt.dot(y.T, x.T), gt.dot(x, p), gt.dot(p, p),
                                   x + gt.outer(q, p)], mode="FAST_RUN")
    tol = 2e-5 if dtype == "float32" else 1e-12
    wants = [a @ b, b.T @ a.T, a @ v, v @ v, a + np.outer(u, v)]
    for got, want in zip(f(a, b, v, u), wants):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_graphjit_blas_env_keeps_scipys_library():
    code = textwrap.dedent("""
        import numpy as np, graphjit as gj, graphjit.tensor as gt
        from graphjit.link.llvm.jit.runtime import _INFO
        x = gt.dmatrix("x")
        f = gj.function([x], gt.dot(x, x.T))
        a = np.arange(12.0).reshape(3, 4)
        assert np.allclose(f(a), a @ a.T)
        print(_INFO.blas_source)
    """)
    env = dict(os.environ, GRAPHJIT_BLAS="scipy")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "scipy"


def test_the_shims_live_in_the_graphs_own_module():
    """With numpy's library a product calls an internal shim of its own module over gj_np_<name>."""
    if ensure_blas() and _INFO.blas_source != "numpy":
        pytest.skip("numpy's bundled OpenBLAS is not loadable here: scipy's LP64 routines are called directly")
    x = gt.dmatrix("x")
    f = gj.function([x], gt.dot(x, x.T), mode="FAST_RUN")
    text = f.native.llvm_ir
    assert 'define internal void @"glue.blas.dgemm"' in text and '@"gj_np_dgemm"' in text
    assert '@"gj_dgemm"' not in text


def test_the_plan_key_depends_on_the_blas_source(monkeypatch):
    from graphjit.link.llvm import linker
    from graphjit.link.llvm.cache import keys
    from graphjit.link.llvm.jit.compiler import get_compiler
    key = keys.plan_key(("some", "signature"), linker._host(get_compiler()))
    monkeypatch.setattr(linker, "blas_source", lambda: "other")
    assert keys.plan_key(("some", "signature"), linker._host(get_compiler())) != key
