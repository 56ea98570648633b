"""Modes: registry, get_mode, tags, rewriters, linkers."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile.mode import (Mode, NoRewriter, register_linker, register_mode,
                                   register_rewriter, registered_modes, run_rewriter)
from graphjit.link.python import PerformLinker
from toy_ops import add, double, mul, sub

# The toy ops (tests/toy_ops.py) have only a Python perform: under the LLVM linker their FallbackWarning
# is expected (it is emitted once per op per process, so whichever test compiles one first sees it).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def test_registered_modes_and_default():
    assert {"PY", "FAST_RUN", "FAST_COMPILE", "DEBUG"} <= set(registered_modes())
    for name in ("PY", "FAST_RUN", "FAST_COMPILE", "DEBUG"):
        mode = gj.get_mode(name)
        assert mode.name == name
        assert isinstance(mode.linker, PerformLinker) == (name == "PY")  # the others compile with LLVM
    assert gj.get_mode("py") is gj.get_mode("PY")
    with gj.change_flags(mode="PY"):
        assert gj.get_mode() is gj.get_mode("PY")
    assert gj.get_mode(None) is gj.get_mode(gj.config.mode)
    custom = Mode()
    assert gj.get_mode(custom) is custom


def test_fast_compile_skips_llvm_s_optimiser():
    """FAST_COMPILE: fewer rewrites and LLVM at opt level 0 (SROA only, the fast instruction selector); the
    former -O1 mode stays available as the llvm_o1 linker."""
    assert gj.get_mode("FAST_COMPILE").linker.opt_level == 0
    assert gj.get_mode("FAST_RUN").linker.opt_level == 3
    x = gt.dvector("x")
    for mode in ("FAST_COMPILE", Mode(linker="llvm_o1", rewriter="fast_compile")):
        f = gj.function([x], gt.exp(x) * 2 + 1, mode=mode)
        np.testing.assert_allclose(f(np.arange(3.0)), np.exp(np.arange(3.0)) * 2 + 1)
    assert gj.function([x], gt.exp(x) * 3 + 1, mode="FAST_COMPILE").native._compiled.library.opt_level == 0


def test_unknown_names():
    with pytest.raises(ValueError, match="unknown mode 'NOPE'.*PY"):
        gj.get_mode("NOPE")
    with pytest.raises(ValueError, match="unknown linker"):
        Mode(linker="nope")
    with pytest.raises(ValueError, match="unknown rewriter"):
        Mode(rewriter="nope")
    with pytest.raises(TypeError):
        Mode(linker=3)
    with pytest.raises(TypeError):
        gj.get_mode(3)
    with pytest.raises(TypeError, match="unknown fields"):
        Mode().clone(colour="red")


def test_tags_accumulate_in_derived_modes():
    base = gj.get_mode("FAST_RUN")
    derived = base.excluding("stabilize").including("x", "y").requiring("fast")
    assert derived.exclude == ("stabilize",) and derived.include == ("x", "y")
    assert derived.require == ("fast",) and derived.name is None
    assert base.include == () and base.exclude == ()
    assert derived.including("x").include == ("x", "y")
    assert "include=('x', 'y')" in str(derived)


def test_callable_and_object_rewriters_run_on_the_graph():
    x = double("x")

    def add_to_sub(fgraph):
        for node in fgraph.toposort():
            if node.op == add:
                fgraph.replace_validate(node.outputs[0], sub(*node.inputs), reason="test")

    f = gj.function([x], mul(add(x, 1.0), 2.0), mode=Mode(rewriter=add_to_sub))
    assert f(3.0) == 4.0
    assert [n.op for n in f.maker.fgraph.toposort()] == [sub, mul]

    class ObjectRewriter:
        def __init__(self):
            self.seen = []

        def rewrite(self, fgraph):
            self.seen.append(fgraph)

    obj = ObjectRewriter()
    g = gj.function([x], add(x, 1.0), mode=Mode(rewriter=obj))
    assert obj.seen == [g.maker.fgraph]
    with pytest.raises(TypeError, match="rewriter"):
        run_rewriter(3, g.maker.fgraph)
    assert run_rewriter(None, g.maker.fgraph) is None


def test_database_rewriters_are_queried_with_the_mode_tags():
    queries = []

    class Database:
        def query(self, include, exclude, require):
            queries.append((include, exclude, require))
            return NoRewriter()

    register_rewriter("test_db", Database())
    mode = Mode(rewriter="test_db").including("a").excluding("b")
    assert isinstance(mode.rewriter, NoRewriter)
    assert queries == [(("test_db", "a"), ("b",), ())]
    assert isinstance(Mode().rewriter, NoRewriter)


def test_register_mode_replaces_and_linkers_by_name():
    class CountingLinker(PerformLinker):
        accepted = 0

        def accept(self, fgraph, no_recycling=None, profile=None):
            CountingLinker.accepted += 1
            return super().accept(fgraph, no_recycling, profile)

    register_linker("counting", CountingLinker)
    old = gj.get_mode("FAST_COMPILE")
    try:
        register_mode("FAST_COMPILE", old.clone(linker="counting"))
        assert isinstance(gj.get_mode("FAST_COMPILE").linker, CountingLinker)
        x = double("x")
        assert gj.function([x], add(x, 1.0), mode="FAST_COMPILE")(1.0) == 2.0
        assert CountingLinker.accepted == 1
        assert gj.get_mode("FAST_COMPILE").linker.fgraph is None  # the prototype stays unbound
    finally:
        register_mode("FAST_COMPILE", old)
    assert gj.get_mode("FAST_COMPILE") is old
    with pytest.raises(TypeError):
        register_mode("X", "PY")
