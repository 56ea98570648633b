"""EnumType, EnumList and ParamsType (op parameters)."""

import pytest

from graphjit.graph.basic import Apply
from graphjit.graph.fg import FunctionGraph
from graphjit.graph.op import Op
from graphjit.graph.params import EnumList, EnumType, Params, ParamsType
from graphjit.link.python import PerformLinker
from toy_ops import double

# The toy ops (tests/toy_ops.py) have only a Python perform: under the LLVM linker their FallbackWarning
# is expected (it is emitted once per op per process, so whichever test compiles one first sees it).
pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def test_enum_type_constants_and_conversion():
    enum = EnumType(CONSTANT_1=1, CONSTANT_2=2.5, CONSTANT_3=False, CONSTANT_4=True)
    assert (enum.CONSTANT_1, enum.CONSTANT_2, enum.CONSTANT_3, enum.CONSTANT_4) == (1, 2.5, 0, 1)
    assert enum.ctype == "double" and enum.cname == "double"
    with pytest.raises(AttributeError):
        enum.MISSING
    with pytest.raises(AttributeError, match="read-only"):
        enum.CONSTANT_1 = 5
    assert enum.filter(2.5) == 2.5 and enum.filter(True) == 1
    with pytest.raises(TypeError):
        enum.filter(7)


def test_enum_type_aliases():
    enum = EnumType(A=("alpha", 1), B=("beta", 2), C=3, D=("delta", 4), ctype="size_t")
    assert enum.fromalias("alpha") == 1 and enum.fromalias("C") == 3
    assert enum.get_aliases() == ("alpha", "beta", "delta")
    assert enum.has_alias("beta") and not enum.has_alias("C")
    assert enum.filter("delta", strict=False) == 4
    with pytest.raises(TypeError):
        enum.filter("delta", strict=True)
    assert enum.cname == "size_t"


def test_enum_type_rejects_bad_definitions():
    with pytest.raises(AttributeError, match="capital"):
        EnumType(lower=1)
    with pytest.raises(TypeError):
        EnumType(A="text")
    with pytest.raises(TypeError, match="twice"):
        EnumType(A=("x", 1), B=("x", 2))
    with pytest.raises(TypeError):
        EnumType(A=("x", 1, 2))


def test_enum_equality_and_hash():
    a = EnumType(A=1, B=2)
    assert a == EnumType(A=1, B=2) and hash(a) == hash(EnumType(A=1, B=2))
    assert a != EnumType(A=1, B=3) and a != EnumType(A=1, B=2, ctype="int")
    assert "A:1" in str(a)


def test_enum_list():
    enum = EnumList("CONSTANT_1", "CONSTANT_2", "CONSTANT_3")
    assert (enum.CONSTANT_1, enum.CONSTANT_2, enum.CONSTANT_3) == (0, 1, 2)
    assert enum.ctype == "int"
    aliased = EnumList(("A", "alpha"), ("B", "beta"), "C")
    assert aliased.fromalias("beta") == 1 and aliased.C == 2
    with pytest.raises(TypeError, match="repeated"):
        EnumList("A", "A")
    with pytest.raises(TypeError):
        EnumList(("A", "a", "b"))


MODE = EnumList("ADD", "MUL")


class Combine(Op):
    """x (+ or *) y * scale, the choice and scale given by params."""

    __props__ = ("mode", "scale")
    params_type = ParamsType(mode=MODE, scale=double)

    def __init__(self, mode, scale):
        self.mode, self.scale = mode, scale

    def make_node(self, x, y):
        return Apply(self, [x, y], [double()])

    def perform(self, node, inputs, output_storage, params):
        x, y = inputs
        value = x + y if params.mode == MODE.ADD else x * y
        output_storage[0][0] = value * params.scale


def test_params_type_feeds_perform():
    op = Combine(MODE.MUL, 2)
    params = op.get_params(None)
    assert isinstance(params, Params) and params.mode == 1 and params.scale == 2.0
    assert hash(params) == hash(Params(mode=1, scale=2.0))
    x, y = double("x"), double("y")
    fg = FunctionGraph([x, y], [op(x, y), Combine("ADD", 1.0)(x, y)])
    fn = PerformLinker().accept(fg).make_function()
    assert fn(3.0, 4.0) == [24.0, 7.0]


def test_params_type_filter_and_identity():
    pt = ParamsType(mode=MODE, scale=double)
    assert pt.filter({"mode": "MUL", "scale": 3}) == {"mode": 1, "scale": 3.0}
    with pytest.raises(TypeError, match="Params record"):
        pt.filter(3)
    with pytest.raises(TypeError, match="must be a Type"):
        ParamsType(scale=3)
    assert pt == ParamsType(mode=MODE, scale=double) and hash(pt) == hash(ParamsType(mode=MODE, scale=double))
    assert "scale:double" in str(pt)
    with pytest.raises(AttributeError):
        Params(a=1).b
