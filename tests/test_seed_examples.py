"""Every example of the seed pages (Theano's docs), with `theano` renamed to `graphjit`."""

import numpy as np
import pytest

import graphjit
import graphjit.tensor as T
from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.fg import MissingInputError
from graphjit.graph.op import Op
from graphjit.graph.params import EnumList, EnumType
from graphjit.tensor import TensorType, add, mul

from example_modules import load_example

# The seed's ops (double, BinaryDoubleOp) have only a Python perform:
# their FallbackWarning is expected here (the warning itself is tested in tests/link/llvm/test_linker.py).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")

double_mod = load_example("double_type")
double = double_mod.double


# --- Graph Structures -------------------------------------------------------------------------

def test_first_diagram():
    x = T.dmatrix("x")
    y = T.dmatrix("y")
    z = x + y
    assert z.owner.op == add and z.owner.inputs == [x, y]
    assert x.owner is None and y.owner is None
    assert z.owner.outputs[0] is z and z.index == 0


def test_short_example():
    x = T.matrix("x")
    y = T.matrix("y")
    z = T.matrix("z")
    e = x + y * z
    assert e.owner.op == add and e.owner.inputs[0] is x
    assert e.owner.inputs[1].owner.op == mul
    assert e.owner.inputs[1].owner.inputs == [y, z]


def test_long_example():
    float64_matrix = TensorType(dtype="float64", broadcastable=(False, False))
    x = Variable(type=float64_matrix, name="x")
    y = Variable(type=float64_matrix, name="y")
    z = Variable(type=float64_matrix, name="z")
    mul_variable = Variable(type=float64_matrix)
    assert mul_variable.owner is None
    node_mul = Apply(op=mul, inputs=[y, z], outputs=[mul_variable])
    assert mul_variable.owner is node_mul
    assert mul_variable.index == 0
    add_variable = Variable(type=float64_matrix)
    assert add_variable.owner is None
    node_add = Apply(op=add, inputs=[x, mul_variable], outputs=[add_variable])
    assert add_variable.owner is node_add
    assert add_variable.index == 0
    e = add_variable
    assert e.owner.inputs[0] is x
    assert e.owner.inputs[1] is mul_variable
    assert e.owner.inputs[1].owner.inputs[0] is y
    assert e.owner.inputs[1].owner.inputs[1] is z
    # the hand-built graph compiles and runs like the automatic one
    f = graphjit.function([x, y, z], e)
    a = np.arange(4.0).reshape(2, 2)
    np.testing.assert_allclose(f(a, a, a), a + a * a)


def test_automatic_wrapping():
    x = T.dscalar("x")
    e = x + 1
    node = e.owner
    assert node.op == add and node.inputs[0] is x
    assert isinstance(node.inputs[1], Constant) and node.inputs[1].data == 1
    # numpy 2 semantics: a Python int meeting a float64 tensor becomes a float64 constant
    assert node.inputs[1].type == T.dscalar


def test_irow_and_dmatrix_constraints():
    irow = T.irow
    assert irow.is_valid_value(np.zeros((1, 5), dtype="int32"))
    assert not irow.is_valid_value(np.zeros((2, 5), dtype="int32"))
    assert not irow.is_valid_value(np.zeros((1, 5), dtype="int64"))
    assert not irow.is_valid_value([[1, 2]])
    dmatrix = T.dmatrix
    assert dmatrix.is_valid_value(np.zeros((3, 4)))
    assert not dmatrix.is_valid_value(np.zeros(3))
    assert not dmatrix.is_valid_value(np.zeros((3, 4), dtype="float32"))
    assert irow != dmatrix


def test_ivector_negation():
    x = T.ivector()
    y = -x
    assert isinstance(x, Variable) and isinstance(y, Variable)
    assert x.type == T.ivector and y.type == T.ivector
    assert y.owner is not None and y.owner.inputs[0] is x


def test_clients_example():
    v = T.vector()
    f = graphjit.function([v], (v + 1).sum())
    text = graphjit.printing.debugprint(f, file="str")
    assert "Sum" in text and "add" in text
    topo = f.maker.fgraph.toposort()
    assert topo[0].outputs[0].clients == [(topo[1], 0)]
    assert topo[1].outputs[0].clients == [("output", 0)]
    var = topo[0].outputs[0]
    client = var.clients[0]
    assert isinstance(client[0], Apply)
    assert client[0].inputs[client[1]] is var
    var = topo[1].outputs[0]
    client = var.clients[0]
    assert client == ("output", 0)
    assert f.maker.fgraph.outputs[client[1]] is var
    assert f.maker.fgraph.clients[var] is var.clients


def test_graph_is_cloned_at_compile_time():
    v = T.vector("v")
    out = (v + 1).sum()
    graphjit.function([v], out)
    assert not hasattr(v, "clients") or v.clients == []
    assert out.owner.inputs[0].owner.op == add


# --- Making arithmetic Ops on double ----------------------------------------------------------

