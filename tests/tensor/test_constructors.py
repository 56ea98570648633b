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


# Theano 1.0's ranks up to 7: T.tensor5..tensor7, their b/w/i/l/f/d/c/z forms and the plurals
_DTYPES = {"b": "int8", "w": "int16", "i": "int32", "l": "int64", "f": "float32", "d": "float64",
           "c": "complex64", "z": "complex128"}


@pytest.mark.parametrize("ndim", [5, 6, 7])
def test_every_rank_theano_had(ndim):
    import graphjit as theano
    from graphjit import tensor as T
    x = getattr(T, f"tensor{ndim}")("x")
    assert x.ndim == ndim and x.dtype == theano.config.floatX and x.name == "x"
    assert getattr(T, f"tensor{ndim}")(dtype="int32").dtype == "int32"
    for prefix, dtype in _DTYPES.items():
        t = getattr(T, f"{prefix}tensor{ndim}")
        v = t("v")
        assert v.type == t and v.ndim == ndim and v.dtype == dtype
        a, b = getattr(T, f"{prefix}tensor{ndim}s")("a", "b")
        assert a.type == b.type == t and (a.name, b.name) == ("a", "b")
    several = getattr(T, f"tensor{ndim}s")(3)
    assert len(several) == 3 and all(s.ndim == ndim for s in several)
    value = np.zeros((1,) * ndim)
    f = theano.function([x], (x * 2).sum())
    assert f(value) == 0.0


def test_theano_plurals():
    from graphjit import tensor as T
    x, y = T.dmatrices("x", "y")
    assert x.type == y.type == T.dmatrix
    a, b = T.tensor5s("a", "b")
    assert a.ndim == b.ndim == 5
    i, j = T.iscalars("i", "j")
    assert i.type == T.iscalar
    r, c = T.frows("r"), T.lcols("c")
    assert r.type == T.frow and c.type == T.lcol
