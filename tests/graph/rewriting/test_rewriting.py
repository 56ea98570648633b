"""Node/graph rewriters, patterns, walkers, the equilibrium budget, the rewrite database, profiles."""

import warnings

import pytest

import graphjit as gj
from graphjit.graph.basic import Constant, equal_computations
from graphjit.graph.features import ReplaceValidate
from graphjit.graph.fg import FunctionGraph, InconsistencyError
from graphjit.graph.rewriting import (EquilibriumDB, EquilibriumGraphRewriter, PatternNodeRewriter,
                                      RewriteTypeError, SequenceDB, graph_rewriter, in2out,
                                      node_rewriter, out2in, rewriter_profile)
from graphjit.graph.rewriting.basic import apply_node_rewrite
from graphjit.graph.rewriting.walkers import WalkingGraphRewriter
from graphjit.graph.type import generic
from toy_ops import add, double, mul, sub

# The toy ops (tests/toy_ops.py) have only a Python perform: under the LLVM linker their FallbackWarning
# is expected (it is emitted once per op per process, so whichever test compiles one first sees it).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")

x, y, z = double("x"), double("y"), double("z")


def fgraph_of(*outputs):
    return FunctionGraph([x, y, z], list(outputs), clone=False)


@node_rewriter([add])
def add_to_sub(fgraph, node):
    return [sub(*node.inputs)]


@node_rewriter([sub])
def sub_to_add(fgraph, node):
    return [add(*node.inputs)]


def ops(fgraph):
    return [str(n.op) for n in fgraph.toposort()]


def test_node_rewriter_list_dict_none_and_false():
    fg = fgraph_of(mul(add(x, y), z))
    node = fg.outputs[0].owner.inputs[0].owner

    @node_rewriter([add])
    def as_dict(fgraph, node):
        return {node.outputs[0]: sub(*node.inputs)}

    assert apply_node_rewrite(fg, as_dict, node)
    assert ops(fg) == ["sub", "mul"]
    for result in (None, False):
        quiet = node_rewriter([sub])(lambda fgraph, node, r=result: r)
        assert not apply_node_rewrite(fg, quiet, fg.outputs[0].owner.inputs[0].owner)
    bad = node_rewriter([sub])(lambda fgraph, node: [x, y])
    with pytest.raises(ValueError, match="2 replacement"):
        apply_node_rewrite(fg, bad, fg.outputs[0].owner.inputs[0].owner)
    with pytest.raises(TypeError, match="tracks"):
        node_rewriter(add)


def test_replacement_must_keep_the_type_and_names_the_rewrite():
    fg = fgraph_of(add(x, y))

    @node_rewriter([add])
    def to_generic(fgraph, node):
        return [generic()]

    with pytest.raises(RewriteTypeError, match="to_generic"):
        apply_node_rewrite(fg, to_generic, fg.outputs[0].owner)


def test_refused_replacement_is_reverted():
    fg = fgraph_of(add(x, y))

    class Refuse:
        def validate(self, fgraph):
            if any(n.op == sub for n in fgraph.apply_nodes):
                raise InconsistencyError("no sub")

    fg.attach_feature(ReplaceValidate())
    fg.attach_feature(Refuse())
    assert not apply_node_rewrite(fg, add_to_sub, fg.outputs[0].owner)
    assert ops(fg) == ["add"]


def test_walkers_in_to_out_and_out_to_in_orders():
    seen = []

    @node_rewriter(None)
    def record(fgraph, node):
        seen.append(str(node.op))

    fg = fgraph_of(mul(add(x, y), z))
    in2out(record).rewrite(fg)
    assert seen == ["add", "mul"]
    seen.clear()
    out2in(record).rewrite(fg)
    assert seen == ["mul", "add"]


def test_walker_visits_new_nodes_only_when_asked():
    @node_rewriter([mul])
    def mul_to_add(fgraph, node):
        return [add(*node.inputs)]

    fg = fgraph_of(mul(x, y))
    in2out(mul_to_add, add_to_sub).rewrite(fg)
    assert ops(fg) == ["add"]
    fg = fgraph_of(mul(x, y))
    in2out(mul_to_add, add_to_sub, ignore_newtrees=False).rewrite(fg)
    assert ops(fg) == ["sub"]


