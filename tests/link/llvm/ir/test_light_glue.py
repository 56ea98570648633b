"""A graph's glue and kernels are built as two modules (ir/modules.py): a large glue compiled lightly, a small one
apart with the small glue's passes, a small static graph's linked into the kernels; same results."""

import numpy as np
import pytest

import graphjit
import graphjit.tensor as T
from llvmlite import ir

from graphjit.link.llvm.jit.ir_prep import GLUE_HOT, GLUE_SMALL
from graphjit.link.llvm.jit.objfile import pack_objects, unpack_objects
from graphjit.link.llvm.ir.modules import kernel_function, library_modules


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
    lib = native._compiled.library
    native.llvm_ir                                        # noqa: B018 - rebuilt if loaded through a plan
    assert [glue for _, glue in lib._parts] == [False, True]
    native.optimized_ir                                   # noqa: B018 - computes the parts
    (kernels, k_glue), (glue, g_glue) = lib._optimized_ir
    assert (k_glue, g_glue) == (False, True)
    assert "<4 x double>" in kernels or "<2 x double>" in kernels           # kernels were vectorised
    assert "_entry" in glue and "_entry" not in kernels.split("declare")[0]
    assert f"{lib.prefix}k.node" in glue                                    # glue calls exported kernels
    assert f"{lib.prefix}entry:" in native.asm and f"{lib.prefix}k.node" in native.asm


def test_small_graph_glue_is_compiled_apart_with_the_small_pipeline():
    x = T.dvector("x")
    f = graphjit.function([x], x * 2.0 + 1.0)
    np.testing.assert_allclose(f(np.arange(4.0)), np.arange(4.0) * 2 + 1)
    lib = f.native._compiled.library
    f.native.llvm_ir                                      # noqa: B018 - rebuilt if loaded through a plan
    assert [glue for _, glue in lib._parts] == [False, GLUE_SMALL]    # kernels (O3), the glue apart
    f.native.optimized_ir                                 # noqa: B018
    (kernels, _), (glue, _) = lib._optimized_ir
    assert "<4 x double>" in kernels or "<2 x double>" in kernels           # the kernels were vectorised
    assert f"{lib.prefix}k.node" in glue and "_entry" not in kernels.split("declare")[0]
    raw_glue = [text for text, kind in lib._parts if kind == GLUE_SMALL][0]
    assert glue.count(" alloca ") < raw_glue.count(" alloca ")           # the small glue's passes ran (SROA)


def test_small_static_graph_is_one_module():
    x = T.TensorType("float64", (4,))("x")
    f = graphjit.function([x], x * 2.0 + 1.0)
    np.testing.assert_allclose(f(np.arange(4.0)), np.arange(4.0) * 2 + 1)
    lib = f.native._compiled.library
    f.native.llvm_ir                                      # noqa: B018 - rebuilt if loaded through a plan
    assert [glue for _, glue in lib._parts] == [False, False]         # kernels and glue, linked at O3
    f.native.optimized_ir                                 # noqa: B018
    assert len(lib._optimized_ir) == 1
    (linked, _), = lib._optimized_ir
    kernels = [ln for ln in linked.splitlines() if f"@{lib.prefix}k.node" in ln and ln.startswith("define")]
    assert all(ln.startswith("define internal") for ln in kernels)     # only the glue exports


FNTY = ir.FunctionType(ir.IntType(32), [ir.IntType(64)])


def test_kernels_live_in_their_module_and_glue_declares_what_it_calls():
    mods = library_modules("P_")
    inner, new = kernel_function(mods.kernels, "inner", FNTY)            # called by kernels only
    assert new and inner.linkage == "internal" and inner.name == "P_k.inner"
    called, _ = kernel_function(mods.glue, "called", FNTY)               # called by the glue
    assert called.module is mods.kernels and called.linkage == ""        # exported
    assert "P_k.called" in mods.glue.globals and mods.glue.globals["P_k.called"].is_declaration
    assert "P_k.inner" not in mods.glue.globals
    again, new = kernel_function(mods.glue, "called", FNTY)
    assert again is called and not new
    with pytest.raises(TypeError):
        kernel_function(mods.kernels, "called", ir.FunctionType(ir.VoidType(), []))


def test_object_payload():
    assert unpack_objects(pack_objects([b"one", b"two!"])) == [b"one", b"two!"]
    with pytest.raises(ValueError):
        unpack_objects(pack_objects([b"one"]) + b"x")


def _rnn_steps(threshold, scale, monkeypatch):
    from graphjit.link.llvm.driver import native_entry
    monkeypatch.setattr(native_entry, "HOT_GLUE_APART_MIN_INSTRUCTIONS", threshold)
    W, X, h0 = T.dmatrix("W"), T.dmatrix("X"), T.dvector("h0")
    hs = graphjit.scan(lambda x, h, W: T.tanh(T.dot(W, h) + x), sequences=X, outputs_info=h0, non_sequences=W)[0]
    f = graphjit.function([W, X, h0], graphjit.grad((hs ** 2).sum() * scale, W))   # scale: another graph
    rng = np.random.default_rng(1)
    Wv, Xv, hv = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(6, 3)), rng.normal(size=3)
    h, hs_ref = hv, []
    for x in Xv:
        h = np.tanh(Wv @ h + x)
        hs_ref.append(h)
    g, dh = np.zeros((3, 3)), np.zeros(3)
    for t in range(len(Xv) - 1, -1, -1):          # BPTT by hand
        dh = dh + 2 * hs_ref[t]
        da = dh * (1 - hs_ref[t] ** 2)
        g += np.outer(da, hs_ref[t - 1] if t else hv)
        dh = Wv.T @ da
    np.testing.assert_allclose(f(Wv, Xv, hv), g * scale, rtol=1e-10)
    f.native.llvm_ir                                      # noqa: B018 - rebuilt if loaded through a plan
    return [kind for _, kind in f.native._compiled.library._parts]


def test_a_very_large_scan_entry_compiles_its_glue_apart_at_o1(monkeypatch):
    """A scan body's glue stays linked with its kernels at O3, unless the entry is very large: then the glue goes
    apart with the O1 pipeline (O3's time grows faster than the function) and the kernels keep O3."""
    assert _rnn_steps(10 ** 9, 1.0, monkeypatch) == [False, False]     # kernels and glue, linked into one module
    assert _rnn_steps(1, 3.0, monkeypatch) == [False, GLUE_HOT]
