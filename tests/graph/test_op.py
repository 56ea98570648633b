"""Op: __props__-generated identity and str, __call__, make_thunk and the optional contract."""

import operator

import pytest

from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.graph.utils import MethodNotDefined
from toy_ops import BinaryDoubleOp, add, divmod_op, double, mul


class Scale(Op):
    """x * factor, with the factor a prop."""

    __props__ = ("factor",)

    def __init__(self, factor):
        self.factor = factor

    def make_node(self, x):
        return Apply(self, [x], [double()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * self.factor


class Pair(Op):
    """Two outputs, the second one the default."""

    __props__ = ()
    default_output = 1

    def make_node(self, x):
        return Apply(self, [x], [double(), double()])


class NoProps(Op):
    pass


def test_props_give_eq_hash_and_str():
    assert Scale(2) == Scale(2) and hash(Scale(2)) == hash(Scale(2))
    assert Scale(2) != Scale(3) and Scale(2) != Pair()
    assert str(Scale(2)) == "Scale{factor=2}" and repr(Scale(2)) == "Scale{factor=2}"
    assert str(Pair()) == "Pair" and Pair() == Pair()
    assert BinaryDoubleOp("add", operator.add) == add
    assert BinaryDoubleOp("add", operator.sub) != add
    assert Scale(2)._props_dict() == {"factor": 2}


def test_without_props_ops_compare_by_identity():
    a, b = NoProps(), NoProps()
    assert a == a and a != b and hash(a) == hash(a)
    assert str(a) == "NoProps"


def test_call_returns_default_single_or_all_outputs():
    x = double("x")
    assert Scale(2)(x).owner.op == Scale(2)
    out = Pair()(x)
    assert out.index == 1
    q, r = divmod_op(x, x)
    assert (q.index, r.index) == (0, 1)


def test_base_op_methods_not_defined():
    op = NoProps()
    x = double("x")
    with pytest.raises(MethodNotDefined):
        op.make_node(x)
    with pytest.raises(MethodNotDefined):
        op.perform(None, [], [])
    for name, args in [("grad", ([x], [x])), ("R_op", ([x], [x])), ("flops", ([], [])),
                       ("infer_shape", (None, None, []))]:
        with pytest.raises(MethodNotDefined):
            getattr(op, name)(*args)
    with pytest.raises(MethodNotDefined):
        op.get_params(None)
    node = Scale(2).make_node(x)
    assert Scale(2).connection_pattern(node) == [[True]]
    assert Scale(2).do_constant_folding(None, node) is True


def test_make_thunk_reads_and_writes_storage_cells():
    x = double("x")
    y = Scale(3.0)(x)
    node = y.owner
    storage_map = {x: [2.0], y: [None]}
    compute_map = {x: [True], y: [False]}
    thunk = node.op.make_thunk(node, storage_map, compute_map, [])
    assert thunk.inputs == [storage_map[x]] and thunk.outputs == [storage_map[y]]
    assert thunk.lazy is False
    thunk()
    assert storage_map[y] == [6.0] and compute_map[y] == [True]
    storage_map[x][0] = 5.0
    thunk()
    assert storage_map[y][0] == 15.0


def test_make_node_and_perform_of_the_seed_mul():
    x, y = double("x"), double("y")
    z = mul(x, y)
    out = [None]
    mul.perform(z.owner, [5.0, 6.0], [out])
    assert out[0] == 30.0
    with pytest.raises(TypeError, match="doubles"):
        from graphjit.graph.type import generic
        mul(x, generic("g"))
    assert mul(x, 2).owner.inputs[1].data == 2.0


def test_props_read_per_class_getters():
    """_props: the values of __props__ in order, for zero, one and several names, each class its own."""
    from graphjit.graph.op import Op

    class NoProps(Op):
        __props__ = ()

    class One(Op):
        __props__ = ("a",)

        def __init__(self, a):
            self.a = a

    class Two(One):
        __props__ = ("b", "a")

        def __init__(self, a, b):
            super().__init__(a)
            self.b = b

    assert NoProps()._props() == () and NoProps() == NoProps() and hash(NoProps()) == hash(NoProps())
    assert One(3)._props() == (3,) and One((1, 2))._props() == ((1, 2),)
    assert Two(3, "x")._props() == ("x", 3)
    assert One(3) == One(3) and One(3) != One(4) and One(3) != Two(3, "x")
    assert hash(Two(1, 2)) == hash(Two(1, 2)) and Two(1, 2) != Two(2, 1)
    assert One(5)._props() == (5,)                       # the class's getter, reused