def test_pattern_rewriter_binds_names_constants_and_constraints():
    one = Constant(double, 1.0)
    fg = fgraph_of(add(mul(x, one), sub(y, y)))
    PatternNodeRewriter((mul, "a", 1.0), "a").transform  # noqa: B018  (constructible)
    WalkingGraphRewriter(PatternNodeRewriter((mul, "a", 1.0), "a"),
                         PatternNodeRewriter((sub, "a", "a"), (mul, "a", 0.0))).rewrite(fg)
    assert equal_computations(fg.outputs, [add(x, mul(y, 0.0))])
    positive = {"pattern": "a", "constraint": lambda v: isinstance(v, Constant) and v.data > 0}
    rw = PatternNodeRewriter((add, positive, "b"), (sub, "b", "b"))
    fg = fgraph_of(add(x, y))
    assert rw.transform(fg, fg.outputs[0].owner) is None
    fg = fgraph_of(add(2.0, y))
    assert equal_computations(rw.transform(fg, fg.outputs[0].owner), [sub(y, y)])
    assert rw.tracks() == [add]


def test_pattern_rewriter_single_client_rule():
    inner = mul(x, y)
    fg = fgraph_of(add(inner, 1.0), inner)
    strict = PatternNodeRewriter((add, (mul, "a", "b"), 1.0), (mul, "a", "b"))
    loose = PatternNodeRewriter((add, (mul, "a", "b"), 1.0), (mul, "a", "b"), allow_multiple_clients=True)
    assert strict.transform(fg, fg.outputs[0].owner) is None
    assert loose.transform(fg, fg.outputs[0].owner) is not None


def test_equilibrium_reaches_a_fixed_point():
    @node_rewriter([mul])
    def mul_to_add(fgraph, node):
        return [add(*node.inputs)]

    fg = fgraph_of(mul(mul(x, y), mul(z, x)))
    changes = EquilibriumGraphRewriter([mul_to_add, add_to_sub]).rewrite(fg)
    assert ops(fg) == ["sub", "sub", "sub"] and changes == 6


def test_equilibrium_budget_stops_ping_pong():
    fg = fgraph_of(add(x, y))
    eq = EquilibriumGraphRewriter([add_to_sub, sub_to_add], max_passes=5)
    with pytest.warns(RuntimeWarning, match="rewriting stopped early"):
        eq.rewrite(fg)
    assert fg.rewrite_profile.budget_exceeded
    eq = EquilibriumGraphRewriter([add_to_sub, sub_to_add], max_passes=1000, max_use_ratio=2)
    fg = fgraph_of(add(x, y))
    with pytest.warns(RuntimeWarning, match="budget"):
        eq.rewrite(fg)


def test_graph_rewriter_decorator_and_profile(capsys):
    calls = []

    @graph_rewriter
    def count(fgraph):
        calls.append(fgraph)

    fg = fgraph_of(add(x, y))
    count.rewrite(fg)
    assert calls == [fg] and "count" in fg.rewrite_profile.graph_rewrites
    fg = fgraph_of(add(x, y))
    in2out(add_to_sub).rewrite(fg)
    profile = rewriter_profile(fg)
    assert profile.applied() == {"add_to_sub": 1}
    assert "add_to_sub" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no rewrite profile"):
        rewriter_profile(fgraph_of(add(x, y)))


def test_rewrite_verbose_prints_replacements(capsys):
    fg = fgraph_of(add(x, y))
    with gj.change_flags(rewrite_verbose=True):
        in2out(add_to_sub).rewrite(fg)
    assert "rewrite add_to_sub: add.0 -> sub.0" in capsys.readouterr().out


def make_db():
    db = SequenceDB("top")
    inner = EquilibriumDB("inner")
    inner.register("add_to_sub", add_to_sub, "fast_run", "inner")
    inner.register("optional", node_rewriter([mul])(lambda fg, n: [add(*n.inputs)]), "inner")
    db.register("inner", inner, "fast_run", position=1)
    db.register("first", in2out(sub_to_add), "fast_run", "fast_compile", "cheap", position=0)
    return db


