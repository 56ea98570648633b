"""The versions in the cache keys (cache/keys.py): graphjit's own lowerings and layouts add none (its source digest
covers them, no table repeats their versions); a user's registration, ``lower`` hook or layout adds its version,
including on a subclass of a graphjit op whose builtin lowering it would otherwise inherit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Sequence

import graphjit.tensor as gt
from graphjit.graph.fg import FunctionGraph
from graphjit.link.llvm import linker, registry
from graphjit.link.llvm.cache import keys
from graphjit.link.llvm.cpython.boxing import TensorLayout
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.registry import ObjectRegistry, layouts, lowerings, scalar_lowerings
from graphjit.tensor.shape import Reshape
from graphjit.tensor.type import TensorType

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class MyReshape(Reshape):
    """A user's subclass of a graphjit op that has a builtin lowering."""


class HookedReshape(Reshape):
    """A user's subclass that lowers through its own hook, versioned by a class attribute."""

    version = (1,)

    def lower(self, ctx: Any, node: Any, inputs: Sequence[Any]) -> list:
        raise AssertionError("not reached: only keys are computed")

    def lower_version(self) -> tuple:
        return self.version


class MyTensorType(TensorType):
    """A user's subclass of a graphjit Type with a builtin layout."""


class MyLayout(TensorLayout):
    """A user's layout (registered from outside graphjit)."""


def lower_my_reshape(ctx: Any, node: Any, inputs: Sequence[Any]) -> list:
    """A user's lowering: the builtin one's code, registered from this module."""
    return lowerings.lookup(Reshape).impl(ctx, node, inputs)


def plan_key_of(op: Reshape) -> str:
    """The disk plan's key of x.reshape((4, 3)) through op."""
    x = gt.dmatrix("x")
    fg = FunctionGraph([x], [op(x, [4, 3])], clone=False)
    compiler = get_compiler()
    return keys.plan_key(linker.structural_signature(fg, fg.toposort(), 3, True), linker._host(compiler))


def test_builtin_lowerings_and_layouts_add_no_version():
    registry.load_builtins()
    assert lowerings.lookup(Reshape) is not None and keys.lowering_version(Reshape(2)) is None
    assert keys.lowering_version(gt.exp(gt.dvector()).owner.op) is None
    assert keys.layout_version(gt.dmatrix().type) is None
    assert keys.lowering_version(MyReshape(2)) is None        # inherits Reshape's: graphjit's sources cover it
    assert keys.layout_version(MyTensorType("float64", (None,))) is None


def test_a_user_registration_on_a_subclass_changes_the_key():
    before = plan_key_of(MyReshape(2))
    found = []
    for version in [(1,), (1,), (2,)]:
        lowerings.register(MyReshape, version=version)(lower_my_reshape)
        try:
            assert keys.lowering_version(MyReshape(2)) == version
            found.append(plan_key_of(MyReshape(2)))
        finally:
            lowerings.unregister(MyReshape)
    assert found[0] == found[1] != found[2] and before not in found
    assert plan_key_of(MyReshape(2)) == before and keys.lowering_version(MyReshape(2)) is None


def test_a_user_hook_on_a_subclass_changes_the_key(monkeypatch):
    first = plan_key_of(HookedReshape(2))
    assert keys.lowering_version(HookedReshape(2)) == (1,)
    monkeypatch.setattr(HookedReshape, "version", (2,))
    assert keys.lowering_version(HookedReshape(2)) == (2,) and plan_key_of(HookedReshape(2)) != first


def test_unregistering_a_builtin_lowering_changes_the_key():
    """graphjit's sources no longer say what lowers a class whose builtin registration was removed."""
    before = plan_key_of(Reshape(2))
    entry = lowerings.lookup(Reshape)
    lowerings.unregister(Reshape)
    try:
        assert keys.lowering_version(Reshape(2)) == registry.UNREGISTERED and plan_key_of(Reshape(2)) != before
    finally:
        lowerings.register(Reshape, version=entry.version, applies=entry.applies, **entry.options)(entry.impl)
    assert keys.lowering_version(Reshape(2)) is None and plan_key_of(Reshape(2)) == before


def test_a_user_layout_registration_changes_the_key():
    t = MyTensorType("float64", (None,))
    x = t("x")
    fg = FunctionGraph([x], [x * 2.0], clone=False)
    found = []
    for version in [(1,), (3,)]:
        layouts.register(MyTensorType, version=version)(MyLayout)
        try:
            assert keys.layout_version(t) == version
            found.append(keys.lowering_versions(fg, fg.toposort()))
        finally:
            layouts.unregister(MyTensorType)
    assert found[0] != found[1] and keys.layout_version(t) is None


def test_a_user_scalar_lowering_changes_the_key(monkeypatch):
    reg: ObjectRegistry[Any] = ObjectRegistry("scalar lowering")
    reg.register("mine", version=(4,))(lower_my_reshape)
    assert reg.user_versions() == (("builtins.str", "mine", (4,)),)
    x = gt.dvector("x")
    fg = FunctionGraph([x], [gt.exp(x)], clone=False)
    before = keys.lowering_versions(fg, fg.toposort())
    monkeypatch.setitem(scalar_lowerings._user, "mine", (4,))
    assert keys.lowering_versions(fg, fg.toposort()) != before


_USER_LOWERING_CHILD = """
import json, sys
import numpy as np
import graphjit as gj, graphjit.tensor as gt
from graphjit.link.llvm.registry import lowerings
from graphjit.tensor.shape import Reshape

class MyReshape(Reshape):
    pass

def lower_mine(ctx, node, inputs):
    return lowerings.lookup(Reshape).impl(ctx, node, inputs)

lowerings.register(MyReshape, version=tuple(json.loads(sys.argv[1])))(lower_mine)
x = gt.dmatrix("x")
f = gj.function([x], MyReshape(2)(x * 2.0, [4, 3]))
ok = bool(np.allclose(f(np.ones((3, 4))), 2.0)) and f.native.fallback_nodes == []
ops = {type(n.op).__name__ for n in f.maker.fgraph.toposort()}
print(json.dumps([ok, "MyReshape" in ops, bool(f.native.timings.get("plan_hit"))]))
"""


def test_a_user_lowering_version_misses_across_processes(tmp_path):
    """A warm process hits the plan of a user's lowering at the same version and misses it at another."""
    env = {**os.environ, "GRAPHJIT_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.path.join(ROOT, "src")}

    def run(version):
        out = subprocess.run([sys.executable, "-c", _USER_LOWERING_CHILD, json.dumps(version)], env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert run([1]) == [True, True, False]
    assert run([1]) == [True, True, True]
    assert run([2]) == [True, True, False]
    assert run([2]) == [True, True, True]
