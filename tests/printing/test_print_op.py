"""printing.Print: prints at run time under every linker, keeps the value, survives rewrites, grads pass through."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.printing import Print
from graphjit.tensor.print_op import Print as PrintOp
from tests.op_check import OP_TEST_MODES, Case, arr, check_case

SEEN: list = []


def quiet(op, value):
    """A global_fn recording what it is given (the op tables run many calls)."""
    SEEN.append((op.message, np.array(value, copy=True)))


CASES = [
    Case("print_identity", lambda x: Print("p", global_fn=quiet)(x), lambda x: x, [arr((3, 4))]),
    Case("print_in_expression", lambda x, y: Print("p", global_fn=quiet)(x * y) + 1, lambda x, y: x * y + 1,
         [arr((3, 4)), arr((4,))]),
    Case("print_of_reduction", lambda x: Print("s", global_fn=quiet)(x.sum(axis=0)) * 2,
         lambda x: x.sum(axis=0) * 2, [arr((5, 3))]),
    Case("print_int", lambda x: Print("i", global_fn=quiet)(x) - 1, lambda x: x - 1, [arr((4,), low=-5, high=5)],
         dtypes=("int64", "int32")),
    Case("print_scalar", lambda x: Print("z", global_fn=quiet)(x) * 3, lambda x: x * 3, [arr(())],
         zero_size=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_print_op_table(case):
    check_case(case)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_print_output_is_captured(mode, capsys):
    x = gt.dvector("x")
    f = gj.function([x], Print("hello", attrs=("shape", "sum"))(gt.exp(x)) * 2, mode=mode)
    out = f(np.zeros(3))
    np.testing.assert_allclose(out, 2 * np.ones(3))
    text = capsys.readouterr().out
    assert "hello shape = (3,)" in text and "hello sum = 3.0" in text
    assert not getattr(f.native, "fallback_nodes", [])   # native: a lowering, not a perform fallback


def test_print_output_is_captured_at_the_file_descriptor(capfd):
    x = gt.dvector("x")
    f = gj.function([x], Print("fd", attrs=("shape",))(x * 2) + 1, mode="FAST_RUN")
    f(np.ones(2))
    assert "fd shape = (2,)" in capfd.readouterr().out


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_print_prints_every_call_with_the_current_value(mode):
    SEEN.clear()
    x = gt.dvector("x")
    f = gj.function([x], (Print("v", global_fn=quiet)(x + 1) ** 2).sum(), mode=mode)
    assert f(np.array([1.0, 2.0])) == 13.0
    assert f(np.array([0.0])) == 1.0
    assert [m for m, _ in SEEN] == ["v", "v"]
    np.testing.assert_array_equal(SEEN[0][1], [2.0, 3.0])
    np.testing.assert_array_equal(SEEN[1][1], [1.0])


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_print_of_a_constant_is_not_folded(mode, capsys):
    x = gt.dscalar("x")
    f = gj.function([x], Print("c")(gt.constant(np.array([1.0, 2.0]))) * x, mode=mode)
    np.testing.assert_allclose(f(2.0), [2.0, 4.0])
    assert "c __str__ = [1. 2.]" in capsys.readouterr().out
    assert any(isinstance(n.op, PrintOp) for n in f.maker.fgraph.apply_nodes)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_gradient_passes_through_print(mode):
    SEEN.clear()
    x = gt.dvector("x")
    cost = (Print("x2", global_fn=quiet)(x ** 2) * 3).sum()
    g = gj.function([x], [cost, gj.grad(cost, x)], mode=mode)
    c, dx = g(np.array([1.0, -2.0]))
    assert c == 15.0
    np.testing.assert_allclose(dx, [6.0, -12.0])
    assert [m for m, _ in SEEN] == ["x2"]             # the forward value printed once; the gradient is silent
    gj.verify_grad(lambda v: Print("g", global_fn=quiet)(v) ** 2, [np.array([0.5, 1.5])], mode=mode)


def test_print_bad_arguments():
    with pytest.raises(TypeError, match="message"):
        Print(3)
    with pytest.raises(TypeError, match="attrs"):
        Print("m", attrs=(1,))
    with pytest.raises(TypeError, match="global_fn"):
        Print("m", global_fn=5)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_print_unknown_attribute_raises_at_run_time(mode):
    x = gt.dvector("x")
    f = gj.function([x], Print("m", attrs=("no_such_attr",))(x) + 1, mode=mode)
    with pytest.raises(AttributeError, match="no_such_attr"):
        f(np.ones(2))


def test_print_from_the_disk_cache_in_a_new_process(tmp_path):
    """A cache hit in a new process re-publishes the callback symbol: the print still happens."""
    script = textwrap.dedent("""
        import numpy as np, graphjit as gj, graphjit.tensor as gt
        from graphjit.printing import Print
        x = gt.dvector("x")
        f = gj.function([x], Print("again", attrs=("shape",))(x * 2) + 1)
        print("result", f(np.ones(4)).tolist(), f.native.cache_hit or f.native.timings.get("plan_hit", False))
    """)
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.environ["PYTHONPATH"])
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
        assert "again shape = (4,)" in r.stdout and "result [3.0, 3.0, 3.0, 3.0]" in r.stdout
    assert runs[1].stdout.strip().endswith("True")        # the second process loaded compiled code
