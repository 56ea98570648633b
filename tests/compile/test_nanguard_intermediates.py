"""NanGuardMode checks every intermediate (inside fused loops too) and the inputs no node computed, before the
node reading them runs; its error is an AssertionError, as Theano's (and a ValueError, as graphjit's was)."""

from __future__ import annotations

import numpy as np
import pytest

import graphjit as theano
import graphjit.tensor as T
from graphjit.compile.nanguardmode import NanGuardError, NanGuardMode
from graphjit.link.llvm import limits
from graphjit.link.llvm.loops import vector_body

BOTH = ["llvm", "py"]


def _raises(f, *args) -> str:
    """The first line of the NanGuardError f(*args) raises, caught as Theano's code catches it."""
    try:
        with np.errstate(all="ignore"):
            f(*args)
    except AssertionError as err:
        assert isinstance(err, NanGuardError) and isinstance(err, ValueError)
        return str(err).splitlines()[0]
    raise AssertionError("no NanGuardError")


@pytest.mark.parametrize("linker", BOTH)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_log_of_a_negative_masked_by_switch(linker, dtype):
    x = T.vector("x", dtype=dtype)
    y = T.switch(x > 0, T.log(x), 0.0)          # the NaN never reaches the output
    f = theano.function([x], y, mode=NanGuardMode(linker=linker))
    np.testing.assert_allclose(f(np.array([1.0, 2.0], dtype=dtype)), np.log([1.0, 2.0]), rtol=1e-6)
    assert _raises(f, np.array([-1.0, 2.0], dtype=dtype)) == "NanGuardMode: NaN in the output of Elemwise{log}(x)"
    big = theano.function([x], T.exp(x) / 1e6, mode=NanGuardMode(linker=linker))
    assert "above 1e+10" in _raises(big, np.array([1.0, 30.0], dtype=dtype))


@pytest.mark.parametrize("linker", BOTH)
def test_overflow_divided_back(linker):
    x = T.dvector("x")
    f = theano.function([x], 1.0 / T.exp(x), mode=NanGuardMode(linker=linker))       # 1 / inf = 0
    assert _raises(f, np.array([1.0, 1000.0])) == "NanGuardMode: an infinity in the output of Elemwise{exp}(x)"
    g = theano.function([x], T.exp(x) / 1e6 + 1, mode=NanGuardMode(linker=linker))   # 1e13 / 1e6 = 1e7
    assert _raises(g, np.array([1.0, 30.0])) == \
        "NanGuardMode: a value above 1e+10 in magnitude in the output of Elemwise{exp}(x)"
    np.testing.assert_allclose(g(np.array([1.0, 20.0])), np.exp([1.0, 20.0]) / 1e6 + 1)


@pytest.mark.parametrize("linker", BOTH)
def test_inf_input_is_reported_as_the_input(linker):
    x, m, w = T.dvector("x"), T.dmatrix("m"), T.dmatrix("w")
    f = theano.function([x], (x * 0 + 1) * 2, mode=NanGuardMode(linker=linker))   # inf * 0: a NaN downstream
    assert _raises(f, np.array([1.0, np.inf])).startswith("NanGuardMode: an infinity in the input x of Elemwise{mul}")
    g = theano.function([m, w], T.dot(m, w), mode=NanGuardMode(linker=linker))    # a node that is not fused
    bad = np.ones((2, 2))
    bad[0, 1] = np.nan
    assert _raises(g, np.ones((2, 2)), bad) == "NanGuardMode: NaN in the input w of Dot(m, w)"
    s = theano.shared(np.array([1.0, -np.inf]), name="s")
    h = theano.function([x], T.exp(x + s), mode=NanGuardMode(linker=linker))
    assert _raises(h, np.ones(2)).startswith("NanGuardMode: an infinity in the input s of Elemwise{add}")


@pytest.mark.parametrize("linker", BOTH)
@pytest.mark.parametrize("reduce", [T.sum, T.max, T.min, T.prod])
def test_hidden_before_a_reduction(linker, reduce):
    x = T.dvector("x")
    f = theano.function([x], reduce(T.switch(x > 0, T.log(x), 0.0)), mode=NanGuardMode(linker=linker))
    assert _raises(f, np.array([-1.0, 2.0, 3.0])) == "NanGuardMode: NaN in the output of Elemwise{log}(x)"
    assert np.isfinite(f(np.array([1.0, 2.0, 3.0])))


@pytest.mark.parametrize("linker", BOTH)
def test_hidden_before_an_integer_or_bool_result(linker):
    x = T.fvector("x")
    f = theano.function([x], [T.lt(T.log(x), 0), T.cast(T.sqrt(x) * 2, "int64")], mode=NanGuardMode(linker=linker))
    assert _raises(f, np.array([-1.0, 2.0], dtype="float32")) == "NanGuardMode: NaN in the output of Elemwise{log}(x)"
    lt, ints = f(np.array([0.5, 4.0], dtype="float32"))
    assert lt.tolist() == [True, False] and ints.tolist() == [1, 4]


@pytest.mark.parametrize("linker", BOTH)
def test_only_the_checks_asked_for(linker):
    x = T.dvector("x")
    masked = T.switch(x > 0, T.log(x), 0.0)
    inf_only = NanGuardMode(nan_is_error=False, inf_is_error=True, big_is_error=False, linker=linker)
    f = theano.function([x], [masked, T.sum(T.log(x))], mode=inf_only)
    with np.errstate(all="ignore"):
        got, total = f(np.array([-1.0, 2.0]))            # the NaNs are allowed: no error, whatever is hidden
    assert got.tolist() == [0.0, np.log(2.0)] and np.isnan(total)
    g = theano.function([x], T.sum(1.0 / T.exp(x)), mode=inf_only)
    assert _raises(g, np.array([1000.0, 2.0])) == "NanGuardMode: an infinity in the output of Elemwise{exp}(x)"
    big_only = NanGuardMode(nan_is_error=False, inf_is_error=False, big_is_error=True, linker=linker)
    h = theano.function([x], T.exp(x) / 1e6, mode=big_only)
    assert "above 1e+10" in _raises(h, np.array([30.0]))


@pytest.mark.parametrize("path", ["vector-kernels", "compact-drivers"])
def test_every_loop_path_checks_its_intermediates(cache_dir, monkeypatch, path):
    if path == "vector-kernels":
        monkeypatch.setattr(vector_body, "MIN_GROUPS", 0)
    else:
        monkeypatch.setattr(limits, "COMPACT_MIN_GROUPS", 1)
    x, m = T.dvector("x"), T.dmatrix("m")
    out = T.switch(m > 0, T.log(m), 0.0) + T.exp(x) * 0
    f = theano.function([m, x], out, mode=NanGuardMode())
    good = np.arange(1.0, 1001.0).reshape(40, 25)
    np.testing.assert_allclose(f(good, np.zeros(25)), np.log(good))
    bad = good.copy()
    bad[39, 24] = -1.0                                   # the last element: a vector loop's tail
    assert _raises(f, bad, np.zeros(25)) == "NanGuardMode: NaN in the output of Elemwise{log}(m)"
    assert _raises(f, good, np.full(25, 1000.0)) == "NanGuardMode: an infinity in the output of Elemwise{exp}(x)"


def test_checks_are_in_the_loop_body():
    x = T.dvector("x")
    f = theano.function([x], T.switch(x > 0, T.log(x), 0.0), mode=NanGuardMode())
    ir_text = f.native.llvm_ir
    assert "fcmp ugt" in ir_text and "fcmp ult" in ir_text          # element_bad, folded into the kernel
