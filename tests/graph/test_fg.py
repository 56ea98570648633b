"""FunctionGraph: cloning, clients, replacement, pruning callbacks, features, errors."""

import pickle

import pytest

from graphjit.graph.basic import Constant
from graphjit.graph.features import Feature
from graphjit.graph.fg import FunctionGraph, InconsistencyError, MissingInputError
from graphjit.graph.type import generic
from toy_ops import add, append, divmod_op, double, length, mul, sub


class Recorder(Feature):
    """Records every callback."""

    def __init__(self):
        self.events = []

    def on_attach(self, fgraph):
        self.events.append(("attach",))

    def on_detach(self, fgraph):
        self.events.append(("detach",))

    def on_import(self, fgraph, node, reason):
        self.events.append(("import", node.op, reason))

    def on_prune(self, fgraph, node, reason):
        self.events.append(("prune", node.op, reason))

    def on_change_input(self, fgraph, node, i, old, new, reason):
        self.events.append(("change", i, old, new, reason))


def test_clone_leaves_the_user_graph_alone():
    x, y = double("x"), double("y")
    e = add(x, y)
    fg = FunctionGraph([x, y], [e])
    assert fg.inputs[0] is not x and fg.inputs[0].name == "x"
    assert fg.outputs[0] is not e and fg.outputs[0].owner.op == add
    assert not hasattr(x, "clients") and not hasattr(e, "clients")
    same = FunctionGraph([x, y], [e], clone=False)
    assert same.inputs[0] is x and same.outputs[0] is e


def test_clients_as_in_the_seed_example():
    v = double("v")
    fg = FunctionGraph([v], [mul(add(v, 1.0), 2.0)])
    topo = fg.toposort()
    assert [n.op for n in topo] == [add, mul]
    var = topo[0].outputs[0]
    assert var.clients == [(topo[1], 0)]
    assert var.clients is fg.clients[var]
    client = var.clients[0]
    assert client[0].inputs[client[1]] is var
    out = topo[1].outputs[0]
    assert out.clients == [("output", 0)]
    assert fg.outputs[out.clients[0][1]] is out
    assert fg.clients[fg.inputs[0]] == [(topo[0], 0)]


def test_orphan_constants_are_copied_not_shared():
    """Regression: the user's Constants must not be bound to the compiled graph's client lists."""
    x, c = double("x"), Constant(double, 1.0)
    fg = FunctionGraph([x], [add(x, c)])
    k = fg.outputs[0].owner.inputs[1]
    assert k is not c and k.equals(c) and not hasattr(c, "clients")
    fg2 = fg.clone()
    assert k.clients is fg.clients[k]
    assert fg2.outputs[0].owner.inputs[1] is not k
    pickle.dumps(c)


def test_constant_output_and_input_output():
    x = double("x")
    c = Constant(double, 2.0)
    fg = FunctionGraph([x], [x, c])
    assert fg.outputs[0] is fg.inputs[0] and fg.toposort() == []
    assert fg.clients[fg.inputs[0]] == [("output", 0)]
    assert isinstance(fg.outputs[1], Constant)


def test_inputs_are_inferred_when_not_given():
    x, y = double("x"), double("y")
    fg = FunctionGraph(outputs=[add(x, mul(y, 1.0))], clone=False)
    assert fg.inputs == [x, y]
    with pytest.raises(ValueError, match="outputs"):
        FunctionGraph([x])


def test_bad_inputs():
    x, y = double("x"), double("y")
    e = add(x, y)
    with pytest.raises(TypeError, match="Constant"):
        FunctionGraph([Constant(double, 1.0)], [e])
    with pytest.raises(ValueError, match="graph roots"):
        FunctionGraph([e], [mul(e, e)])
    with pytest.raises(ValueError, match="twice"):
        FunctionGraph([x, x], [e])


def test_missing_input_names_the_variable_and_its_line():
    x, y = double("x"), double("y")
    e = add(x, y)
    with pytest.raises(MissingInputError) as info:
        FunctionGraph([x], [e])
    assert "'y'" in str(info.value) and __file__ in str(info.value)


def test_change_node_input_prunes_and_calls_back():
    x, y = double("x"), double("y")
    fg = FunctionGraph([x, y], [sub(mul(x, y), y)], clone=False)
    rec = Recorder()
    fg.attach_feature(rec)
    out_node = fg.outputs[0].owner
    old = out_node.inputs[0]
    fg.change_node_input(out_node, 0, x, reason="test")
    assert ("prune", mul, "test") in rec.events
    assert ("change", 0, old, x, "test") in rec.events
    assert old.owner not in fg.apply_nodes and old not in fg.variables
    assert (out_node, 0) in fg.clients[x]
    fg.check_integrity()
    fg.change_node_input(out_node, 0, add(x, y), reason="back")
    assert ("import", add, "back") in rec.events
    assert len(fg.apply_nodes) == 2
    fg.check_integrity()


