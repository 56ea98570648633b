"""The native (LAPACK) lowering: no fallback, errors as numpy's (naming the op and the line), on_error='nan',
float32, layouts, and the pointers re-established for an object loaded from the disk cache in a new process."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor import linalg as la, slinalg
from linalg_inputs import general, spd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
NATIVE = {
    "cholesky": lambda a, b: la.cholesky(a),
    "cholesky_upper": lambda a, b: la.cholesky(a, lower=False),
    "solve_triangular": lambda a, b: la.solve_triangular(la.cholesky(a), b, lower=True),
    "cho_solve": lambda a, b: la.cho_solve((la.cholesky(a), True), b),
    "solve": la.solve,
    "solve_pos": lambda a, b: la.solve(a, b, assume_a="pos"),
    "inv": lambda a, b: la.inv(a),
    "det": lambda a, b: la.det(a),
    "slogdet": lambda a, b: la.slogdet(a)[0] * la.slogdet(a)[1],
    "eigh": lambda a, b: la.eigh(a)[0],
    "diagonal": lambda a, b: la.diagonal(a),
    "lu_solve": lambda a, b: la.lu_solve(la.lu_factor(a), b),
    "pinv": lambda a, b: la.pinv(a),             # rewritten to numpy's formula on the (native) SVD
    "svd": lambda a, b: la.svd(a, compute_uv=False),
    "qr_r": lambda a, b: la.qr(a, "r"),
    "lu": lambda a, b: la.lu(a)[0] + la.lu(a)[1] * la.lu(a)[2],
    "lu_rect_permute_l": lambda a, b: la.lu(a[:, :3], permute_l=True)[0].sum() + la.lu(a[:3])[2].sum(),
    "solve_sym_lower": lambda a, b: la.solve(a, b, assume_a="sym", lower=True),
    "solve_pos_lower": lambda a, b: la.solve(a, b, assume_a="pos", lower=True),
    "pinv_hermitian": lambda a, b: la.pinv(a, hermitian=True),     # rewritten onto the (native) eigh
    "qr_economic": lambda a, b: la.qr(a[:, :3], mode="economic")[1],
    "eigh_general": lambda a, b: la.eigh(a + la.mT(a), a)[0],
    "lstsq": lambda a, b: sum(o.sum() for o in la.lstsq(a[:, :3], b)),     # x, residuals, rank, s
    "expm": lambda a, b: la.expm(a),
    "expm_grad": lambda a, b: gj.grad(la.expm(a).sum(), a),        # expm of the 2n x 2n block matrix
    "slinalg_eigvalsh": lambda a, b: slinalg.eigvalsh(a, a + gt.eye(4), lower=False),   # Theano's name
    "eigh_general_grad": lambda a, b: gj.grad(la.eigvalsh(a, a + gt.eye(4)).sum(), a),
}


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_lowered_without_fallback(name):
    a, b = gt.dmatrix("a"), gt.dvector("b")
    f = gj.function([a, b], NATIVE[name](a, b), mode="FAST_RUN", on_unused_input="ignore")
    assert not f.native.fallback_nodes
    av, bv = spd((4, 4)), np.arange(4.0)
    ref = gj.function([a, b], NATIVE[name](a, b), mode="PY", on_unused_input="ignore")
    np.testing.assert_allclose(f(av, bv), ref(av, bv), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
@pytest.mark.parametrize("build, value, text", [
    (la.cholesky, -np.eye(3), "not positive definite"),
    (la.inv, np.ones((3, 3)), "singular"),
    (lambda a: la.solve(a, a[0]), np.ones((3, 3)), "singular"),
    (lambda a: la.solve(a, a[0], assume_a="pos"), -np.eye(3), "not positive definite"),
    (lambda a: la.solve_triangular(a, a[0], lower=True), np.tril(np.ones((3, 3))) - np.eye(3), "singular"),
    (lambda a: la.cholesky(a), np.ones((3, 2)), "square"),
    (lambda a: la.eigh(a, -a)[0], np.eye(3), "b is not positive definite"),
    (lambda a: la.lstsq(a, a[0][:2])[0], np.ones((3, 3)), "incompatible"),
    (la.expm, np.ones((3, 2)), "square"),
])
def test_linalg_errors_name_the_op_and_line(mode, build, value, text):
    a = gt.dmatrix("a")
    out = build(a)
    f = gj.function([a], out, mode=mode)
    with pytest.raises(np.linalg.LinAlgError, match=text) as info:
        f(value)
    assert type(out.owner.op).__name__ in str(info.value)
    assert "test_linalg_native.py" in str(info.value)          # the user's line


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_on_error_nan_gives_nan_for_the_failing_matrix_only(mode):
    a = gt.dtensor3("a")
    f = gj.function([a], [la.cholesky(a, on_error="nan"), la.inv(a, on_error="nan")], mode=mode)
    good = spd((3, 3))
    chol, inv = f(np.stack([good, -np.eye(3)]))
    np.testing.assert_allclose(chol[0], np.linalg.cholesky(good))
    np.testing.assert_allclose(inv[0], np.linalg.inv(good))
    assert np.isnan(chol[1]).all() and np.isfinite(inv[1]).all()
    b = gt.dvector("b")
    g = gj.function([a, b], la.solve(a, b, on_error="nan"), mode=mode)
    x = g(np.stack([general((3, 3)), np.zeros((3, 3))]), np.ones(3))
    assert np.isfinite(x[0]).all() and np.isnan(x[1]).all()


def test_wrong_ndim_is_a_type_error_naming_the_input():
    with pytest.raises(TypeError, match="input a"):
        la.cholesky(gt.dvector("v"))
    with pytest.raises(TypeError, match="input b"):
        la.solve(gt.dmatrix("m"), gt.dscalar("s"))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        la.inv(gt.tensor("float64", (3, 4)))
    with pytest.raises(TypeError, match="float16"):
        la.det(gt.tensor("float16", (3, 3)))
    with pytest.raises(ValueError, match="not provided"):
        la.solve(gt.dmatrix("m"), gt.dvector("v"), assume_a="tridiagonal")
    with pytest.raises(ValueError, match="qr: mode"):
        la.qr(gt.dmatrix("m"), mode="raw")


def test_float32_stays_float32_natively():
    a = gt.fmatrix("a")
    f = gj.function([a], [la.cholesky(a), la.inv(a), la.eigh(a)[0]], mode="FAST_RUN")
    assert not f.native.fallback_nodes
    av = spd((5, 5)).astype("float32")
    c, i, w = f(av)
    assert c.dtype == i.dtype == w.dtype == np.float32
    np.testing.assert_allclose(c, np.linalg.cholesky(av), rtol=1e-5)
    np.testing.assert_allclose(i, np.linalg.inv(av), rtol=1e-4)


@pytest.mark.soak
def test_lapack_pointers_survive_a_warm_process(tmp_path):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))

    def child():
        proc = subprocess.run([sys.executable, os.path.join(HERE, "lapack_child.py")], env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    cold, warm = child(), child()
    assert cold["ok"] and not cold["cache_hit"] and cold["fallback"] == 0
    assert warm["ok"] and warm["plan_hit"] and warm["cache_hit"]


def test_import_graphjit_does_not_load_scipy():
    code = "import sys, graphjit, graphjit.tensor.linalg; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")),
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
