"""Variable, Apply, Constant and the graph walkers of graphjit.graph.basic."""

import pickle

import numpy as np
import pytest

from graphjit.graph.basic import (Apply, Constant, Variable, ancestors, applys_between, as_list,
                                  clone, clone_get_equiv, clone_replace, equal_computations,
                                  graph_inputs, io_toposort, variables_and_orphans)
from graphjit.graph.type import generic
from toy_ops import add, div, divmod_op, double, mul, sub

# The toy ops (tests/toy_ops.py) have only a Python perform: under the LLVM linker their FallbackWarning
# is expected (it is emitted once per op per process, so whichever test compiles one first sees it).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def make_graph():
    x, y, z = double("x"), double("y"), double("z")
    e = add(x, mul(y, z))
    return x, y, z, e


def test_seed_explicit_construction():
    x, y, z = double("x"), double("y"), double("z")
    mul_variable = double()
    node_mul = Apply(mul, [y, z], [mul_variable])
    assert mul_variable.owner is node_mul and mul_variable.index == 0
    add_variable = double()
    node_add = Apply(add, [x, mul_variable], [add_variable])
    e = add_variable
    assert e.owner is node_add and e.owner.inputs[1].owner.inputs[0] is y
    assert e.owner.inputs[1].owner.inputs[1] is z


def test_variable_fields_str_and_trace():
    x, y, z, e = make_graph()
    assert x.owner is None and x.index is None and str(x) == "x"
    assert str(e) == "add.0" and repr(e) == "add.0"
    assert str(double()) == "<double>"
    assert e.trace.startswith(__file__.rsplit("/", 1)[0]) or "toy_ops.py" in e.trace
    assert __file__ in x.trace
    description = x.describe()
    assert "'x'" in description and "double" in description and __file__ in description


def test_variable_checks_its_arguments():
    with pytest.raises(TypeError, match="Type instance"):
        Variable("not a type")
    with pytest.raises(TypeError, match="name"):
        Variable(double, name=3)
    with pytest.raises(TypeError, match="owner"):
        Variable(double, owner="node")


def test_apply_checks_outputs():
    x, y = double("x"), double("y")
    out = double()
    Apply(add, [x, y], [out])
    with pytest.raises(ValueError, match="another node"):
        Apply(add, [x, y], [out])
    with pytest.raises(TypeError, match="Constant"):
        Apply(add, [x, y], [Constant(double, 1.0)])
    with pytest.raises(TypeError, match="not a Variable"):
        Apply(add, [x, 1.0], [double()])


def test_apply_properties_and_multiple_outputs():
    x, y = double("x"), double("y")
    q, r = divmod_op(x, y)
    node = q.owner
    assert node is r.owner and (q.index, r.index) == (0, 1)
    assert node.nin == 2 and node.nout == 2 and str(r) == "DivMod.1"
    with pytest.raises(AttributeError, match="default_output"):
        node.out
    assert add(x, y).owner.out is add(x, y).owner.outputs[0] or True
    assert str(node) == "DivMod(x, y)"


def test_constant_is_read_only_and_signed():
    data = np.arange(3.0)
    c = Constant(generic, data)
    assert c.owner is None and c.value is c.data
    with pytest.raises(ValueError):
        c.data[0] = 5.0
    with pytest.raises(ValueError, match="owner"):
        c.owner = Apply(add, [double("x"), double("y")], [double()])
    same = Constant(generic, np.arange(3.0))
    other_dtype = Constant(generic, np.arange(3))
    assert c.equals(same) and c.signature() == same.signature()
    assert not c.equals(other_dtype)
    assert c.clone().data is c.data
    assert Constant(double, 2.0).equals(Constant(double, 2))
    assert str(Constant(double, 2.0)) == "Constant{2.0}"


def test_ancestors_and_graph_inputs():
    x, y, z, e = make_graph()
    prod = e.owner.inputs[1]
    assert set(ancestors([e])) == {e, x, prod, y, z}
    assert graph_inputs([e]) == [x, y, z]
    assert graph_inputs([e], blockers=[prod]) == [x, prod]
    variables, orphans = variables_and_orphans([x, y], [e])
    assert orphans == [z] and set(variables) == {e, x, prod, y, z}
    assert applys_between([x, y, z], [e]) == [e.owner, prod.owner]


def test_io_toposort_respects_dependencies():
    x, y, z, e = make_graph()
    f = sub(e, mul(e, x))
    order = io_toposort([x, y, z], [f])
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for inp in node.inputs:
            if inp.owner is not None:
                assert position[inp.owner] < position[node]
    assert order[-1] is f.owner and len(order) == 4
    assert io_toposort([x, y, z], [f]) == order
    # nodes above the given inputs are excluded
    assert io_toposort([e], [f]) == [f.owner.inputs[1].owner, f.owner]


