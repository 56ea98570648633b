"""debugprint (tree format of the seeds) and pprint."""

import io

import pytest

import graphjit as gj
from graphjit.graph.fg import FunctionGraph
from graphjit.printing import FunctionPrinter, OperatorPrinter, PPrinter, debugprint
from toy_ops import add, divmod_op, double, dshared, mul, sub

# Some printed graphs use toy ops that have only a Python perform:
# their FallbackWarning is expected here (the warning itself is tested in tests/link/llvm/test_linker.py).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def graph():
    x, y = double("x"), double("y")
    s = add(x, y)
    return x, y, s, mul(s, sub(s, 1.0))


def test_tree_of_a_variable_prints_shared_nodes_once():
    x, y, s, e = graph()
    assert debugprint(e, file="str") == (
        "mul [@A] ''\n"
        " |add [@B] ''\n"
        " | |x [@C]\n"
        " | |y [@D]\n"
        " |sub [@E] ''\n"
        "   |add [@B] ''\n"
        "   |Constant{1.0} [@F]\n")


def test_compiled_function_shows_toposort_indices():
    x, y, s, e = graph()
    f = gj.function([x, y], e)
    assert debugprint(f, file="str") == (
        "mul [@A] ''   2\n"
        " |add [@B] ''   0\n"
        " | |x [@C]\n"
        " | |y [@D]\n"
        " |sub [@E] ''   1\n"
        "   |add [@B] ''   0\n"
        "   |Constant{1.0} [@F]\n")
    assert gj.dprint(f.maker.fgraph, file="str") == debugprint(f, file="str")


def test_seed_shape_for_a_single_chain():
    v = double()
    text = debugprint(gj.function([v], mul(add(v, 1.0), 2.0)), file="str")
    assert text == ("mul [@A] ''   1\n"
                    " |add [@B] ''   0\n"
                    " | |<double> [@C]\n"
                    " | |Constant{1.0} [@D]\n"
                    " |Constant{2.0} [@E]\n")


def test_options_type_ids_names_depth():
    x, y, s, e = graph()
    s.name = "s"
    typed = debugprint(e, file="str", print_type=True)
    assert typed.splitlines()[0] == "mul [@A] <double> ''"
    assert " |add [@B] <double> 's'" in typed and " | |x [@C] <double>" in typed
    ints = debugprint(e, file="str", ids="int")
    assert ints.splitlines()[1] == " |add [@1] 's'"
    assert "[@" not in debugprint(e, file="str", ids="").replace("''", "")
    assert f"[@{id(e.owner)}]" in debugprint(e, file="str", ids="id")
    stopped = debugprint(e, file="str", stop_on_name=True)
    assert " | |x" not in stopped and " |add [@B] 's'" in stopped
    assert debugprint(e, file="str", depth=1) == "mul [@A] ''\n |add [@B] 's'\n |sub [@C] ''\n"
    with pytest.raises(ValueError, match="ids"):
        debugprint(e, file="str", ids="hex")


def test_lists_applies_multiple_outputs_and_shared_done():
    x, y, s, e = graph()
    q, r = divmod_op(x, y)
    text = debugprint(q.owner, file="str")
    assert text.splitlines() == ["DivMod.0 [@A] ''", " |x [@B]", " |y [@C]", "DivMod.1 [@A] ''"]
    done = {}
    first = debugprint([s], file="str", done=done)
    second = debugprint(e, file="str", done=done)
    assert first.startswith("add [@A]") and second.splitlines()[1] == " |add [@A] ''"
    with pytest.raises(TypeError, match="cannot print"):
        debugprint(3, file="str")


def test_print_storage_and_updates():
    x = double("x")
    w = dshared(1.0, "w")
    f = gj.function([x], add(x, w), updates=[(w, mul(w, 2.0))])
    f(1.0)
    text = debugprint(f, file="str", print_storage=True)
    assert "add [@A] ''   0 -> 2.0" in text and "w [@C] -> 2.0" in text
    assert text.count("\n") == 6 and "mul [@D]" in text


def test_file_argument():
    x, y, s, e = graph()
    buf = io.StringIO()
    assert debugprint(e, file=buf) is buf and buf.getvalue().startswith("mul [@A]")


def test_deep_graphs_do_not_recurse():
    x = double("x")
    e = x
    for _ in range(3000):
        e = add(e, 1.0)
    assert debugprint(e, file="str").count("\n") == 6001


def test_pprint_infix_with_precedence():
    pp = PPrinter()
    pp.assign(add, OperatorPrinter("+", 1, "either"))
    pp.assign(sub, OperatorPrinter("-", 1, "left"))
    pp.assign(mul, OperatorPrinter("*", 2, "either"))
    x, y, s, e = graph()
    assert pp(e) == "(x + y) * (x + y - 1.0)"
    assert pp(sub(x, sub(y, x))) == "x - (y - x)"
    assert pp(sub(sub(x, y), x)) == "x - y - x"
    pp.assign(lambda v: v.owner.op == divmod_op, FunctionPrinter("divmod"))
    q, r = divmod_op(x, y)
    assert pp([q, x]) == "divmod(x, y)\nx"
    assert gj.pprint(q) == "DivMod(x, y)[0]"
    with pytest.raises(ValueError):
        OperatorPrinter("+", 1, "sideways")


def test_pprint_unary_named_and_class_conditions():
    pp = PPrinter()
    from toy_ops import BinaryDoubleOp, Length
    pp.assign(BinaryDoubleOp, OperatorPrinter("#", 0))
    pp.assign(Length, OperatorPrinter("len ", 5))
    x, y = double("x"), double("y")
    from graphjit.graph.type import generic
    assert pp(add(x, y)) == "x # y" and pp(Length()(generic("g"))) == "len g"
    from graphjit.graph.basic import Constant
    assert pp(Constant(double, 2.0, name="two")) == "two"


def test_mark_fallback_nodes_of_a_compiled_function():
    v = double()
    f = gj.function([v], mul(add(v, 1.0), 2.0), mode="FAST_RUN")
    assert [str(n.op) for n in f.native.fallback_nodes] == ["add", "mul"]
    text = debugprint(f, file="str", mark_fallback=True)
    assert text.splitlines()[:2] == ["mul [@A] ''   1 (python perform)", " |add [@B] ''   0 (python perform)"]
    assert "python perform" not in debugprint(f, file="str")
    py = gj.function([v], mul(add(v, 1.0), 2.0), mode="PY")
    assert "python perform" not in debugprint(py, file="str", mark_fallback=True)
