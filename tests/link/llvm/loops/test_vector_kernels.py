"""Elementwise kernels emitted already vectorised (loops/vector_body.py): every fusing scalar op in a graph large
enough for bulk parts, lengths around the vector width, NaN/inf/-0.0, strided and reversed inputs, FAST_RUN
against PY; the bulk parts of vector kernels compiled without the loop vectoriser; bodies that cannot run on
vectors kept scalar; the objects loaded from the disk cache in a new process."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scalar import math as smath
from graphjit.scalar.basic import ScalarOp
from graphjit.scalar.math import Cast
from graphjit.tensor.elemwise import Elemwise
from graphjit.link.llvm.jit import bulk, compiler
from graphjit.link.llvm.loops import vector_body

# exact in both modes: the same IEEE operations (or integer ones), no libm
EXACT = {"add", "sub", "mul", "true_div", "neg", "abs", "sqr", "reciprocal", "sqrt", "floor", "ceil", "trunc",
         "rint", "round_half_to_even", "minimum", "maximum", "sign", "lt", "gt", "le", "ge", "eq", "neq",
         "isnan", "isinf", "isfinite", "copysign", "identity", "second", "clip", "switch", "deg2rad",
         "rad2deg", "int_div", "mod", "fmod", "left_shift", "right_shift", "and_", "or_", "xor", "invert"}


def _distinct(x, count):
    """count outputs of x with distinct bodies (identical bodies share one kernel; x + k, a distinct constant
    each, keeps the inner ops from merging into one node read by several kernels)."""
    fns = [gt.sin, gt.cos, gt.tanh, gt.sigmoid, gt.arctan, gt.sqr, abs, lambda v: -v, lambda v: v * 3.0]
    pairs = [(f, g) for f in fns for g in fns][:count]
    return [f(g(x + float(k))) for k, (f, g) in enumerate(pairs)]


def _scalar_ops():
    """Every ScalarOp graphjit.scalar.math defines (casts apart), by name."""
    return sorted((name, op) for name, op in vars(smath).items()
                  if isinstance(op, ScalarOp) and not isinstance(op, Cast) and op.nin in (1, 2, 3))


def _outputs(inputs, names):
    """One Elemwise output per scalar op that takes these inputs' dtypes (each its own kernel)."""
    outs, kept = [], []
    for name, op in _scalar_ops():
        args = inputs[:op.nin] if name != "switch" else [inputs[0] > 0, inputs[1], inputs[2 % len(inputs)]]
        try:
            out = Elemwise(op)(*args)
        except (TypeError, ValueError, NotImplementedError):
            continue                                  # not defined on these dtypes
        if name in names:
            outs.append(out)
            kept.append(name)
    return outs, kept


def _edge_values(n, dtype, rng, lo=-3.0, hi=3.0):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-9 if np.dtype(dtype).kind == "i" else 0, 10, size=n).astype(dtype)
    v = rng.uniform(lo, hi, size=n).astype(dtype)
    edges = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0], dtype=dtype)
    v[: min(n, len(edges))] = edges[: min(n, len(edges))]
    return rng.permutation(v)


def _layouts(v):
    big = np.zeros(2 * len(v), v.dtype)
    big[::2] = v
    return {"contiguous": v, "strided": big[::2], "reversed": v[::-1].copy()[::-1]}


def _check(got, want, names, dtype, where):
    low = dtype == "float32"
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (where, name)
        if name in EXACT or g.dtype.kind not in "fc":
            np.testing.assert_array_equal(g, w, err_msg=f"{where}: {name}")
        else:
            np.testing.assert_allclose(g, w, rtol=2e-5 if low else 1e-10, atol=2e-6 if low else 1e-12,
                                       equal_nan=True, err_msg=f"{where}: {name}")


def _kinds(f):
    f.native.llvm_ir                                          # noqa: B018 - rebuilt if loaded through a plan
    return [kind for _, kind in f.native._compiled.library._parts]


