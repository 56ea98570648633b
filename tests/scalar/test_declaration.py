"""Adding a scalar op costs one declaration: numpy function, dtype rule, LLVM math as data and gradient.

The op below is declared here, outside graphjit, and nothing else is written for it: it must run natively
under the LLVM linker (no perform fallback), agree with numpy in every mode, and differentiate.
"""

import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from graphjit.scalar.basic import Libm, ScalarOp, register_scalar_op, upcast_to_float
from graphjit.tensor.elemwise import Elemwise

# the whole op: what it computes in numpy, its output dtype, the libm function the backend calls, d/dx, d/dy
hypot = register_scalar_op(ScalarOp(
    "test_hypot", 2, np.hypot, dtype_rule=upcast_to_float, llvm=Libm("hypot"), allowed_kinds="biuf",
    grad=lambda m, i, o, gz: [m.mul(gz, m.true_div(i[0], o)), m.mul(gz, m.true_div(i[1], o))]))

MODES = ["PY", "FAST_COMPILE", "FAST_RUN"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8"])
def test_declared_op_matches_numpy(mode: str, dtype: str) -> None:
    x, y = gt.vector("x", dtype=dtype), gt.vector("y", dtype=dtype)
    f = gj.function([x, y], Elemwise(hypot)(x, y) * 2, mode=mode)
    a, b = np.arange(-5, 6).astype(dtype), np.arange(11).astype(dtype)
    got = f(a, b)
    out = upcast_to_float(dtype)         # int8: float32, where numpy's own loop would be float16
    want = np.hypot(a.astype(out), b.astype(out)) * 2
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
    if mode != "PY":
        assert f.native.fallback_nodes == [], "the declared Libm math must lower natively"


@pytest.mark.parametrize("mode", MODES)
def test_declared_op_gradient(mode: str) -> None:
    x, y = gt.dvector("x"), gt.dvector("y")
    cost = Elemwise(hypot)(x, y).sum()
    gx, gy = gj.grad(cost, [x, y])
    f = gj.function([x, y], [gx, gy], mode=mode)
    a, b = np.array([3.0, -1.0, 0.5]), np.array([4.0, 2.0, -7.0])
    dx, dy = f(a, b)
    np.testing.assert_allclose(dx, a / np.hypot(a, b))
    np.testing.assert_allclose(dy, b / np.hypot(a, b))
    if mode != "PY":
        assert f.native.fallback_nodes == []
    verify_grad(lambda u, v: Elemwise(hypot)(u, v), [a, b], mode=mode)


def test_import_graphjit_does_not_load_scipy() -> None:
    code = "import sys, graphjit, graphjit.tensor; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", "scipy.special is loaded on first use of erf/erfc/sigmoid only"


def test_scipy_backed_op_loads_scipy_on_first_use() -> None:
    code = ("import sys, numpy as np, graphjit.scalar.math as m; assert 'scipy' not in sys.modules; "
            "print(m.erf.impl(np.array([0.5])), m.sigmoid.numpy.__name__, 'scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-2:] == ["expit", "True"]
