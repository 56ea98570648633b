"""Run in a subprocess by test_plan_cache.py: compile a small graph, call it, print what the linker did as JSON."""

import json
import sys

import numpy as np

import graphjit
import graphjit.tensor as T

if __name__ == "__main__":
    scale = float(sys.argv[1])
    x, y = T.dmatrix("x"), T.dvector("y")
    f = graphjit.function([x, y], T.exp(x * scale) + y)
    a, b = np.arange(6.0).reshape(2, 3) / 10, np.ones(3)
    ok = bool(np.allclose(f(a, b), np.exp(a * scale) + b))
    native = f.native
    timings = native.timings
    print(json.dumps({"ok": ok, "plan_hit": bool(timings.get("plan_hit")), "ir_build": "ir_build" in timings,
                      "rewrites_cached": f.maker.rewrites_cached,
                      "rewrite_db_imported": "graphjit.tensor.rewriting" in sys.modules,
                      "cache_hit": native.cache_hit, "key": native.cache_key}))
