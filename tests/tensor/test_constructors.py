"""Theano's symbolic constructors: dmatrix, fvector... and the plurals (dmatrices('x', 'y'), vectors(3))."""

import numpy as np
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


@pytest.mark.parametrize("spec, name", [("float64", "float64"), ("f8", "float64"), ("double", "float64"),
                                        ("f4", "float32"), ("int", "int64"), (np.dtype("int8"), "int8"),
                                        (np.float32, "float32"), ("bool", "bool")])
def test_tensor_type_dtype_names_are_canonical_every_time(spec, name):
    """The dtype given is normalised (and cached per string): the first and later types agree."""
    from graphjit.tensor.type import TensorType
    first, again = TensorType(spec, (None,)), TensorType(spec, (None,))
    assert first.dtype == again.dtype == name and first.numpy_dtype == again.numpy_dtype == np.dtype(name)
    assert first == again


def test_tensor_type_rejects_an_unsupported_dtype_every_time():
    from graphjit.tensor.type import TensorType
    for _ in range(2):
        with pytest.raises(TypeError, match="unsupported dtype"):
            TensorType("V8", (None,))