def test_database_queries_select_by_tags_names_and_positions():
    db = make_db()
    assert [e.name for e in db.select(include=["fast_run"])] == ["first", "inner"]
    assert [e.name for e in db.select(include=["fast_compile"])] == ["first"]
    assert [e.name for e in db.select(include=["fast_run"], exclude=["cheap"])] == ["inner"]
    assert [e.name for e in db.select(include=["fast_run"], require=["cheap"])] == ["first"]
    assert [e.name for e in db.select(include=["first"])] == ["first"]
    seq = db.query(include=["fast_run"])
    assert db.query(include=["fast_run"]) is seq  # cached
    eq = seq.rewriters[1]
    assert [str(r) for r in eq.dispatch.rewriters] == ["add_to_sub"]
    eq = db.query(include=["fast_run", "optional"]).rewriters[1]
    assert sorted(str(r) for r in eq.dispatch.rewriters) == ["add_to_sub", "optional"]
    with pytest.raises(ValueError, match="already registered"):
        db.register("first", in2out(sub_to_add))
    with pytest.raises(TypeError):
        db.register("bad", 3)


def test_database_as_the_rewriter_of_a_mode():
    from graphjit.compile.mode import Mode
    db = make_db()
    f = gj.function([x, y], mul(add(x, y), sub(x, y)), mode=Mode(rewriter=db, include=["fast_run"]))
    assert sorted(ops(f.maker.fgraph)) == ["mul", "sub", "sub"]  # sub->add, then add->sub
    g = gj.function([x, y], mul(add(x, y), y), mode=Mode(rewriter=db, include=["fast_run", "optional"]))
    assert ops(g.maker.fgraph) == ["sub", "sub"]
    h = gj.function([x, y], add(x, y), mode=Mode(rewriter=db, exclude=["inner"]))
    assert ops(h.maker.fgraph) == ["add"]
    everything = gj.function([x, y], mul(x, y), mode=Mode(rewriter=db))  # no include: all entries
    assert ops(everything.maker.fgraph) == ["sub"]
    assert f(3.0, 1.0) == 2.0 * 2.0 and g(3.0, 1.0) == 2.0 - 1.0


def test_registered_fast_run_and_fast_compile_selection():
    from graphjit.scan_module.rewriting import rewrite_db     # the modes' database: tensor rewrites + scan's
    names = [e.name for e in rewrite_db.select(include=["fast_run"])]
    assert names == ["merge1", "inline_marked_graphs", "constant_folding", "canonicalize", "stabilize",
                     "specialize", "scan_inner", "scan_loop", "scan_random_draws", "scan_accumulate", "merge2", "update_gemm",
                     "update_inplace", "inplace", "random_inplace"]
    # stabilize runs in FAST_COMPILE too: a value must not overflow in one mode only (issue 18)
    assert [e.name for e in rewrite_db.select(include=["fast_compile"])] == ["merge1", "inline_marked_graphs",
                                                                           "constant_folding", "stabilize",
                                                                           "scan_loop", "scan_random_draws", "scan_accumulate"]
    assert [e.name for e in rewrite_db.select(include=["fast_compile"], exclude=["stabilize"])] == [
        "merge1", "inline_marked_graphs", "constant_folding", "scan_loop", "scan_random_draws", "scan_accumulate"]
    # the LLVM linkers' tag (Linker.rewrite_tags) adds the expansion of every OpFromGraph
    assert "inline_inner_graphs" in [e.name for e in rewrite_db.select(include=["fast_run", "inline_inner_graphs"])]
    assert "stabilize" not in [e.name for e in rewrite_db.select(include=["fast_run"], exclude=["stabilize"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mode = gj.get_mode("FAST_RUN").excluding("stabilize", "inplace")
        assert "stabilize" not in str(mode.rewriter)


def test_a_rewrite_pauses_the_collector_and_restores_it_after_an_error():
    import gc
    seen = []

    @graph_rewriter
    def failing(fgraph):
        seen.append(gc.isenabled())
        raise KeyError("boom")

    for state in (True, False):
        (gc.enable if state else gc.disable)()
        try:
            with pytest.raises(KeyError):
                failing.rewrite(fgraph_of(add(x, y)))
            assert gc.isenabled() is state
        finally:
            gc.enable()
    assert seen == [False, False]
