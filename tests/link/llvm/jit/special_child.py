"""Run in a subprocess by test_special_library.py: a graph of scipy-backed special functions, compiled (its
object maybe from the disk cache, lowering nothing), run; prints JSON {ok, plan_hit, cache_hit, published,
scipy_before_call}."""

import json
import sys
import warnings

import numpy as np
import scipy.special as sp

import graphjit as gj
import graphjit.tensor as gt


def main() -> None:
    x, y, s = gt.dvector("x"), gt.dvector("y"), gt.fvector("s")
    outs = [gt.gammaln(x) + gt.betaln(x, y) + gt.xlogy(y, x) + gt.polygamma(1.0, x) + gt.i1e(x) + gt.gammaincc(x, y),
            gt.erfinv(s) + gt.logit(gt.expit(s) * 0.5)]
    f = gj.function([x, y, s], outs, mode="FAST_RUN")
    scipy_cython = "scipy.special.cython_special" in sys.modules
    a, b = np.array([0.5, 2.0, 7.5]), np.array([1.5, 3.0, 0.25])
    c = np.array([-0.5, 0.1, 0.9], dtype=np.float32)
    got = f(a, b, c)
    want = [sp.gammaln(a) + sp.betaln(a, b) + sp.xlogy(b, a) + sp.polygamma(1, a) + sp.i1e(a) + sp.gammaincc(a, b),
            sp.erfinv(c) + sp.logit(sp.expit(c) * np.float32(0.5))]
    ok = all(np.allclose(g, w, rtol=1e-6) for g, w in zip(got, want)) and got[1].dtype == np.float32
    print(json.dumps({"ok": bool(ok), "plan_hit": bool(f.native.timings.get("plan_hit")),
                      "cache_hit": bool(f.native.cache_hit), "fallback": len(f.native.fallback_nodes),
                      "cython_special_at_compile": scipy_cython}))


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main()
