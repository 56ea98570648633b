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
from graphjit.printing import pprint
from graphjit.scalar.basic import Libm, Operator, ScalarOp, register_scalar_op, upcast_to_float
from graphjit.tensor.elemwise import CAReduce, Elemwise

# the whole op: what it computes in numpy, its output dtype, the libm function the backend calls, d/dx, d/dy
hypot = register_scalar_op(ScalarOp(
    "test_hypot", 2, np.hypot, dtype_rule=upcast_to_float, llvm=Libm("hypot"), allowed_kinds="biuf",
    grad=lambda m, i, o, gz: [m.mul(gz, m.true_div(i[0], o)), m.mul(gz, m.true_div(i[1], o))]))

# how pprint writes an op is declared with it too: an operator, a call name, the name of a reduction over it
band = register_scalar_op(ScalarOp(
    "test_band", 2, np.bitwise_and, commutative=True, associative=True, identity=-1, allowed_kinds="biu",
    operator=Operator("&&", 12, "either"), reduction_name="all_bits"))
bfirst = register_scalar_op(ScalarOp("test_bfirst", 2, lambda a, b: a, call_name="first_of"))
hypot_ca = register_scalar_op(ScalarOp("test_hypot_ca", 2, np.hypot, commutative=True, associative=True))
# np.fabs: no graphjit op is declared with it, so numpy's np.fabs(x) on a symbolic x routes to this one
fabs = register_scalar_op(ScalarOp("test_fabs", 1, np.fabs, allowed_kinds="f", llvm=Libm("fabs")))

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


def test_declared_op_prints_as_declared() -> None:
    x, y, z = gt.lvector("x"), gt.lvector("y"), gt.lvector("z")
    assert pprint(Elemwise(band)(Elemwise(band)(x, y), z)) == "((x && y) && z)"
    assert pprint(Elemwise(band)(x, y) + 1) == "((x && y) + 1)"
    assert pprint(CAReduce(band, (0,))(gt.lmatrix("m"))) == "all_bits(m, axis=0)"
    assert pprint(Elemwise(bfirst)(x, y)) == "first_of(x, y)"
    assert pprint(Elemwise(hypot)(x, y)) == "test_hypot(x, y)"     # nothing declared: its name
    assert pprint(CAReduce(hypot_ca, (0,))(gt.dmatrix("d"))) == "reduce_test_hypot_ca(d, axis=0)"


@pytest.mark.parametrize("mode", MODES)
def test_declared_op_is_what_its_ufunc_builds(mode: str) -> None:
    x = gt.dvector("x")
    expr = np.fabs(x)
    assert expr.owner.op == Elemwise(fabs)
    assert np.hypot(x, x).owner.op == gt.hypot, "the first op declared with a ufunc keeps it"
    with pytest.raises(TypeError, match=r"use Elemwise\(test_fabs\)"):
        np.fabs(x, out=np.empty(3))
    np.testing.assert_array_equal(gj.function([x], expr, mode=mode)(np.array([-1.5, 0.0, 2.0])), [1.5, 0.0, 2.0])


def test_import_graphjit_does_not_load_scipy() -> None:
    code = "import sys, graphjit, graphjit.tensor; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", "scipy.special is loaded on first use of erf/erfc/sigmoid only"


def test_scipy_backed_op_loads_scipy_on_first_use() -> None:
    code = ("import sys, numpy as np, graphjit.scalar.math as m; assert 'scipy' not in sys.modules; "
            "print(m.erf.impl(np.array([0.5])), m.sigmoid.numpy.__name__, 'scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-2:] == ["expit", "True"]
