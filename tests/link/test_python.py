"""Container filtering and the PerformLinker (storage, no_recycling, gc, node errors)."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.graph.basic import Apply, Constant
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.op import Op
from graphjit.graph.type import generic
from graphjit.link.basic import Container, Linker, describe_value, map_storage
from graphjit.link.python import PerformLinker
from toy_ops import Fail, add, div, double, mul, sub

# The toy ops (tests/toy_ops.py) have only a Python perform: under the LLVM linker their FallbackWarning
# is expected (it is emitted once per op per process, so whichever test compiles one first sees it).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def test_container_filters_through_the_type():
    x = double("x")
    c = Container(x, [None])
    c.data = 3
    assert c.data == 3.0 and type(c.value) is float and c.storage == [3.0]
    c.value = None
    assert c.data is None
    with pytest.raises(TypeError) as info:
        c.data = "abc"
    message = str(info.value)
    assert "'x'" in message and __file__ in message


def test_container_strict_and_downcast():
    x = double("x")
    strict = Container(x, [None], strict=True)
    with pytest.raises(TypeError, match="strict"):
        strict.data = 3
    strict.data = 3.0
    down = Container(x, [None], allow_downcast=True)
    down.data = "2.5"
    assert down.data == 2.5


def test_container_readonly_type_only_and_copy():
    c = Container(double, [1.0], readonly=True, name="k")
    with pytest.raises(ValueError, match="read-only"):
        c.data = 2.0
    assert c.variable is None and c.type is double and "'k'" in c.describe()
    assert "double" in Container(double, [None]).describe()
    lst = Container(generic, [[1, 2]])
    cp = lst.copy()
    assert cp.data == [1, 2] and cp.data is not lst.data and cp.storage is not lst.storage
    shared = lst.copy(storage=lst.storage)
    assert shared.storage is lst.storage
    assert str(lst) == "<[1, 2]>" and repr(Container(generic, ["a"])) == "<'a'>"
    with pytest.raises(TypeError, match="one-element"):
        Container(double, [])
    with pytest.raises(TypeError):
        Container("nope", [None])


def graph():
    x, y = double("x"), double("y")
    e = mul(add(x, y), sub(x, 1.0))
    return FunctionGraph([x, y], [e, add(x, y)])


def test_accept_returns_a_bound_copy():
    proto = PerformLinker()
    fg = graph()
    bound = proto.accept(fg)
    assert proto.fgraph is None and bound.fgraph is fg and bound is not proto
    with pytest.raises(ValueError, match="accept"):
        proto.make_thunk()
    with pytest.raises(NotImplementedError):
        Linker().accept(fg).make_thunk()
    assert "allow_gc" in repr(proto) and str(proto) == "PerformLinker"


def test_make_thunk_computes_in_topological_order():
    fg = graph()
    thunk, inputs, outputs, thunks, order = PerformLinker().accept(fg).make_thunk()
    assert order == fg.toposort() and len(thunks) == len(order)
    inputs[0].data, inputs[1].data = 3.0, 4.0
    thunk()
    assert [o.data for o in outputs] == [14.0, 7.0]
    with pytest.raises(ValueError, match="read-only"):
        outputs[0].data = 1.0


def test_constants_are_preloaded():
    fg = graph()
    thunk, *_ = PerformLinker().accept(fg).make_thunk()
    constants = [v for v in thunk.storage_map if isinstance(v, Constant)]
    assert constants and all(thunk.storage_map[c] == [c.data] for c in constants)


class PeekOutput(Op):
    """Copies its input to its output, first recording what the output cell held."""

    __props__ = ()

    def __init__(self):
        self.peeked = []

    def make_node(self, x):
        return Apply(self, [x], [generic()])

    def perform(self, node, inputs, output_storage):
        self.peeked.append(output_storage[0][0])
        output_storage[0][0] = list(inputs[0])


@pytest.mark.parametrize("recycle", [False, True])
def test_no_recycling_cells_are_cleared_before_each_call(recycle):
    g = generic("g")
    op = PeekOutput()
    fg = FunctionGraph([g], [op(g)])
    no_recycling = [] if recycle else fg.outputs
    thunk, inputs, outputs, _, _ = PerformLinker().accept(fg, no_recycling).make_thunk()
    inputs[0].data = [1]
    thunk()
    first = outputs[0].data
    thunk()
    assert op.peeked == ([None, first] if recycle else [None, None])
    assert outputs[0].data == [1] and (outputs[0].data is not first)


def test_allow_gc_frees_intermediates():
    fg = graph()
    thunk, inputs, outputs, thunks, order = PerformLinker(allow_gc=True).accept(fg).make_thunk()
    inputs[0].data, inputs[1].data = 3.0, 4.0
    thunk()
    intermediate = order[[n.op for n in order].index(sub)].outputs[0]
    assert thunk.storage_map[intermediate] == [None]
    kept = PerformLinker(allow_gc=False).accept(fg).make_thunk()
    kept[1][0].data, kept[1][1].data = 3.0, 4.0
    kept[0]()
    assert kept[0].storage_map[kept[4][[n.op for n in kept[4]].index(sub)].outputs[0]] == [2.0]


def test_node_error_keeps_type_and_names_op_values_and_line():
    x, y = double("x"), double("y")
    q = div(x, y)
    fg = FunctionGraph([x, y], [add(q, 1.0)])
    fn = PerformLinker().accept(fg).make_function()
    with pytest.raises(ZeroDivisionError) as info:
        fn(1.0, 0.0)
    message = str(info.value)
    assert "Apply node that caused the error: div(x, y)" in message
    assert "Inputs values: [1.0, 0.0]" in message and "Inputs types: [double, double]" in message
    assert "Toposort index: 0" in message
    assert f"Created at: {q.trace}" in message
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert info.value.node.op == div


class OddError(Exception):
    def __init__(self, code, detail):
        super().__init__(f"{code}: {detail}")


class RaisesOdd(Fail):
    def perform(self, node, inputs, output_storage):
        raise OddError(7, "odd")


def test_node_error_with_unusual_constructor_gets_a_note():
    x = double("x")
    fg = FunctionGraph([x], [RaisesOdd()(x)])
    fn = PerformLinker().accept(fg).make_function()
    with pytest.raises(OddError) as info:
        fn(1.0)
    assert any("Apply node that caused the error" in n for n in info.value.__notes__)


def test_node_error_reports_shapes_and_dtypes():
    import numpy as np
    assert describe_value(np.zeros((2, 3), "float32")) == "ndarray shape=(2, 3) dtype=float32"
    assert describe_value("x" * 100) == "str (repr too long)"
    g = generic("g")
    fg = FunctionGraph([g], [Fail(ValueError)(g)])
    fn = PerformLinker().accept(fg).make_function()
    with pytest.raises(ValueError, match=r"shape=\(2,\) dtype=int64"):
        fn(np.arange(2))


def test_make_function_checks_argument_count():
    fn = PerformLinker().accept(graph()).make_function()
    assert fn(3.0, 4.0) == [14.0, 7.0]
    with pytest.raises(TypeError, match="2 arguments"):
        fn(1.0)


def test_map_storage_uses_given_cells():
    fg = graph()
    order = fg.toposort()
    cells = [[1.0], [2.0]]
    out_cells = [[None], [None]]
    inputs, outputs, storage_map = map_storage(fg, order, cells, out_cells)
    assert inputs[0] is cells[0] and storage_map[fg.inputs[1]] is cells[1]
    assert outputs[0] is out_cells[0]
    with pytest.raises(ValueError, match="input cells"):
        map_storage(fg, order, [[1.0]])
    with pytest.raises(ValueError, match="output cells"):
        map_storage(fg, order, None, [[None]])
    thunk, inputs, outputs, _, _ = PerformLinker().accept(fg).make_thunk(input_storage=cells,
                                                                         output_storage=out_cells)
    thunk()
    assert out_cells[0][0] == 0.0 and out_cells[1][0] == 3.0


def _elementwise(x, y):
    return [gt.exp(x) + gt.log1p(y), y * 3 - x], lambda a, b: [np.exp(a) + np.log1p(b), b * 3 - a]


def _inc_subtensor(x, y):          # a destroyer that is not an elementwise loop
    def ref(a, b):
        a = a.copy()
        a[0:2] += 10.0
        return [a * 1, b + 0.5]
    return [gt.inc_subtensor(x[0:2], 10.0) * 1, y + 0.5], ref


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN", "FAST_COMPILE"])
@pytest.mark.parametrize("mutable", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("views", ["same", "overlap", "reversed", "disjoint", "interleaved"])
@pytest.mark.parametrize("graph", [_elementwise, _inc_subtensor])
def test_mutable_inputs_sharing_memory(mode, mutable, views, graph):
    """Inputs declared mutable may be overwritten, but each is read as the caller gave it (PY = numpy)."""
    x, y = gt.dvector("x"), gt.dvector("y")
    ins = [gj.In(x, mutable=mutable[0]), gj.In(y, mutable=mutable[1])]
    if mutable[0]:
        outs, reference = graph(x, y)
    else:                               # the destroyer works on y
        outs, swapped = graph(y, x)

        def reference(a, b):
            return swapped(b, a)
    f = gj.function(ins, outs, mode=mode)

    def args(a):
        return {"same": (a, a), "overlap": (a[1:], a[:-1]), "reversed": (a[::-1], a),
                "disjoint": (a[:3], a[3:]), "interleaved": (a[::2], a[1::2])}[views]

    want = reference(*(v.copy() for v in args(np.arange(6.0))))
    got = f(*args(np.arange(6.0)))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


def test_destroyed_inputs():
    from graphjit.link.basic import destroyed_inputs
    x, y = gt.dvector("x"), gt.dvector("y")
    f = gj.function([gj.In(x, mutable=True), y], gt.exp(x) + gt.log1p(y), mode="PY")
    fgraph = f.maker.fgraph
    assert destroyed_inputs(fgraph, fgraph.toposort()) == [0]
