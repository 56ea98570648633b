"""Large graphs compile split in two (split.py): kernels at the full level, glue lightly; same results."""

import numpy as np
import pytest

import graphjit
import graphjit.tensor as T
from graphjit.link.llvm.jit import LIGHT_GLUE_MARKER, pack_objects, unpack_objects
from graphjit.link.llvm.split import split_module


def chain(x, n):
    out = x
    for k in range(n):                 # each sum ends a fused group: many loop nests, a long entry
        out = T.exp(-out * 0.5) + out.sum(axis=1, keepdims=True) * (0.01 / (k + 1))
    return out


LINKS = 8                              # an entry above lowering.LIGHT_GLUE_MIN_INSTRUCTIONS


def test_large_graph_compiles_split_and_matches_numpy():
    x = T.dmatrix("x")
    f = graphjit.function([x], chain(x, LINKS))
    a = np.random.default_rng(0).normal(size=(5, 7))
    want = a
    for k in range(LINKS):
        want = np.exp(-want * 0.5) + want.sum(axis=1, keepdims=True) * (0.01 / (k + 1))
    np.testing.assert_allclose(f(a), want, rtol=1e-12)
    np.testing.assert_allclose(f(a[:, ::-2]), f(a[:, ::-2].copy()), rtol=1e-12)   # strided path too
    native = f.native
    assert LIGHT_GLUE_MARKER in native.llvm_ir
    lib = native._compiled.library
    native.optimized_ir                                   # noqa: B018 - computes the parts
    (kernels, k_glue), (glue, g_glue) = lib._optimized_ir
    assert (k_glue, g_glue) == (False, True)
    assert "<4 x double>" in kernels or "<2 x double>" in kernels           # kernels were vectorised
    assert "_entry" in glue and "_entry" not in kernels.split("declare")[0]
    assert f"{lib.prefix}k.node" in glue                                    # glue calls exported kernels
    assert f"{lib.prefix}entry:" in native.asm and f"{lib.prefix}k.node" in native.asm


def test_small_graph_is_one_module():
    x = T.dvector("x")
    f = graphjit.function([x], x * 2.0 + 1.0)
    np.testing.assert_allclose(f(np.arange(4.0)), np.arange(4.0) * 2 + 1)
    assert LIGHT_GLUE_MARKER not in f.native.llvm_ir
    f.native.optimized_ir                                 # noqa: B018
    assert len(f.native._compiled.library._optimized_ir) == 1


TEXT = """@"g.x" = private constant i8 1
define i32 @"P_entry"(i64 %".1") {
entry:
  %".3" = call i32 @"k1"(i64 %".1")
  ret i32 %".3"
}
define internal i32 @"k1"(i64 %".1") noinline {
entry:
  %".3" = call i32 @"helper"(i64 %".1")
  ret i32 %".3"
}
define internal i32 @"helper"(i64 %".1") {
entry:
  ret i32 0
}
define internal void @"gj.set_error"(i64 %".1") cold {
entry:
  ret void
}
"""


def test_split_module_text():
    kernels, glue = split_module(TEXT, "P_")
    assert 'define i32 @"P_k.k1"' in kernels and 'define internal i32 @"helper"' in kernels
    assert "P_entry" not in kernels and "gj.set_error" not in kernels
    assert 'call i32 @"P_k.k1"' in glue and 'declare i32 @"P_k.k1"(i64 %".1") noinline' in glue
    assert '@"g.x" = private constant' in kernels and '@"g.x" = private constant' in glue
    assert split_module(TEXT.split('define internal i32 @"k1"')[0], "P_") is None     # nothing to split


def test_object_payload():
    assert unpack_objects(pack_objects([b"one", b"two!"])) == [b"one", b"two!"]
    with pytest.raises(ValueError):
        unpack_objects(pack_objects([b"one"]) + b"x")
