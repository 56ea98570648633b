"""The backend's registries: every registered op class lowers natively through its registered function (ops hold
no lowering code), a user's op with only the ``lower`` hook still compiles natively, a lowering's version is in
the structural signature (and so the plan key), and a class is registered once."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pytest
from llvmlite import ir

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor.blockwise import Blockwise
from graphjit.tensor.search import Bincount, Nonzero, SearchSorted, bincount, nonzero, searchsorted
from graphjit.tensor.unique import Unique, unique
gsort = importlib.import_module("graphjit.tensor.sort")   # graphjit.tensor.sort the attribute is the function
from graphjit.tensor.lane_index import LaneGather, LaneScatter
from graphjit.tensor.check_op import CheckAndRaise
from graphjit.tensor.repeat_op import Repeat, RepeatSum
from graphjit.tensor.random import ChoiceRV, IntegersRV, NormalRV, RandomVariable, UniformRV
from graphjit.tensor.random_discrete import BinomialRV, NegativeBinomialRV
from graphjit.tensor.random_permute import PermutationRV, PermutedRV
from graphjit.tensor.random_multivariate import DirichletRV, MultinomialRV, MultivariateNormalRV
from graphjit.compile.mode import Mode
from graphjit.gradient import GradientBlockOp, grad_clip
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.graph.params import EnumList
from graphjit.graph.type import Generic, Type
from graphjit.ifelse import IfElse, ifelse
from graphjit.link.llvm import linker as llvm_linker, registry
from graphjit.link.llvm.jit.compiler import get_compiler
from graphjit.link.llvm.cache.keys import layout_version, lowering_version, plan_key
from graphjit.link.llvm.cpython.boxing import HookLayout, ObjectLayout, TensorLayout, type_layout
from graphjit.link.llvm.driver.native_entry import node_is_lowered
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.registry import ClassRegistry, layouts, lowerings
from graphjit.link.ops import DeepCopyOp
from graphjit.scalar.basic import ScalarType
from graphjit.scan_module.op import Scan
from graphjit.tensor.advanced_subtensor import (AdvancedIncSubtensor, AdvancedIncSubtensor1, AdvancedSubtensor,
                                                AdvancedSubtensor1)
from graphjit.tensor.alloc import ARange, Alloc, Eye, alloc, arange, eye
from graphjit.tensor.blas import Dot, Matmul, TensorDot, dot, matmul, tensordot
from graphjit.tensor.blas_gemm import Gemm, gemm
from graphjit.tensor.blas_vector import Gemv, Ger, gemv, ger
from graphjit.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from graphjit.tensor.print_op import Print
from graphjit.tensor.elemwise_grad import SumToShape, sum_to_shape
from graphjit.tensor.extra_ops import CumprodDiff
from graphjit.tensor.extra_ops import ArgReduce, CumOp, argmax, cumsum
from graphjit.tensor.join import Join, MakeVector, Split, concatenate, make_vector, split
from graphjit.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape, shape_i, specify_shape
from graphjit.tensor.shape_base import MatchShape
from graphjit.tensor.special import LogSoftmax, LogSumExp, Softmax, TakeLabels, log_softmax, logsumexp, softmax
from graphjit.tensor.special import take_labels
from graphjit.tensor.subtensor import IncSubtensor, Subtensor, inc_subtensor
from graphjit.tensor.type import TensorType
from graphjit.tensor import linalg as la

# no rewrites: each graph keeps exactly the op it was built with
RAW = Mode(linker="llvm", rewriter=None)

x, y, v, t = gt.dmatrix("x"), gt.dmatrix("y"), gt.dvector("v"), gt.dtensor3("t")
M = np.arange(12.0).reshape(3, 4) / 7
V = np.linspace(-1, 1, 4)
COUNTS = np.array([1, 0, 2, 3])


def _quiet_print(op: Any, value: Any) -> None:
    """Print's global_fn here: the registry's case needs the lowering, not the text."""


def _spd() -> Any:
    return dot(x, x.T) + eye(3)


def _rng():
    return gj.shared(np.random.default_rng(0))


# op class -> (graph inputs, output, input values)
CASES: dict[type, tuple[list, Callable[[], Any], list]] = {
    Print: ([x], lambda: Print("registry", global_fn=_quiet_print)(x) * 2.0, [M]),
    Elemwise: ([x], lambda: x * 2.0, [M]),
    CAReduce: ([x], lambda: x.sum(axis=1), [M]),
    DimShuffle: ([x], lambda: x.T, [M]),
    Shape: ([x], lambda: x.shape, [M]),
    Shape_i: ([x], lambda: shape_i(x, 1), [M]),
    SpecifyShape: ([x], lambda: specify_shape(x, (3, None)), [M]),
    MatchShape: ([x, y], lambda: MatchShape(("x", "y"))(x[::-1], y.shape) * 2.0, [M, M]),
    Reshape: ([x], lambda: x.reshape((4, 3)), [M]),
    SumToShape: ([x, v], lambda: sum_to_shape(x[:1], v[None, :]), [M, V]),
    GradientBlockOp: ([x], lambda: grad_clip(x, -1.0, 1.0), [M]),
    IfElse: ([x, y], lambda: ifelse(gt.gt(x.sum(), 0), x * 2, y[::-1]), [M, M]),
    DeepCopyOp: ([x], lambda: DeepCopyOp()(x), [M]),
    Alloc: ([v], lambda: alloc(v, 3, 4), [V]),
    ARange: ([], lambda: arange(5), []),
    Eye: ([], lambda: eye(3), []),
    MakeVector: ([v], lambda: make_vector([v[0], v[1]]), [V]),
    Join: ([x, y], lambda: concatenate([x, y], axis=1), [M, M]),
    Split: ([x], lambda: split(x, [1, 3], axis=1)[1], [M]),
    Subtensor: ([x], lambda: x[1:, ::2], [M]),
    IncSubtensor: ([x], lambda: inc_subtensor(x[1:], x[:2]), [M]),
    AdvancedSubtensor1: ([x], lambda: x[np.array([2, 0])], [M]),
    AdvancedIncSubtensor1: ([x], lambda: inc_subtensor(x[np.array([1, 1])], x[:2]), [M]),
    AdvancedSubtensor: ([x], lambda: x[:, np.array([2, 0])], [M]),
    AdvancedIncSubtensor: ([x], lambda: inc_subtensor(x[gt.gt(x, 0)], 1.0), [M]),
    Dot: ([x, y], lambda: dot(x, y.T), [M, M]),
    Matmul: ([t], lambda: matmul(t, t.dimshuffle(0, 2, 1)), [M.reshape(2, 2, 3)]),
    TensorDot: ([x, y], lambda: tensordot(x, y, axes=[[1], [1]]), [M, M]),
    Gemm: ([x, y], lambda: gemm(x, 0.5, x, dot(y.T, y), 2.0), [M, M]),
    Gemv: ([x, v], lambda: gemv(x, v), [M, V]),
    Ger: ([v], lambda: ger(v, v), [V]),
    ArgReduce: ([x], lambda: argmax(x, axis=1), [M]),
    CumOp: ([x], lambda: cumsum(x, axis=0), [M]),
    CumprodDiff: ([x, y], lambda: CumprodDiff(1, True)(x, y), [M, M]),
    Softmax: ([x], lambda: softmax(x), [M]),
    LogSoftmax: ([x], lambda: log_softmax(x), [M]),
    LogSumExp: ([x], lambda: logsumexp(x, axis=1), [M]),
    TakeLabels: ([x], lambda: take_labels(x, np.array([0, 3, 1])), [M]),
    # graphjit.tensor.linalg (LAPACK), on the symmetric positive definite x x^T + I
    la.Cholesky: ([x], lambda: la.cholesky(_spd()), [M]),
    la.SolveTriangular: ([x, v], lambda: la.solve_triangular(la.cholesky(_spd()), v[:3], lower=True), [M, V]),
    la.ChoSolve: ([x, v], lambda: la.cho_solve((la.cholesky(_spd()), True), v[:3]), [M, V]),
    la.Solve: ([x, v], lambda: la.solve(_spd(), v[:3]), [M, V]),
    la.Inv: ([x], lambda: la.inv(_spd()), [M]),
    la.Det: ([x], lambda: la.det(_spd()), [M]),
    la.SlogDet: ([x], lambda: la.slogdet(_spd())[1], [M]),
    la.Eigh: ([x], lambda: la.eigvalsh(_spd()), [M]),
    la.Eig: ([x], lambda: abs(la.eig(_spd())[0]).sum(), [M]),     # order-free: LAPACK builds may differ
    la.CholInvDiag: ([x, v], lambda: la.chol_inv_diag(la.cholesky(_spd()), v[:3]), [M, V]),
    la.ExtractDiag: ([x], lambda: la.diagonal(x), [M]),
    la.AllocDiag: ([v], lambda: la.AllocDiag()(v, 4, 5), [V]),
    la.LUFactor: ([x], lambda: la.lu_factor(_spd())[0], [M]),
    la.LUSolve: ([x, v], lambda: la.lu_solve(la.lu_factor(_spd()), v[:3]), [M, V]),
    la.LU: ([x], lambda: la.lu(_spd())[1], [M]),
    la.SVD: ([x], lambda: la.svd(_spd(), compute_uv=False), [M]),
    la.QR: ([x], lambda: abs(la.qr(x, "r")), [M]),
    la.EighGeneral: ([x], lambda: la.eigvalsh(_spd() - 2 * eye(3), _spd()), [M]),
    la.Lstsq: ([x, v], lambda: la.lstsq(x.T, v)[0], [M, V]),
    la.Expm: ([x], lambda: la.expm(0.1 * _spd()), [M]),
    Blockwise: ([x, y], lambda: Blockwise(Dot(), "(n),(n)->()")(x, y[::-1]), [M, M]),
    SearchSorted: ([v], lambda: searchsorted(v, v[::-1] * 0.5), [V]),
    Nonzero: ([x], lambda: nonzero(gt.gt(x, 0.5))[1], [M]),
    Bincount: ([x], lambda: bincount(gt.cast(x * 7, "int64").flatten()), [M]),
    Unique: ([x], lambda: unique(gt.floor(x * 3)), [M]),
    gsort.Sort: ([x], lambda: gsort.sort(x[::-1], axis=0), [M]),
    gsort.ArgSort: ([x], lambda: gsort.argsort(-x, axis=1), [M]),
    gsort.Partition: ([v], lambda: gsort.partition(v[::-1], 1), [V]),
    gsort.TopK: ([x], lambda: gsort.topk(x, 2), [M]),
    LaneGather: ([x], lambda: LaneGather(1)(x, gsort.argsort(-x, axis=1)), [M]),
    LaneScatter: ([x], lambda: LaneScatter(1)(x, gsort.argsort(-x, axis=1), 4), [M]),
    CheckAndRaise: ([x], lambda: CheckAndRaise("ValueError", "bad")(x, gt.gt(x.sum(), -100.0)) * 2.0, [M]),
    Repeat: ([v], lambda: Repeat(0)(v, COUNTS), [V]),
    RepeatSum: ([v], lambda: RepeatSum(0)(v, COUNTS, Repeat(0)(v, COUNTS) * 2.0), [V]),
    # draws from a fresh generator seeded alike in both modes (not inplace: the copy is made natively)
    RandomVariable: ([v], lambda: NormalRV("float64", True)(_rng(), (2, 4), v, 1.0), [V]),
    UniformRV: ([v], lambda: UniformRV("float32")(_rng(), v, 2.0), [V]),
    IntegersRV: ([], lambda: IntegersRV("int16", True)(_rng(), (5,), -3, 9), []),
    ChoiceRV: ([v], lambda: ChoiceRV("float64", True)(_rng(), (6,), v), [V]),
    BinomialRV: ([v], lambda: BinomialRV("int64")(_rng(), 7, abs(v) * 0.5), [V]),
    PermutationRV: ([x], lambda: PermutationRV("float64", axis=1)(_rng(), x), [M]),
    PermutedRV: ([x], lambda: PermutedRV("float64", axis=0)(_rng(), x), [M]),
    DirichletRV: ([x], lambda: DirichletRV("float64")(_rng(), x + 1.0), [M]),
    MultinomialRV: ([], lambda: MultinomialRV("int64", True)(_rng(), (3,), 9, np.array([0.2, 0.8])), []),
    MultivariateNormalRV: ([x], lambda: MultivariateNormalRV("float64", True)(_rng(), (2,), x[0, :3], _spd()), [M]),
    NegativeBinomialRV: ([v], lambda: NegativeBinomialRV("int64", True)(_rng(), (4,), 2.5, abs(v) * 0.5 + 0.2), [V]),
    Scan: ([x], lambda: gj.scan(lambda r, acc: acc * 0.5 + r, sequences=x, outputs_info=gt.zeros((4,)))[0], [M]),
}


def compiled(inputs: Sequence[Any], output: Any, mode: Any = RAW) -> Any:
    """A Function compiled with the LLVM linker (fallback warnings ignored: the tests look at fallback_nodes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gj.function(list(inputs), output, mode=mode)


def test_every_registered_lowering_has_a_case():
    registry.load_builtins()        # with the deferred ones (builtin_table.DEFERRED): Scan's module is imported here
    assert set(lowerings._entries) == set(CASES)


@pytest.mark.parametrize("cls", list(CASES), ids=lambda c: c.__name__)
def test_registered_class_lowers_natively(cls):
    inputs, build, values = CASES[cls]
    f = compiled(inputs, build())
    nodes = [n for n in f.maker.fgraph.toposort() if isinstance(n.op, cls)]
    assert nodes, f"the graph lost its {cls.__name__}"
    assert not any(hasattr(n.op, "lower") or hasattr(n.op, "can_lower") for n in nodes)   # no trampolines
    assert f.native.fallback_nodes == []
    want = compiled(inputs, build(), mode="PY")(*values)
    np.testing.assert_allclose(f(*values), want)


def test_unregistered_class_falls_back_to_perform():
    """What lowers a registered op is its registry entry: without it, the node calls back into perform."""
    entry = lowerings._entries[Reshape]
    lowerings.unregister(Reshape)
    try:
        f = compiled([x], x.reshape((4, 3)))
        assert [type(n.op) for n in f.native.fallback_nodes] == [Reshape]
        np.testing.assert_allclose(f(M), M.reshape(4, 3))
    finally:
        lowerings.register(Reshape, version=entry.version, applies=entry.applies, **entry.options)(entry.impl)




class Triple(Op):
    """A user's op lowered through the hook alone (no registration): 3 * x into a fresh array."""

    __props__ = ()

    def make_node(self, a: Any) -> Apply:
        a = gt.as_tensor_variable(a)
        return Apply(self, [a], [a.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = inputs[0] * 3

    def lower(self, ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
        (a,) = inputs
        n = ctx.shape(a, 0)
        res = ctx.allocate(node, 0, [n])
        with ctx.for_range(n) as i:
            value = ctx.load_element(a, [i])
            ctx.store_element(res, [i], ctx.builder.fmul(value, ir.Constant(value.type, 3.0)))
        return [res]


class TripleV2(Triple):
    """Triple with a lower_version hook."""

    def lower_version(self) -> tuple:
        return (2,)


def test_user_op_with_only_the_lower_hook_compiles_natively():
    f = compiled([v], Triple()(v), mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    assert "fmul" in f.native.llvm_ir
    np.testing.assert_allclose(f(V), 3 * V)
    assert lowering_version(Triple()) == (0,) and lowering_version(TripleV2()) == (2,)


def test_hook_on_a_subclass_beats_the_base_registration():
    class MyReshape(Reshape):
        def lower(self, ctx, node, inputs):
            raise AssertionError("not reached: can_lower says no")

        def can_lower(self, node):
            return False

    node = MyReshape(2)(x, [4, 3]).owner
    assert lowerings.lookup(MyReshape) is None and not node_is_lowered(node, {})
    assert lowerings.lookup(type("Plain", (Reshape,), {})) is lowerings.lookup(Reshape)


def test_registering_a_class_twice_raises():
    reg: ClassRegistry[Any] = ClassRegistry("lowering", hook="lower")
    reg.register(Triple)(lambda ctx, node, inputs: inputs)
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Triple)(lambda ctx, node, inputs: inputs)
    with pytest.raises(ValueError, match="already registered"):
        lowerings.register(Reshape)(lambda ctx, node, inputs: inputs)
    with pytest.raises(TypeError):
        reg.register(Triple())


class Quadruple(Op):
    """An op with perform only, lowered by a registration the test makes and removes."""

    __props__ = ()

    def make_node(self, a: Any) -> Apply:
        a = gt.as_tensor_variable(a)
        return Apply(self, [a], [a.type()])

    def perform(self, node: Apply, inputs: Sequence[Any], out: list) -> None:
        out[0][0] = inputs[0] * 4


def lower_quadruple(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """4 * x into a fresh array."""
    (a,) = inputs
    n = ctx.shape(a, 0)
    res = ctx.allocate(node, 0, [n])
    with ctx.for_range(n) as i:
        value = ctx.load_element(a, [i])
        ctx.store_element(res, [i], ctx.builder.fmul(value, ir.Constant(value.type, 4.0)))
    return [res]


def test_lowering_version_changes_the_cache_keys():
    """A lowering registered outside graphjit changes its version, not graphjit's sources: the structural
    signature (the in-memory map's key and, hashed, the disk plan's) changes with it."""
    assert compiled([v], Quadruple()(v), mode="FAST_RUN").native.fallback_nodes   # perform until registered
    compiler = get_compiler()
    keys, hits = [], []
    for version in [(1,), (1,), (2,)]:
        lowerings.register(Quadruple, version=version)(lower_quadruple)
        try:
            f = compiled([v], Quadruple()(v), mode="FAST_RUN")
            assert f.native.fallback_nodes == []
            np.testing.assert_allclose(f(V), 4 * V)
            fgraph = f.maker.fgraph
            sig = llvm_linker.structural_signature(fgraph, fgraph.toposort(), 3, True)
            keys.append(plan_key(sig, llvm_linker._host(compiler)))
            hits.append(f.native.memory_hit)
        finally:
            lowerings.unregister(Quadruple)
    assert keys[0] == keys[1] != keys[2]
    assert hits[1:] == [True, False]


def test_applies_false_keeps_perform():
    only_float32 = lambda node: node.inputs[0].type.dtype == "float32"  # noqa: E731
    lowerings.register(Quadruple, version=(3,), applies=only_float32)(lower_quadruple)
    try:
        f = compiled([v], Quadruple()(v), mode="FAST_RUN")
        assert [type(n.op) for n in f.native.fallback_nodes] == [Quadruple]
        np.testing.assert_allclose(f(V), 4 * V)
        w = gt.fvector("w")
        assert compiled([w], Quadruple()(w), mode="FAST_RUN").native.fallback_nodes == []
    finally:
        lowerings.unregister(Quadruple)


class Opaque(Type):
    """A user's Type with its own layout hooks."""

    def filter(self, data: Any, strict: bool = False, allow_downcast: Any = None) -> Any:
        return data

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def llvm_layout(self, ctx: Any = None) -> ir.Type:
        return ir.IntType(8).as_pointer()

    def llvm_version(self) -> tuple:
        return (7,)


def test_type_layouts_are_registered_and_user_hooks_still_work():
    assert type(type_layout(gt.dmatrix().type)) is TensorLayout
    assert type_layout(gt.dmatrix().type).arg_spec().kind == "array"
    assert type_layout(TensorType("complex128", (None,))).arg_spec().kind == "array"     # native since issue 35
    assert type_layout(ScalarType("float32")).layout() == ir.FloatType()
    assert type_layout(EnumList("A", "B")).layout() == ir.IntType(64)
    assert type(type_layout(Generic())) is ObjectLayout
    hooked = type_layout(Opaque())
    assert type(hooked) is HookLayout and hooked.layout() == ir.IntType(8).as_pointer()
    # a user's hook versions its layout; graphjit's own layouts need none (its source digest is in the keys)
    assert layout_version(Opaque()) == (7,) and layout_version(gt.dmatrix().type) is None
    for t in (TensorType, ScalarType, Generic):
        assert not any(name.startswith("llvm_") for name in vars(t)), t


def test_a_subclass_of_a_registered_type_keeps_its_layout():
    """The lowerings expect a tensor's array struct: a hook on a TensorType subclass does not change it."""
    class Hooked(TensorType):
        def llvm_layout(self, ctx: Any = None) -> ir.Type:
            return ir.IntType(8).as_pointer()

    layout = type_layout(Hooked("float64", (None,)))
    assert type(layout) is TensorLayout and layout.arg_spec().kind == "array"
