"""Theano compatibility items: Function.copy(delete_updates), get_value(return_internal_type), print(config),
function_dump, misc.pkl_utils, RandomStream's size= error."""

from __future__ import annotations

import io
import warnings
import zipfile

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile import function_dump, load_function_dump
from graphjit.misc import pkl_utils
from graphjit.tensor.random import RandomStream


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_copy_delete_updates(mode):
    x = gt.dvector("x")
    w = gj.shared(np.ones(2), name="w")
    f = gj.function([x], (x * w).sum(), updates=[(w, w * 2)], mode=mode, name="f")
    g = f.copy(delete_updates=True)
    assert g(np.ones(2)) == 2.0 and g(np.ones(2)) == 2.0
    np.testing.assert_array_equal(w.get_value(), [1.0, 1.0])          # no update applied
    assert f(np.ones(2)) == 2.0 and g(np.ones(2)) == 4.0             # still reads the shared value
    other = gj.shared(np.zeros(2), name="other")
    h = f.copy(delete_updates=True, swap={w: other}, name="h")
    assert h(np.ones(2)) == 0.0 and h.name == "h"
    with pytest.raises(ValueError, match="cannot be combined"):
        f.copy(share_memory=True, delete_updates=True)
    k = f.copy(name="k")                                              # the others still work
    assert k.name == "k" and k(np.ones(2)) == 4.0
    np.testing.assert_array_equal(w.get_value(), [4.0, 4.0])


def test_get_value_return_internal_type_and_out_borrow():
    w = gj.shared(np.arange(3.0), name="w")
    internal = w.get_value(borrow=True, return_internal_type=True)
    assert isinstance(internal, np.ndarray) and internal is w.get_value(borrow=True)
    assert w.get_value(return_internal_type=True) is not internal
    x = gt.dvector("x")
    f = gj.function([x], gj.Out(x * 2, borrow=True))
    assert isinstance(f(np.ones(2)), np.ndarray)


def test_out_takes_theanos_arguments():
    """Out(variable, borrow) positionally, and return_internal_type (an ndarray is the internal type here)."""
    from graphjit import Out
    x = gt.dvector("x")
    spec = Out(x * 2, True, return_internal_type=True)
    assert spec.borrow and spec.return_internal_type
    f = gj.function([x], [spec, Out(x + 1, borrow=False, return_internal_type=True)])
    doubled, plus_one = f(np.ones(2))
    assert type(doubled) is np.ndarray and type(plus_one) is np.ndarray
    np.testing.assert_array_equal(doubled, [2.0, 2.0])
    assert f(np.zeros(2))[1] is not plus_one


def test_print_config_lists_every_flag():
    text = str(gj.config)
    for name, value in gj.config.flags().items():
        assert f"{name} = {value!r}" in text
    assert "LLVM optimisation level" in text and "profile" in text
    with gj.config.change_flags(opt_level=1):
        assert "opt_level = 1  (default 3)" in str(gj.config)


def test_function_dump_round_trip(tmp_path):
    x = gt.dvector("x")
    w = gj.shared(np.array([1.0, 2.0]), name="w")
    path = str(tmp_path / "dump.pkl")
    function_dump(path, [x], (x * w).sum(), updates=[(w, w + 1)], name="dumped")
    kwargs, info = load_function_dump(path, with_info=True)
    assert info["versions"]["graphjit"] == gj.__version__ and info["config"]["opt_level"] == gj.config.opt_level
    f = gj.function(**kwargs)
    assert f(np.ones(2)) == 3.0 and f(np.ones(2)) == 5.0
    (tmp_path / "bad.pkl").write_bytes(b"\x80\x04K\x01.")             # a pickle of 1
    with pytest.raises(ValueError, match="not a graphjit function_dump"):
        load_function_dump(str(tmp_path / "bad.pkl"))


