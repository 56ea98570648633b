"""Theano's symbolic constructors: dmatrix, fvector... and the plurals (dmatrices('x', 'y'), vectors(3))."""

import pytest

import graphjit.tensor as gt
from graphjit.tensor.type import PLURAL_CONSTRUCTORS, PREFIXED_CONSTRUCTORS


@pytest.mark.parametrize("name", ["dscalar", "fvector", "lmatrix", "itensor3", "brow", "zcol"])
def test_prefixed_constructor_is_a_type(name):
    t = getattr(gt, name)
    x = t("x")
    assert x.type == t and x.name == "x"


def test_plurals_by_names_count_and_single_name():
    x, y, z = gt.dvectors("x", "y", "z")
    assert [v.name for v in (x, y, z)] == ["x", "y", "z"] and x.type == gt.dvector
    a, b = gt.fmatrices(2)
    assert a.type == gt.fmatrix and a is not b and a.name is None
    s = gt.lscalars("s")
    assert s.type == gt.lscalar and s.name == "s"
    m, n = gt.matrices("m", "n", dtype="int32")
    assert m.type.dtype == "int32" and m.ndim == 2
    assert gt.rows(1)[0].type.shape == (1, None) and gt.cols("c").type.shape == (None, 1)
    assert gt.tensor3s(2)[1].ndim == 3 and gt.dtensor4s("t").ndim == 4


def test_prefixed_plural_rejects_a_dtype():
    with pytest.raises(TypeError, match="fixed dtype"):
        gt.dvectors("x", dtype="float32")


def test_every_constructor_is_exported():
    for name in PREFIXED_CONSTRUCTORS + PLURAL_CONSTRUCTORS:
        assert callable(getattr(gt, name)), name