def _compile(dtype, nin=3):
    x, y, z = (gt.TensorType(dtype, (None,))(n) for n in "xyz")
    # integer pow raises for negative exponents (test_bodies_without_a_vector_form_stay_scalar)
    names = [name for name, _ in _scalar_ops() if not (name == "pow" and dtype.startswith("int"))]
    outs, kept = _outputs([x, y, z][:nin], names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = gj.function([x, y, z], outs, mode="FAST_RUN", on_unused_input="ignore")
        ref = gj.function([x, y, z], outs, mode="PY", on_unused_input="ignore")
    return fast, ref, kept


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_every_scalar_op_in_vector_kernels_matches_py(cache_dir, dtype):
    fast, ref, names = _compile(dtype)
    assert len(names) >= bulk.SPLIT_MIN_KERNELS
    assert compiler.BULK_VECTOR in _kinds(fast)               # the bulk path, with parts of vector kernels
    w = vector_body.host_lanes([dtype])
    rng = np.random.default_rng(7)
    for n in sorted({0, 1, w - 1, w, w + 1, 2 * w + 3, 1001}):
        vals = [_edge_values(n, dtype, rng) for _ in range(3)]
        for label in ("contiguous", "strided", "reversed"):
            args = [_layouts(v)[label] for v in vals]
            with np.errstate(all="ignore"):
                want = ref(*args)
            _check(fast(*args), want, names, dtype, f"{dtype} n={n} {label}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rows_end_in_partial_vectors(cache_dir, dtype):
    """Row kernels (unit-stride rows of a non-contiguous matrix, a broadcast row) and a column-wise sum
    accumulated row by row, on row lengths around the vector width."""
    x, r = gt.TensorType(dtype, (None, None))("x"), gt.TensorType(dtype, (1, None))("r")
    outs = [v * r + gt.exp(x) for v in _distinct(x, bulk.SPLIT_MIN_KERNELS)] + _distinct(x, 20)
    outs += [(gt.tanh(x) * k).sum(axis=0) for k in range(1, 4)] + [gt.maximum(x, r) - gt.sigmoid(r)]
    fast, ref = gj.function([x, r], outs), gj.function([x, r], outs, mode="PY")
    assert compiler.BULK_VECTOR in _kinds(fast)
    w = vector_body.host_lanes([dtype])
    rng = np.random.default_rng(3)
    for cols in (1, w - 1, w, w + 1, 3 * w + 5):
        big = _edge_values(5 * (cols + 3), dtype, rng).reshape(5, cols + 3)
        for xv in (big[:, :cols], big[::-1, 2:cols + 2], np.ascontiguousarray(big[:, :cols])):
            rv = _edge_values(cols, dtype, rng).reshape(1, cols)
            with np.errstate(all="ignore"):
                want = ref(xv, rv)
            _check(fast(xv, rv), want, ["exp"] * len(want), dtype, f"{dtype} cols={cols}")


def test_vector_parts_skip_the_loop_vectoriser(cache_dir):
    """The parts of vector kernels run the short pass list: the loop vectoriser never saw them (no
    llvm.loop.isvectorized), while the other parts (reductions) were vectorised by LLVM."""
    x = gt.dmatrix("x")
    outs = _distinct(x, 30) + [(x * k).sum(axis=1) for k in range(1, 4)]
    f, ref = gj.function([x], outs), gj.function([x], outs, mode="PY")
    X = np.random.default_rng(0).standard_normal((7, 21))
    for got, want in zip(f(X), ref(X)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert compiler.BULK in _kinds(f) and compiler.BULK_VECTOR in _kinds(f)
    lib = f.native._compiled.library
    f.native.optimized_ir                                     # noqa: B018 - fills the optimised parts
    optimised = dict.fromkeys(_kinds(f), "")
    for text, kind in lib._optimized_ir:
        optimised[kind] += text
    assert "<8 x double>" in optimised[compiler.BULK_VECTOR] or "<4 x double>" in optimised[compiler.BULK_VECTOR]
    assert "llvm.loop.isvectorized" not in optimised[compiler.BULK_VECTOR]
    assert "llvm.loop.isvectorized" in optimised[compiler.BULK]
    assert "vector:" in compiler.PIPELINE and ",".join(bulk.VECTOR_PASSES) in compiler.PIPELINE


def test_bodies_without_a_vector_form_stay_scalar(cache_dir, monkeypatch):
    """Integer power (it raises for a negative exponent) and gcd (a loop) are refused on vectors: their
    kernels are built as before and still report errors."""
    refused = []
    emit = vector_body.emit_vector_loop

    def spy(kctx, *args, **kw):
        out = emit(kctx, *args, **kw)
        if out is None:
            refused.append(kctx.vector_refused)
        return out

    monkeypatch.setattr(vector_body, "emit_vector_loop", spy)
    monkeypatch.setattr(vector_body, "MIN_GROUPS", 0)          # a small graph
    i, j = gt.lvector("i"), gt.lvector("j")
    f = gj.function([i, j], [i ** j, Elemwise(smath.gcd)(i, j), i + j])
    a, b = np.arange(-5, 12), np.arange(17) % 4
    got = f(a, b)
    np.testing.assert_array_equal(got[0], a ** b)
    np.testing.assert_array_equal(got[1], np.gcd(a, b))
    np.testing.assert_array_equal(got[2], a + b)
    assert any("errors" in r for r in refused) and any("blocks" in r or "phi" in r for r in refused)
    with pytest.raises(ValueError, match="negative integer powers"):
        f(a, -b - 1)


def test_scalar_remainder_instead_of_the_vector_tail(cache_dir, monkeypatch):
    """With VECTOR_TAIL off the vector loop ends with a scalar remainder loop: same results."""
    monkeypatch.setattr(vector_body, "VECTOR_TAIL", False)
    monkeypatch.setattr(vector_body, "MIN_GROUPS", 0)          # a small graph
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([x, y], [gt.exp(x) * y - gt.maximum(x, y), gt.cast(x > y, "int8"), (x * 3) // (y + 4)])
    rng = np.random.default_rng(1)
    for n in (0, 1, 7, 8, 9, 1001):
        xv, yv = _edge_values(n, "float64", rng), rng.uniform(-3, 3, n)
        with np.errstate(all="ignore"):
            want = [np.exp(xv) * yv - np.maximum(xv, yv), (xv > yv).astype("int8"), (xv * 3) // (yv + 4)]
            got = f(xv, yv)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13, equal_nan=True)
    assert "v.body" in f.native.llvm_ir and "k.body" in f.native.llvm_ir


@pytest.mark.soak
def test_vector_kernels_load_from_the_disk_cache_in_a_new_process(tmp_path):
    """A new process loads the bulk parts' objects (libmvec calls, the vector exp) from the cache: its answers
    are the first process's, bit for bit."""
    script = textwrap.dedent("""
        import sys, numpy as np, graphjit as gj, graphjit.tensor as gt
        x = gt.dvector("x")
        fns = [gt.sin, gt.cos, gt.tanh, gt.sigmoid, gt.exp, gt.sqr, abs]
        outs = [f(g(x + k)) for k, (f, g) in enumerate((f, g) for f in fns for g in fns)]
        f = gj.function([x], outs)
        kinds = [k for _, k in f.native._compiled.library._parts] if f.native._compiled.library._parts else []
        v = np.linspace(-40, 40, 1003)
        np.save(sys.argv[1], np.stack(f(v)))
        print(f.native._compiled.library.cache_hit, "bulk-vector" in kinds)
    """)
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", script, str(tmp_path / f"{k}.npy")], env=env, check=True,
                           capture_output=True, text=True).stdout.split() for k in range(2)]
    assert runs[0] == ["False", "True"] and runs[1][0] == "True"
    assert np.load(tmp_path / "0.npy").tobytes() == np.load(tmp_path / "1.npy").tobytes()


@pytest.mark.soak
def test_partial_vectors_write_nothing_past_the_end(tmp_path):
    """Bool results of wider inputs (8 lanes of one byte) on every row length below and around W: nothing
    written past a row or an array (glibc's heap checks abort the child at the next free if something was)."""
    script = textwrap.dedent("""
        import gc, numpy as np, graphjit as gj, graphjit.tensor as gt
        from graphjit.link.llvm.loops import vector_body
        vector_body.MIN_GROUPS = 0                  # a small graph
        x, s, y = gt.lmatrix("x"), gt.lcol("s"), gt.dvector("y")
        f = gj.function([x, s, y], [s >= x, gt.cast(y, "int8") * 3, y > 0.5])
        for cols in range(1, 40):
            for rows in (1, 3):
                xv = np.arange(rows * cols).reshape(rows, cols)
                a, b, c = f(xv, xv[:, :1] + 2, np.linspace(0, 1, cols))
                assert (a == (xv[:, :1] + 2 >= xv)).all() and (c == (np.linspace(0, 1, cols) > 0.5)).all()
                del a, b, c
                gc.collect()
        print("ok")
    """)
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path / "cache"), MALLOC_CHECK_="3", MALLOC_PERTURB_="165")
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.split() == ["ok"], run.stderr[-2000:]


def test_small_graphs_keep_the_loop_vectoriser_s_kernels(cache_dir):
    """Below MIN_GROUPS fused groups (one linked O3 module) kernels are scalar loops LLVM vectorises."""
    x = gt.dvector("x")
    f = gj.function([x], gt.exp(x) * 2.0 + 1.0)
    assert '%"v" = phi' not in f.native.llvm_ir and "llvm.loop.interleave.count" in f.native.llvm_ir
    np.testing.assert_allclose(f(np.arange(5.0)), np.exp(np.arange(5.0)) * 2 + 1)
