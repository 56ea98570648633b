"""Large entries get the light glue pipeline (jit._run_passes): same results, kernels still fully optimised."""

import re

import numpy as np

import graphjit
import graphjit.tensor as T
from graphjit.link.llvm.jit import LIGHT_GLUE_MARKER


def attributes_of(ir_text, name_part):
    """The function attributes of the first definition whose name contains name_part."""
    lines = ir_text.splitlines()
    define = next(line for line in lines if line.startswith("define") and name_part in line.split("(")[0])
    group = re.search(r"\) (?:[a-z_ ]* )?#(\d+)", define)
    if group is None:
        return define
    return next(line for line in lines if line.startswith(f"attributes #{group.group(1)} "))


def chain(x, n):
    out = x
    for k in range(n):                 # each sum ends a fused group: many loop nests, a long entry
        out = T.exp(-out * 0.5) + out.sum(axis=1, keepdims=True) * (0.01 / (k + 1))
    return out


def test_large_graph_uses_light_glue_and_matches_numpy():
    x = T.dmatrix("x")
    f = graphjit.function([x], chain(x, 12))
    a = np.random.default_rng(0).normal(size=(5, 7))
    want = a
    for k in range(12):
        want = np.exp(-want * 0.5) + want.sum(axis=1, keepdims=True) * (0.01 / (k + 1))
    np.testing.assert_allclose(f(a), want, rtol=1e-12)
    np.testing.assert_allclose(f(a[:, ::-2]), f(a[:, ::-2].copy()), rtol=1e-12)   # strided path too
    assert LIGHT_GLUE_MARKER in f.native.llvm_ir
    opt = f.native.optimized_ir
    assert "optnone" in attributes_of(opt, "_entry")
    kernels = [line for line in opt.splitlines() if line.startswith("define") and ".contig" in line]
    assert kernels and not any("optnone" in attributes_of(opt, k.split("@")[1].split("(")[0]) for k in kernels)
    assert "<4 x double>" in opt or "<2 x double>" in opt      # the kernels were still vectorised


def test_small_graph_is_fully_optimised():
    x = T.dvector("x")
    f = graphjit.function([x], x * 2.0 + 1.0)
    np.testing.assert_allclose(f(np.arange(4.0)), np.arange(4.0) * 2 + 1)
    assert LIGHT_GLUE_MARKER not in f.native.llvm_ir
