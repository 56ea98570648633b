"""History, Validator, ReplaceValidate and Supervisor."""

import pytest

from graphjit.graph.features import AlreadyThere, Feature, History, ReplaceValidate, Supervisor, Validator
from graphjit.graph.fg import FunctionGraph, InconsistencyError
from graphjit.graph.type import generic
from toy_ops import add, append, append_inplace, double, length, mul, sub


class NoMul(Feature):
    """Declares graphs containing a mul invalid."""

    def validate(self, fgraph):
        if any(node.op == mul for node in fgraph.apply_nodes):
            raise InconsistencyError("mul is not allowed")


def graph():
    x, y = double("x"), double("y")
    return FunctionGraph([x, y], [sub(add(x, y), y)])


def test_history_reverts_to_a_checkpoint():
    fg = graph()
    fg.attach_feature(History())
    x, y = fg.inputs
    before = [n.op for n in fg.toposort()]
    chk = fg.checkpoint()
    fg.replace(fg.outputs[0].owner.inputs[0], mul(x, y))
    fg.replace(fg.outputs[0], add(x, x))
    assert [n.op for n in fg.toposort()] == [add]
    fg.revert(chk)
    assert [n.op for n in fg.toposort()] == before
    fg.check_integrity()


def test_history_twice_raises_and_detach_removes_methods():
    fg = graph()
    history = History()
    fg.attach_feature(history)
    with pytest.raises(AlreadyThere):
        fg.attach_feature(History())
    fg.remove_feature(history)
    assert not hasattr(fg, "checkpoint") and not hasattr(fg, "revert")


def test_validator_consistent():
    fg = graph()
    fg.attach_feature(Validator())
    fg.attach_feature(NoMul())
    assert fg.consistent()
    fg.replace(fg.outputs[0], mul(*fg.inputs))
    assert not fg.consistent()


def test_replace_validate_keeps_valid_changes():
    fg = graph()
    fg.attach_feature(ReplaceValidate())
    x, y = fg.inputs
    fg.replace_validate(fg.outputs[0], add(x, y), reason="ok")
    assert [n.op for n in fg.toposort()] == [add]
    fg.replace_all_validate([(fg.outputs[0], sub(x, y))])
    assert [n.op for n in fg.toposort()] == [sub]


def test_replace_validate_reverts_on_inconsistency():
    fg = graph()
    fg.attach_feature(ReplaceValidate())
    fg.attach_feature(NoMul())
    x, y = fg.inputs
    before = [n.op for n in fg.toposort()]
    with pytest.raises(InconsistencyError, match="mul"):
        fg.replace_all_validate([(fg.outputs[0].owner.inputs[0], add(y, x)),
                                 (fg.outputs[0], mul(x, y))])
    assert [n.op for n in fg.toposort()] == before
    assert fg.outputs[0].owner.inputs[0].owner.inputs == [x, y]
    fg.check_integrity()


def test_replace_validate_detach():
    fg = graph()
    rv = ReplaceValidate()
    fg.attach_feature(rv)
    fg.remove_feature(rv)
    assert not hasattr(fg, "replace_validate") and not hasattr(fg, "consistent")


def test_supervisor_protects_inputs_from_destruction():
    lst, other = generic("lst"), generic("other")
    fg = FunctionGraph([lst, other], [length(append(lst, 1)), length(append(other, 1))])
    protected = fg.inputs[0]
    fg.attach_feature(ReplaceValidate())
    fg.attach_feature(Supervisor([protected]))
    fg.validate()
    node_other = fg.outputs[1].owner.inputs[0].owner
    fg.replace_validate(node_other.outputs[0], append_inplace(fg.inputs[1], 1))
    node = fg.outputs[0].owner.inputs[0].owner
    with pytest.raises(InconsistencyError, match="protected"):
        fg.replace_validate(node.outputs[0], append_inplace(protected, 1))
    assert fg.outputs[0].owner.inputs[0].owner.op == append


def test_supervisor_asks_a_destroy_handler_when_present():
    fg = graph()
    fg.destroyers = lambda var: [object()] if var is fg.inputs[0] else []
    fg.attach_feature(Supervisor([fg.inputs[1]]))
    fg.validate()
    fg.attach_feature(Supervisor([fg.inputs[0]]))
    with pytest.raises(InconsistencyError, match="destroy"):
        fg.validate()