def test_change_node_input_checks_types():
    x = double("x")
    lst = generic("lst")
    fg = FunctionGraph([x, lst], [add(x, 1.0), length(lst)], clone=False)
    with pytest.raises(TypeError, match="differs"):
        fg.change_node_input(fg.outputs[0].owner, 0, lst)
    with pytest.raises(TypeError, match="output 0"):
        fg.change_node_input("output", 0, lst)


def test_replace_intermediate_and_output():
    x, y = double("x"), double("y")
    prod = mul(x, y)
    out = add(prod, prod)
    fg = FunctionGraph([x, y], [out], clone=False)
    fg.replace(prod, sub(x, y), reason="r")
    assert [n.op for n in fg.toposort()] == [sub, add]
    assert prod not in fg.variables
    fg.check_integrity()
    new_out = mul(fg.outputs[0], 2.0)
    fg.replace(fg.outputs[0], new_out)
    assert fg.outputs[0] is new_out and fg.clients[new_out] == [("output", 0)]
    fg.check_integrity()
    fg.replace(double("unrelated"), x)  # not in the graph: ignored


def test_replace_refuses_an_incompatible_type():
    x = double("x")
    fg = FunctionGraph([x], [add(x, 1.0)], clone=False)
    with pytest.raises(TypeError, match="cannot replace"):
        fg.replace(fg.outputs[0], generic("g"))


def test_replace_all_and_toposort_cache():
    x, y = double("x"), double("y")
    a, b = add(x, y), mul(x, y)
    fg = FunctionGraph([x, y], [a, b], clone=False)
    first = fg.toposort()
    assert fg.toposort() == first and fg.toposort() is not fg.toposort()
    fg.replace_all([(a, sub(x, y)), (b, sub(y, x))])
    assert [n.op for n in fg.toposort()] == [sub, sub]


def test_multiple_output_node_is_pruned_only_when_all_outputs_are_unused():
    x, y = double("x"), double("y")
    q, r = divmod_op(x, y)
    fg = FunctionGraph([x, y], [q, r], clone=False)
    fg.replace(q, x)
    assert r.owner in fg.apply_nodes
    fg.replace(r, y)
    assert not fg.apply_nodes


def test_add_input_add_output_and_update_mapping():
    x, y = double("x"), double("y")
    fg = FunctionGraph([x], [add(x, 1.0)], clone=False, update_mapping={0: 0})
    assert fg.update_mapping == {0: 0}
    fg.add_input(y)
    fg.add_output(mul(y, 2.0))
    assert fg.inputs == [x, y] and len(fg.outputs) == 2
    fg.check_integrity()


def test_features_attach_detach_and_collect():
    x = double("x")
    fg = FunctionGraph([x], [add(x, 1.0)])
    rec = Recorder()
    fg.attach_feature(rec)
    fg.attach_feature(rec)
    assert fg.features.count(rec) == 1 and rec.events == [("attach",)]
    fg.remove_feature(rec)
    assert rec.events[-1] == ("detach",) and rec not in fg.features


def test_orderings_from_features_constrain_toposort():
    x = double("x")
    a, b = add(x, 1.0), mul(x, 2.0)
    fg = FunctionGraph([x], [a, b], clone=False)
    assert fg.toposort() == [a.owner, b.owner]

    class BFirst(Feature):
        def orderings(self, fgraph):
            return {a.owner: [b.owner]}

    fg.attach_feature(BFirst())
    fg._toposort_cache = None
    assert fg.toposort() == [b.owner, a.owner]


def test_plain_toposort_ignores_orderings_and_reuses_the_plain_cache():
    x = double("x")
    a, b = add(x, 1.0), mul(x, 2.0)
    fg = FunctionGraph([x], [a, b], clone=False)
    assert fg.plain_toposort() == [a.owner, b.owner] and fg._toposort_cache is None
    order = fg.toposort()
    assert fg.plain_toposort() == order and fg.plain_toposort() is not fg._toposort_cache

    class BFirst(Feature):
        def orderings(self, fgraph):
            return {a.owner: [b.owner]}

    fg.attach_feature(BFirst())
    assert fg.plain_toposort() == [a.owner, b.owner]        # the order without orderings is still plain
    fg._toposort_cache = None
    assert fg.toposort() == [b.owner, a.owner]
    assert fg.plain_toposort() == [a.owner, b.owner]        # not the cached order, which used the orderings
    fg.replace(a, sub(x, 1.0))                              # a change drops the cache
    assert [n.op for n in fg.plain_toposort()] == [sub, mul]


def test_validate_raises_from_features_and_clone_is_independent():
    x = double("x")
    fg = FunctionGraph([x], [add(x, 1.0)])

    class Refuse(Feature):
        def validate(self, fgraph):
            raise InconsistencyError("no")

    cp = fg.clone()
    assert cp.outputs[0] is not fg.outputs[0]
    cp.replace(cp.outputs[0], mul(cp.inputs[0], 3.0))
    assert fg.outputs[0].owner.op == add
    fg.attach_feature(Refuse())
    with pytest.raises(InconsistencyError):
        fg.validate()


def test_appending_to_a_generic_list_graph():
    lst = generic("lst")
    fg = FunctionGraph([lst], [length(append(lst, 3))])
    assert [n.op for n in fg.toposort()] == [append, length]
