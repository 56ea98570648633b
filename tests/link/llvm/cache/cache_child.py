"""Run in a subprocess by test_cache.py: compile one test module, call it, print what happened as JSON."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # llvm_kernels.py

import numpy as np  # noqa: E402

from llvm_kernels import add_module, compile_callable  # noqa: E402

if __name__ == "__main__":
    tag, start_file = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
    module = add_module(tag=tag)
    while start_file and not os.path.exists(start_file):
        time.sleep(0.001)
    f, lib = compile_callable(module)
    x, y = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    ok = bool(np.array_equal(f(x, y), x + y))
    print(json.dumps({"hit": lib.cache_hit, "ok": ok, "key": lib.cache_key, "timings": lib.timings}))
