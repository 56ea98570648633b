"""DestroyHandler: one destroyer per storage, no destroyed constants or protected inputs, readers first."""

import pytest

from graphjit.graph.basic import Constant
from graphjit.graph.destroyhandler import DestroyHandler, alias_root, attach_destroy_handler
from graphjit.graph.features import AlreadyThere, ReplaceValidate, Supervisor
from graphjit.graph.fg import FunctionGraph, InconsistencyError
from graphjit.graph.type import generic
from toy_ops import Append, append, append_inplace, view_of


def make(outputs, inputs, protected=()):
    fg = FunctionGraph(inputs, outputs, clone=False)
    fg.attach_feature(ReplaceValidate())
    fg.attach_feature(Supervisor(protected))
    attach_destroy_handler(fg)
    return fg


def test_destroyers_and_alias_roots():
    lst = generic("lst")
    v = view_of(lst)
    out = append_inplace(v, 1)
    fg = make([out], [lst])
    assert alias_root(v) is lst and alias_root(out) is out  # a destroyer's output is a new root
    assert fg.destroyers(lst) == [out.owner] and fg.destroyers(v) == [out.owner]
    assert fg.validate()
    with pytest.raises(AlreadyThere):
        fg.attach_feature(DestroyHandler())


def test_two_destroyers_of_one_storage_are_refused():
    lst = generic("lst")
    a, b = append_inplace(lst, 1), append_inplace(view_of(lst), 2)
    with pytest.raises(InconsistencyError, match="several"):
        make([a, b], [lst]).validate()


def test_constants_and_protected_inputs_are_never_destroyed():
    const = Constant(generic, [1, 2])
    with pytest.raises(InconsistencyError, match="constant"):
        make([append_inplace(const, 3)], []).validate()
    lst = generic("lst")
    with pytest.raises(InconsistencyError, match="protected"):
        make([append_inplace(lst, 3)], [lst], protected=[lst]).validate()


def test_readers_run_before_the_destroyer():
    lst = generic("lst")
    fresh = append(lst, 0)
    reader = append(view_of(fresh), 9)          # reads a view of fresh
    destroyer = append_inplace(fresh, 1)        # overwrites fresh
    fg = make([reader, destroyer], [lst])
    assert fg.validate()
    order = fg.toposort()
    assert order.index(reader.owner) < order.index(destroyer.owner)
    assert reader.owner in fg.orderings()[destroyer.owner]


def test_reading_after_the_destroy_is_a_cycle():
    lst = generic("lst")
    fresh = append(lst, 0)
    destroyer = append_inplace(fresh, 1)
    late = Append()(destroyer, 0)
    needs_both = Append()(late, 0)
    # reading fresh after it has been overwritten: the reader depends on the destroyer
    reader = needs_both.owner.op.make_node(needs_both, fresh).outputs[0]
    with pytest.raises(InconsistencyError, match="cyclic"):
        make([reader], [lst]).validate()


def test_destroyed_value_may_not_be_an_output_or_read_twice_by_the_destroyer():
    lst = generic("lst")
    fresh = append(lst, 0)
    with pytest.raises(InconsistencyError, match="output"):
        make([fresh, append_inplace(fresh, 1)], [lst]).validate()
    fresh = append(lst, 0)
    with pytest.raises(InconsistencyError, match="alias"):
        make([append_inplace(fresh, view_of(fresh))], [lst]).validate()


def test_replace_validate_reverts_an_unsafe_inplace_replacement():
    lst = generic("lst")
    fresh = append(lst, 0)
    plain = append(fresh, 1)
    other = append(fresh, 2)
    fg = make([plain, other], [lst])
    with pytest.raises(InconsistencyError):
        fg.replace_validate(plain, append_inplace(fresh, 1))  # other reads fresh: fine ...
        fg.replace_validate(other, append_inplace(fresh, 2))  # ... but a second destroyer is not
    assert sum(1 for n in fg.apply_nodes if n.op.destroy_map) == 1
    assert fg.validate()


def test_validate_leaves_the_ordered_toposort_cached_for_the_linker():
    """validate() sorts with the orderings through fgraph.toposort(): the linker's order is that cached one, and it
    puts the reader first even though a plain sort (outputs in order) would run the destroyer first."""
    lst = generic("lst")
    fresh = append(lst, 0)
    destroyer = append_inplace(fresh, 1)
    reader = append(view_of(fresh), 9)
    fg = FunctionGraph([lst], [destroyer, reader], clone=False)
    plain = fg.toposort()                                   # cached before the handler exists
    assert plain.index(destroyer.owner) < plain.index(reader.owner)
    attach_destroy_handler(fg)                              # its orderings drop that cache
    assert fg._toposort_cache is None
    assert fg.validate()
    cached = fg._toposort_cache
    assert cached is not None and cached.index(reader.owner) < cached.index(destroyer.owner)
    assert fg.toposort() == cached
    fg.remove_feature(fg.destroy_handler)                   # and so does removing it
    assert fg._toposort_cache is None and fg.toposort() == plain
