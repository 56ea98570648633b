"""NanGuardMode: NaN, infinities and huge values caught natively inside the fused function (and under 'py')."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.compile import NanGuardError, NanGuardMode
from graphjit.compile.nanguardmode import NanGuardMode as NanGuardModeByPath

LINKERS = ["llvm", "py", "cvm"]


def _log_graph():
    x = gt.dvector("x")
    y = gt.exp(x) * 2
    z = gt.log(x - 1) * y          # NaN for x < 1: mid-graph, inside a fused loop
    line = sys._getframe().f_lineno - 1
    return x, (z.sum() + y).mean(), line


@pytest.mark.parametrize("linker", LINKERS)
def test_nan_mid_graph_names_node_shapes_and_line(linker):
    x, out, line = _log_graph()
    f = gj.function([x], out, mode=NanGuardMode(linker=linker))
    assert np.isfinite(f(np.array([2.0, 3.0])))
    with pytest.raises(NanGuardError) as info:
        f(np.array([0.5, 3.0, 4.0]))
    text = str(info.value)
    assert "NaN" in text and "Elemwise{log" in text
    assert "(3,)" in text                                  # the input's shape
    assert f"test_nanguard.py:{line}" in text               # the user's line that built the node
    assert isinstance(info.value, ValueError)


def test_native_guard_is_compiled_in():
    x, out, _ = _log_graph()
    f = gj.function([x], out, mode=NanGuardMode())
    assert "glue.guard.float64" in f.native.llvm_ir
    g = gj.function([x], out, mode="FAST_RUN")
    assert "glue.guard" not in g.native.llvm_ir and "gj_node_callback" not in g.native.llvm_ir


@pytest.mark.parametrize("linker", ["llvm", "py"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_inf_and_big(linker, dtype):
    x = gt.vector("x", dtype=dtype)
    out = (gt.exp(x) + 1) * 2
    f = gj.function([x], out, mode=NanGuardMode(linker=linker))
    with pytest.raises(NanGuardError, match="infinity"):
        f(np.array([1000.0], dtype=dtype))
    with pytest.raises(NanGuardError, match="above 1e\\+10"):
        f(np.array([30.0], dtype=dtype))
    quiet = gj.function([x], out, mode=NanGuardMode(inf_is_error=False, big_is_error=False, linker=linker))
    assert np.isinf(quiet(np.array([1000.0], dtype=dtype))).all()
    only_nan = gj.function([x], gt.log(x), mode=NanGuardMode(True, False, False, linker=linker))
    with pytest.raises(NanGuardError, match="NaN"):
        only_nan(np.array([-1.0], dtype=dtype))


@pytest.mark.parametrize("linker", ["llvm", "py"])
def test_nan_after_a_structural_node(linker):
    x, w = gt.dmatrix("x"), gt.dmatrix("w")
    f = gj.function([x, w], gt.tanh(gt.dot(x, w)), mode=NanGuardMode(linker=linker))
    a = np.ones((2, 3))
    a[1, 2] = np.inf
    with pytest.raises(NanGuardError, match="Dot"), np.errstate(all="ignore"):   # numpy (PY) warns
        f(a, -np.ones((3, 2)) * np.array([1.0, 0.0]))      # inf * 0 = NaN inside the product
    np.testing.assert_allclose(f(np.ones((2, 3)), np.ones((3, 2))), np.tanh(3 * np.ones((2, 2))))


def test_integer_results_and_zero_size_pass():
    i = gt.lvector("i")
    x = gt.dvector("x")
    f = gj.function([i, x], [i * 2, gt.log(x)], mode=NanGuardMode())
    a, b = f(np.array([1, 2]), np.zeros(0))
    assert a.tolist() == [2, 4] and b.shape == (0,)


def test_registered_names_and_theano_path():
    assert NanGuardModeByPath is NanGuardMode
    x = gt.dvector("x")
    f = gj.function([x], gt.sqrt(x), mode="NanGuardMode")
    with pytest.raises(NanGuardError, match="sqrt"):
        f(np.array([-1.0]))
    assert gj.NanGuardMode is NanGuardMode


def test_bad_linker_is_a_type_error():
    from graphjit.compile.mode import register_linker
    from graphjit.link.basic import Linker

    class Plain(Linker):
        pass

    register_linker("plain_for_nanguard_test", Plain)
    x = gt.dvector("x")
    with pytest.raises(TypeError, match="NanGuardMode"):
        gj.function([x], x + 1, mode=NanGuardMode(linker="plain_for_nanguard_test"))


@pytest.mark.soak
def test_guard_from_the_disk_cache_in_a_new_process(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, graphjit as gj, graphjit.tensor as gt
        from graphjit.compile import NanGuardMode, NanGuardError
        x = gt.dvector("x")
        f = gj.function([x], gt.log(x) * 2 + 1, mode=NanGuardMode())
        try:
            f(np.array([-1.0]))
        except NanGuardError as e:
            print("caught", "Elemwise{log" in str(e), f.native.timings.get("plan_hit", False) or f.native.cache_hit)
    """)
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.environ["PYTHONPATH"])
    outs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    for r in outs:
        assert r.returncode == 0, r.stderr
    assert outs[0].stdout.split()[:2] == ["caught", "True"]
    assert outs[1].stdout.split() == ["caught", "True", "True"]
