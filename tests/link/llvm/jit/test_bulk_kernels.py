"""A large graph's kernels are printed as two modules and compiled apart, side by side on two cores
(jit/bulk.py, jit/parallel.py); same results as numpy, one core or two."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as T
from graphjit.config import config
from graphjit.link.llvm.jit import bulk, compiler, parallel
from w9_graphs import w9

BULK_KINDS = {compiler.BULK, compiler.BULK_VECTOR}


def compile_random(seed, n=300):
    steps = w9.spec(n, seed)
    x, w = T.dmatrix("x"), T.dmatrix("w")
    return steps, gj.function([x, w], w9.evaluate(steps, T, x, w))


@pytest.mark.parametrize("cores", [1, 2])
def test_large_graph_kernels_compile_in_two_halves(cache_dir, monkeypatch, cores):
    calls = []
    run_all = parallel.run_all
    monkeypatch.setattr(parallel, "cores", lambda: cores)
    monkeypatch.setattr(parallel, "run_all", lambda jobs, workers: calls.append((len(jobs), workers))
                        or run_all(jobs, workers))
    with config.change_flags(compile_worker=False):          # the build spied on runs in this process
        steps, f = compile_random(seed=10 + cores)
    X, W = w9.data(cores)
    for got, want in zip(f(X, W), w9.reference(steps, X, W)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for got, want in zip(f(X[:7, ::-1], W), w9.reference(steps, X[:7, ::-1], W)):   # other shape, strided
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    lib = f.native._compiled.library
    f.native.llvm_ir                                          # noqa: B018 - rebuilt if loaded through a plan
    kinds = [kind for _, kind in lib._parts]
    # parts of vector kernels and parts of the others (reductions), then the light glue
    assert kinds[-1] == compiler.GLUE and set(kinds[:-1]) == {compiler.BULK_VECTOR, compiler.BULK}
    assert calls == ([(len(kinds), 2)] if cores == 2 else [])
    defined = {kind: [{ln.split("@")[1].split("(")[0] for ln in text.splitlines()
                       if ln.startswith("define ") and " internal " not in ln}
                      for text, k in lib._parts if k == kind] for kind in (compiler.BULK_VECTOR, compiler.BULK)}
    every = [names for sets in defined.values() for names in sets]
    assert sum(map(len, every)) >= bulk.SPLIT_MIN_KERNELS
    assert sum(map(len, every)) == len(set().union(*every))     # each exported kernel defined once
    for sets in defined.values():                               # and the parts of a kind balanced
        assert min(map(len, sets)) >= len(set().union(*sets)) // (len(sets) + 1)
    assert f"{lib.prefix}k.node" in f.native.optimized_ir and f"{lib.prefix}entry:" in f.native.asm


def test_split_text_is_deterministic_and_keys_differ_from_one_module(cache_dir):
    _, f = compile_random(seed=21)
    lib = f.native._compiled.library
    f.native.llvm_ir                                          # noqa: B018
    again = [text for text, _ in lib._parts]
    _, g = compile_random(seed=21)
    assert g.native._compiled is f.native._compiled            # the same structure: shared, not rebuilt
    c = compiler.get_compiler()
    assert c.key_of(lib._parts) != c.key_of([(t, compiler.LINKED) for t in again])


def test_a_large_kernel_module_is_cut_in_parts_of_bounded_size(cache_dir, monkeypatch):
    monkeypatch.setattr(bulk, "BULK_PART_KERNELS", 30)
    steps, f = compile_random(seed=31, n=400)
    X, W = w9.data(31)
    for got, want in zip(f(X, W), w9.reference(steps, X, W)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    f.native.llvm_ir                                          # noqa: B018
    parts = [text for text, kind in f.native._compiled.library._parts if kind in BULK_KINDS]
    defined = [sum(ln.startswith("define ") and " internal " not in ln for ln in text.splitlines())
               for text in parts]
    assert len(parts) >= 3 and max(defined) <= 30 and sum(defined) > 60


def test_run_all_uses_at_most_the_workers_and_keeps_the_order():
    import threading
    seen = set()

    def job(k):
        def run():
            seen.add(threading.current_thread().name)
            return k * k
        return run

    assert parallel.run_all([job(k) for k in range(7)], 3) == [k * k for k in range(7)]
    assert len(seen) <= 3
    with pytest.raises(ZeroDivisionError):
        parallel.run_all([job(1), lambda: 1 / 0, job(2)], 2)


def test_a_small_graph_is_not_split(cache_dir):
    x = T.dmatrix("x")
    f = gj.function([x], T.tanh(x * 2.0).sum(axis=1) + 1.0)
    f.native.llvm_ir                                          # noqa: B018
    assert not BULK_KINDS & {kind for _, kind in f.native._compiled.library._parts}


def test_a_part_prints_only_its_own_kernels(cache_dir):
    _, f = compile_random(seed=41, n=400)
    f.native.llvm_ir                                          # noqa: B018
    lib = f.native._compiled.library
    parts = [text for text, kind in lib._parts if kind in BULK_KINDS]
    assert len(parts) >= 3
    for text in parts:       # no part declares another part's kernels: printing is linear in the kernels
        assert not [ln for ln in text.splitlines() if ln.startswith("declare") and f"{lib.prefix}k.node" in ln]


def test_a_kernel_calling_another_part_s_kernel_keeps_its_declaration(monkeypatch):
    from llvmlite import ir
    import llvmlite.binding as llvm
    from graphjit.link.llvm.ir.modules import new_module
    monkeypatch.setattr(bulk, "SPLIT_MIN_KERNELS", 2)
    monkeypatch.setattr(bulk, "BULK_PART_KERNELS", 1)
    module = new_module("gj_t_")
    dbl = ir.DoubleType()
    fns = []
    for k in range(3):
        fn = ir.Function(module, ir.FunctionType(dbl, [dbl]), f"gj_t_k.f{k}")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        x = fn.args[0]
        b.ret(b.call(fns[0], [x]) if k == 2 else b.fadd(x, dbl(k)))   # f2 calls f0, which another part defines
        fns.append(fn)
    texts = [text for text, vector in bulk.split_kernels(module) if not vector]
    assert len(texts) == 3
    for text in texts:
        llvm.parse_assembly(text, context=llvm.create_context()).verify()   # every callee defined or declared
    caller = next(t for t in texts if 'define double @"gj_t_k.f2"' in t)
    assert 'declare double @"gj_t_k.f0"' in caller and "gj_t_k.f1" not in caller
    assert str(module).count("define") == 3                    # the module itself is left as it was


def test_one_core_or_two_build_the_same_objects(cache_dir, monkeypatch):
    _, f = compile_random(seed=51)
    f.native.llvm_ir                                          # noqa: B018
    lib = f.native._compiled.library
    c = compiler.get_compiler()
    payloads = []
    for cores in (1, 2):
        monkeypatch.setattr(parallel, "cores", lambda: cores)
        payloads.append(c.build_here(lib._parts, lib.opt_level, lib.prefix, {}))
    assert payloads[0] == payloads[1]                          # the cache key does not say how many cores built it


@pytest.mark.parametrize("cols", [37, 9])
def test_bulk_kernels_with_partial_vectors_match_numpy(cache_dir, cols):
    """Lengths that are no multiple of a vector: every loop ends in a partial vector (its scalar remainder)."""
    steps, f = compile_random(seed=51)
    X, W = w9.data(51)
    x, w = X[:13, :cols], W[:cols, :cols]
    for x, w in ((x, w), (x[::-1, ::-1], w.T), (x[:1], w)):
        for got, want in zip(f(x, w), w9.reference(steps, x, w)):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