def test_double_mul_as_plain_op():
    mul_op = Op()

    def make_node(x, y):
        if x.type != double or y.type != double:
            raise TypeError("mul only works on doubles")
        return Apply(mul_op, [x, y], [double()])

    def perform(node, inputs, output_storage):
        x, y = inputs[0], inputs[1]
        z = output_storage[0]
        z[0] = x * y

    mul_op.make_node = make_node
    mul_op.perform = perform
    x, y = double("x"), double("y")
    z = mul_op(x, y)
    f = graphjit.function([x, y], z)
    assert f(5, 6) == 30.0
    assert np.isclose(f(5.6, 6.7), 37.52)
    with pytest.raises(AttributeError, match="'int' object has no attribute 'type'"):
        mul_op(double("x"), 2)

    def make_node_wrapping(x, y):
        if isinstance(x, (int, float)):
            x = Constant(double, x)
        if isinstance(y, (int, float)):
            y = Constant(double, y)
        if x.type != double or y.type != double:
            raise TypeError("mul only works on doubles")
        return Apply(mul_op, [x, y], [double()])

    mul_op.make_node = make_node_wrapping
    x = double("x")
    z = mul_op(x, 2)
    f = graphjit.function([x], z)
    assert f(10) == 20.0
    assert np.allclose(f(3.4), 6.8)


def test_binary_double_ops():
    x, y = double("x"), double("y")
    for op, expected in ((double_mod.add, 7.5), (double_mod.sub, 2.5), (double_mod.mul, 12.5),
                         (double_mod.div, 2.0)):
        f = graphjit.function([x, y], op(x, y))
        assert f(5.0, 2.5) == expected
    assert double_mod.add == double_mod.BinaryDoubleOp("add", double_mod.add.fn)
    assert double_mod.add != double_mod.sub
    assert hash(double_mod.add) == hash(double_mod.BinaryDoubleOp("add", double_mod.add.fn))
    assert str(double_mod.mul) == "mul"
    with pytest.raises(TypeError, match="add only works on doubles"):
        double_mod.add(x, T.dscalar())


def test_double_type_filter():
    assert double.filter(3) == 3.0 and isinstance(double.filter(3), float)
    with pytest.raises(TypeError):
        double.filter(3, strict=True)
    with pytest.raises(TypeError, match="cannot accurately represent"):
        double.filter(2**60 + 1)  # not exactly a double
    assert double.filter(2**60 + 1, allow_downcast=True) == float(2**60)
    assert double.values_eq_approx(1.0, 1.00001)
    assert not double.values_eq_approx(1.0, 1.1)
    assert str(double) == "double" and double == double_mod.Double()


def test_double_example_script_runs(capsys):
    double_mod.main()
    assert "f(5, 6) = 30.0" in capsys.readouterr().out


# --- type: the Type interface ---------------------------------------------------------------

def test_constant_example():
    a = T.constant(1.5)
    b = T.fscalar()
    c = a + b
    f = graphjit.function([b], [c])
    # The seed writes `assert 4.0 == f(2.5)`; f returns a list (outputs were given as a list),
    # so the seed's comparison is False even on Theano. The value is what it meant:
    assert 4.0 == f(2.5)[0]
    with pytest.raises((MissingInputError, TypeError), match="Constant|not given"):
        graphjit.function([a], [c])  # a is a constant and b is missing: a compilation error
    with pytest.raises(TypeError, match="Constant"):
        graphjit.function([a, b], [c])


def test_eval_example():
    x = T.dscalar("x")
    y = T.dscalar("y")
    z = x + y
    assert np.allclose(z.eval({x: 16.3, y: 12.1}), 28.4)
    first = z.tag._eval_fns
    assert np.allclose(z.eval({x: 1.0, y: 2.0}), 3.0)
    assert z.tag._eval_fns is first and len(first) == 1  # compiled once, cached


def test_enum_type_examples():
    enum = EnumType(CONSTANT_1=1, CONSTANT_2=2.5, CONSTANT_3=False, CONSTANT_4=True)
    assert (enum.CONSTANT_1, enum.CONSTANT_2, enum.CONSTANT_3, enum.CONSTANT_4) == (1, 2.5, 0, 1)
    enum = EnumType(A=("alpha", 1), B=("beta", 2), C=3, D=("delta", 4))
    assert (enum.A, enum.B, enum.C, enum.D) == (1, 2, 3, 4)
    assert enum.fromalias("alpha") == enum.A and enum.fromalias("beta") == enum.B
    assert enum.fromalias("delta") == enum.D and enum.fromalias("C") == enum.C
    assert enum.filter("delta", strict=False) == enum.D
    enum = EnumList("CONSTANT_1", "CONSTANT_2", "CONSTANT_3", "CONSTANT_4", "CONSTANT_5")
    assert [enum.CONSTANT_1, enum.CONSTANT_2, enum.CONSTANT_3, enum.CONSTANT_4, enum.CONSTANT_5] == [0, 1, 2, 3, 4]
    enum = EnumList(("A", "alpha"), ("B", "beta"), "C", "D", "E", "F", ("G", "gamma"))
    assert enum.fromalias("gamma") == enum.G == 6
    enum = EnumType(CONSTANT_1=0, CONSTANT_2=1, CONSTANT_3=2, ctype="size_t", cname="MyEnumName")
    assert enum.ctype == "size_t" and enum.cname == "MyEnumName"


def test_fvector_type_instances():
    b = T.fvector()
    c = T.fvector()
    assert b.type is c.type is T.fvector
    assert b is not c