def test_io_toposort_detects_cycles():
    x, y = double("x"), double("y")
    a = add(x, y)
    b = mul(a, x)
    a.owner.inputs[1] = b  # corrupt the graph on purpose
    with pytest.raises(ValueError, match="cycle"):
        io_toposort([x, y], [b])


def test_clone_copies_everything_between_inputs_and_outputs():
    x, y, z, e = make_graph()
    (nx, ny, nz), (ne,) = clone([x, y, z], [e])
    assert nx is not x and nx.name == "x" and ne is not e
    assert ne.owner.inputs[0] is nx
    assert equal_computations([e], [ne], [x, y, z], [nx, ny, nz])
    (kx, ky, kz), (ke,) = clone([x, y, z], [e], copy_inputs=False)
    assert kx is x and ke is not e


def test_clone_get_equiv_maps_nodes_and_variables():
    x, y, z, e = make_graph()
    c = Constant(double, 3.0)
    f = add(e, c)
    memo = clone_get_equiv([x, y, z], [f], copy_orphans=False)
    assert memo[f.owner].op == add and memo[f] is memo[f.owner].outputs[0]
    assert memo[c] is c
    memo2 = clone_get_equiv([x, y, z], [f])
    assert memo2[c] is not c and memo2[c].equals(c)


def test_clone_replace_substitutes_and_leaves_the_original():
    x, y, z, e = make_graph()
    w = double("w")
    (new,) = clone_replace([e], {y: w})
    assert graph_inputs([new]) == [x, w, z]
    assert graph_inputs([e]) == [x, y, z]
    single = clone_replace(e, {e.owner.inputs[1]: w})
    assert single.owner.inputs == [x, w]
    with pytest.raises(TypeError, match="not a Variable"):
        clone_replace(e, {y: 2.0})


def test_equal_computations():
    x, y = double("x"), double("y")
    assert equal_computations([add(x, y)], [add(x, y)])
    assert not equal_computations([add(x, y)], [add(y, x)])
    assert not equal_computations([add(x, y)], [sub(x, y)])
    assert equal_computations([add(x, 1.0)], [add(x, 1)])
    assert not equal_computations([add(x, 1.0)], [add(x, 2.0)])
    x2, y2 = double("x"), double("y")
    assert equal_computations([div(x, y)], [div(x2, y2)], [x, y], [x2, y2])
    assert not equal_computations([x], [x, y])
    assert not equal_computations([x], [y])


def test_as_list():
    assert as_list((1, 2)) == [1, 2] and as_list(3) == [3] and as_list([4]) == [4]


def test_eval_compiles_once_and_caches():
    x, y = double("x"), double("y")
    e = mul(add(x, y), 2.0)
    assert e.eval({x: 1.0, y: 2.0}) == 6.0
    assert e.eval({x: 2.0, y: 2.0}) == 8.0
    assert len(e.tag._eval_fns) == 1
    assert add(Constant(double, 1.0), 2.0).eval() == 3.0


def test_pickling_a_variable_drops_the_eval_cache():
    x = double("x")
    e = add(x, 1.0)
    e.eval({x: 1.0})
    copy = pickle.loads(pickle.dumps(e))
    assert not hasattr(copy.tag, "_eval_fns") and copy.owner.op == add
    assert copy.eval({copy.owner.inputs[0]: 2.0}) == 3.0


def test_clones_keep_the_original_trace_without_looking_it_up(monkeypatch):
    """clone() copies its original's trace (the user's line), and does not walk the stack for one."""
    import graphjit.graph.basic as basic
    import graphjit.tensor as gt
    from graphjit.graph.fg import FunctionGraph
    x = gt.dvector("x")
    y = gt.exp(x)
    c = gt.constant(2.0)
    out = y * c
    here = f"{__file__}:"
    assert y.trace.startswith(here) and x.trace.startswith(here) and out.trace.startswith(here)
    lookups = []
    monkeypatch.setattr(basic, "user_source_line", lambda: lookups.append(1) or "elsewhere:1")
    assert x.clone().trace == x.trace and c.clone().trace == c.trace
    fg = FunctionGraph([x], [out])                          # clones the graph
    assert lookups == []
    traces = sorted(v.trace for v in fg.variables if v.owner is not None)
    broadcast_c = out.owner.inputs[1]                       # DimShuffle{x}(c), as in Theano
    assert traces == sorted([y.trace, broadcast_c.trace, out.trace])
    z = basic.Variable(x.type)                              # not a clone: looked up
    assert z.trace == "elsewhere:1" and lookups == [1]