def test_function_dump_as_theano_documents_it(tmp_path, monkeypatch):
    """Theano's recipe: replace theano.function(...) by theano.function_dump('func_dump.bin', ...); then
    ``d = cPickle.load(open("func_dump.bin", "rb")); f = theano.function(**d)``."""
    import pickle as cPickle
    import graphjit as theano
    import graphjit.tensor as T

    monkeypatch.chdir(tmp_path)
    x = T.dvector("x")
    w = theano.shared(np.array([1.0, 2.0]), name="w")
    x.tag.annotations = ["dropped"]
    theano.function_dump("func_dump.bin", [x], (x * w).sum(), updates=[(w, w + 1)], name="dumped",
                         rebuild_strict=True, extra_tag_to_remove=["annotations"])
    assert x.tag.annotations == ["dropped"]                  # the caller's graph is left as it was
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)     # the recipe leaves its file to the collector
        d = cPickle.load(open("func_dump.bin", "rb"))
    f = theano.function(**d)
    assert f.name == "dumped" and f(np.ones(2)) == 3.0 and f(np.ones(2)) == 5.0
    assert w.get_value().tolist() == [1.0, 2.0]             # the dump has its own copy of the shared variable
    assert not hasattr(d["inputs"][0].tag, "annotations")
    assert theano.compile.function_dump is theano.function_dump


def test_pkl_utils_round_trip(tmp_path):
    w = gj.shared(np.arange(6.0).reshape(2, 3), name="w")
    b = gj.shared(np.zeros(3, dtype=np.float32), name="b")
    params = {"layer": [w, b], "scale": np.array(2.0), "pair": (w,)}
    path = tmp_path / "params.zip"
    pkl_utils.dump(params, str(path))
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["0.npy", "1.npy", "2.npy", "3.npy", "manifest.json"]
    loaded = pkl_utils.load(str(path))
    lw, lb = loaded["layer"]
    assert lw.name == "w" and lb.name == "b" and isinstance(loaded["pair"], tuple)
    np.testing.assert_array_equal(lw.get_value(), w.get_value())
    assert lb.get_value().dtype == np.float32 and loaded["scale"] == 2.0
    w.set_value(np.zeros((2, 3)))
    pkl_utils.load_into(str(path), params)
    np.testing.assert_array_equal(w.get_value(), np.arange(6.0).reshape(2, 3))
    buf = io.BytesIO()                                                 # file objects work too
    pkl_utils.dump([w], buf)
    buf.seek(0)
    assert pkl_utils.load(buf)[0].name == "w"


def test_pkl_utils_bad_input(tmp_path):
    with pytest.raises(TypeError, match="obj\\[0\\] is a str"):
        pkl_utils.dump(["no"], str(tmp_path / "x.zip"))
    with pytest.raises(TypeError, match="object array"):
        pkl_utils.dump([np.array([object()])], str(tmp_path / "x.zip"))
    with pytest.raises(TypeError, match="string keys"):
        pkl_utils.dump({1: np.ones(1)}, str(tmp_path / "x.zip"))
    rng = RandomStream(0)
    draw = rng.normal(size=(2,))
    generator = draw.owner.inputs[0]
    with pytest.raises(TypeError, match="random generator"):
        pkl_utils.dump([generator], str(tmp_path / "x.zip"))
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as zf:
        zf.writestr("a.txt", "x")
    with pytest.raises(ValueError, match="no manifest"):
        pkl_utils.load(str(tmp_path / "empty.zip"))
    pkl_utils.dump([gj.shared(np.ones(2), name="v")], str(tmp_path / "one.zip"))
    with pytest.raises(ValueError, match="1 items"):
        pkl_utils.load_into(str(tmp_path / "one.zip"), [])


@pytest.mark.parametrize("method", ["normal", "uniform", "integers"])
def test_random_stream_shape_first_names_size(method):
    srng = RandomStream(0)
    with pytest.raises(TypeError, match=r"pass size=\(2, 3\)"):
        getattr(srng, method)((2, 3))
    assert getattr(srng, method)(*([0, 5] if method == "integers" else []), size=(2, 3)).type.ndim == 2
    assert srng.normal([0.0, 1.0]).type.ndim == 1 if method == "normal" else True    # a list is a parameter
