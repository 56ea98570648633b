"""Run in a subprocess by test_plan_alias.py: compile and call a graph with the structural signature disabled
(the warm path must not need it); print what the linker did and which backend modules were loaded, as JSON."""

import json
import sys

import numpy as np

import graphjit
import graphjit.tensor as T
from graphjit.link.llvm import linker, registry

if __name__ == "__main__":
    warm = sys.argv[1] == "warm"
    if warm:
        def refuse(*args, **kwargs):
            raise AssertionError("the warm path computed the structural signature")
        linker.structural_signature = refuse
    x, y = T.dmatrix("x"), T.dvector("y")
    f = graphjit.function([x, y], [T.exp(x * 0.5) + y, (x * y).sum(axis=1)])
    a, b = np.arange(6.0).reshape(2, 3) / 10, np.ones(3)
    got = f(a, b)
    ok = bool(np.allclose(got[0], np.exp(a * 0.5) + b) and np.allclose(got[1], (a * b).sum(axis=1)))
    print(json.dumps({"ok": ok, "plan_hit": bool(f.native.timings.get("plan_hit")),
                      "rewrites_cached": f.maker.rewrites_cached, "cache_hit": f.native.cache_hit,
                      "stats": sorted(f.compile_stats), "builtins_loaded": registry.builtins_loaded(),
                      "modules": sorted(m for m in sys.modules if m.startswith(("graphjit.link.llvm", "llvmlite")))}))
