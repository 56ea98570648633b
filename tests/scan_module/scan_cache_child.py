"""Run in a subprocess by test_scan_misc.py: compile a scan (RNN forward and BPTT) and a map run for zero steps (its
row shape from the step's shape graph), print what the linker did."""

import json

import numpy as np

import graphjit as gj
import graphjit.tensor as gt

if __name__ == "__main__":
    W, X, h0 = gt.dmatrix("W"), gt.dmatrix("X"), gt.dvector("h0")
    out, _ = gj.scan(lambda x, h, W: gt.tanh(gt.dot(W, h) + x), sequences=X, outputs_info=h0, non_sequences=W)
    f = gj.function([W, X, h0], [out[-1], gj.grad(out.sum(), W)])
    rng = np.random.default_rng(0)
    Wv, Xv, hv = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(5, 3)), rng.normal(size=3)
    h = hv
    for x in Xv:
        h = np.tanh(Wv @ h + x)
    last, gW = f(Wv, Xv, hv)
    eps, num = 1e-6, np.zeros((3, 3))
    ref = gj.function([W, X, h0], out.sum(), mode="PY")
    for idx in np.ndindex(3, 3):
        d = np.zeros((3, 3))
        d[idx] = eps
        num[idx] = (ref(Wv + d, Xv, hv) - ref(Wv - d, Xv, hv)) / (2 * eps)
    ok = bool(np.allclose(last, h) and np.allclose(gW, num, rtol=1e-5, atol=1e-8))
    A, Y = gt.dmatrix("A"), gt.dmatrix("Y")
    rows, _ = gj.scan(lambda y, A: gt.dot(A, y), sequences=Y, non_sequences=A)
    g = gj.function([A, Y], rows, mode="FAST_RUN")
    Av = np.ones((4, 3))
    zero_ok = g(Av, np.ones((0, 3))).shape == (0, 4) and g(Av, np.ones((2, 3))).shape == (2, 4)
    timings = f.native.timings
    print(json.dumps({"zero_ok": bool(zero_ok), "zero_cache_hit": g.native.cache_hit,
                      "ok": ok, "plan_hit": bool(timings.get("plan_hit")), "cache_hit": f.native.cache_hit,
                      "key": f.native.cache_key, "fallback": len(f.native.fallback_nodes)}))
