"""Run in a subprocess by test_linalg_native.py: compile a graph of every natively lowered linalg op and print
JSON {ok, plan_hit, cache_hit, fallback}; a warm process links the cached object, publishing the LAPACK
pointers through their providers without lowering anything."""

import json

import numpy as np
import scipy.linalg as sl

import graphjit as gj
import graphjit.tensor as gt
from graphjit.tensor import linalg as la


def main() -> None:
    a, b = gt.dmatrix("a"), gt.dvector("b")
    c = la.cholesky(a)
    outs = [la.cho_solve((c, True), b), la.solve_triangular(c, b, lower=True), la.solve(a, b), la.inv(a),
            la.det(a), la.slogdet(a)[1], la.eigh(a)[0], la.chol_inv_diag(c, b), la.solve(a, b, assume_a="pos"),
            la.expm(0.1 * a), la.lstsq(a, b)[0], la.eigvalsh(a, a + gt.eye(5))]
    f = gj.function([a, b], outs)
    rng = np.random.default_rng(0)
    m = rng.uniform(-1, 1, (5, 5))
    av, bv = m @ m.T + 5 * np.eye(5), rng.uniform(0.5, 1, 5)
    lv = np.linalg.cholesky(av)
    li = np.linalg.inv(lv)
    want = [np.linalg.solve(av, bv), np.linalg.solve(lv, bv), np.linalg.solve(av, bv), np.linalg.inv(av),
            np.linalg.det(av), np.linalg.slogdet(av)[1], np.linalg.eigvalsh(av), li.T @ np.diag(bv) @ li,
            np.linalg.solve(av, bv), sl.expm(0.1 * av), np.linalg.lstsq(av, bv)[0],
            sl.eigh(av, av + np.eye(5), eigvals_only=True)]
    got = f(av, bv)
    ok = all(np.allclose(g, w) for g, w in zip(got, want))
    print(json.dumps({"ok": bool(ok), "plan_hit": bool(f.native.timings.get("plan_hit")),
                      "cache_hit": bool(f.native.cache_hit), "fallback": len(f.native.fallback_nodes)}))


if __name__ == "__main__":
    main()
