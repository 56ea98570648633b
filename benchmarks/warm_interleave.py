"""Warm compiles of two trees, interleaved: is a change to the warm path faster on a busy machine?

`python benchmarks/warm_interleave.py BASE NEW [--sizes 100,1000,3000] [--samples 9] [--w5]`

BASE and NEW are graphjit checkouts (e.g. a `git archive <commit> | tar -x -C /tmp/base` snapshot and the
working tree). Each sample is a fresh process pinned to one core that builds the W9 graph of N operations (or W5's
training step), compiles it from a warm cache (primed twice first, one cache per tree and case) and calls it
once, as W9 and W5 measure; the two trees alternate (their order flips every round), so load from other
processes falls on both alike. Prints medians of the wall time and of the process's CPU time (steadier under
load) from imports done, the `import graphjit` time, and the median compile phases at each N.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_W9 = """
import sys, json, time
sys.path[:0] = [{bench!r}, {root!r}]
import numpy as np
import peers, w9_graph
c_i, t_i = time.process_time(), time.perf_counter()
import graphjit as gj, graphjit.tensor as gt
c_i, t_i = time.process_time() - c_i, time.perf_counter() - t_i
steps = w9_graph.spec({n}, 0)
X, W = w9_graph.data(0)
c0, t0 = time.process_time(), time.perf_counter()
x, w = gt.dmatrix('x'), gt.dmatrix('w')
f = gj.function([x, w], w9_graph.evaluate(steps, gt, x, w))
outs = f(X, W)
print(json.dumps({{"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "iwall": t_i, "icpu": c_i,
                  "hit": bool(f.native.timings.get("plan_hit")), "stats": f.compile_stats}}))
"""
_W5 = """
import sys, json, time
sys.path[:0] = [{bench!r}, {root!r}]
import numpy as np
import peers, w3_mlp
c_i, t_i = time.process_time(), time.perf_counter()
import graphjit, graphjit.tensor
c_i, t_i = time.process_time() - c_i, time.perf_counter() - t_i
X, Y, params = w3_mlp.data("float64")
c0, t0 = time.process_time(), time.perf_counter()
impl = w3_mlp.w3_theano_like('graphjit', X, Y, params)
impl.run()
print(json.dumps({{"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "iwall": t_i, "icpu": c_i,
                  "hit": True, "stats": {{}}}}))
"""


def _sample(root: str, case: tuple[str, int], cache: str, core: int) -> dict:
    """One fresh process of case (workload, N) with root's graphjit and the given cache directory."""
    src = os.path.join(root, "src")              # a checkout of the src layout, or an older flat one
    code = (_W9 if case[0] == "W9" else _W5).format(bench=os.path.join(root, "benchmarks"),
                                                    root=src if os.path.isdir(os.path.join(src, "graphjit")) else root,
                                                    n=case[1])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env.update(GRAPHJIT_CACHE_DIR=cache, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(["taskset", "-c", str(core), sys.executable, "-c", code], env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Prime both trees' caches, sample them alternately, print the medians."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--sizes", default="100,1000,3000", help="W9 sizes (empty: none)")
    p.add_argument("--samples", type=int, default=9)
    p.add_argument("--w5", action="store_true", help="also W5 (the W3 training step)")
    p.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    args = p.parse_args(argv)
    trees = {"base": os.path.abspath(args.base), "new": os.path.abspath(args.new)}
    cases = [("W9", int(n)) for n in args.sizes.split(",") if n] + ([("W5", 0)] if args.w5 else [])
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="gj-warm-") as tmp:
        caches = {(tag, case): os.path.join(tmp, f"{tag}-{case[0]}-{case[1]}") for tag in trees for case in cases}
        for (tag, case), cache in caches.items():
            for _ in range(2):
                _sample(trees[tag], case, cache, args.core)
        print(f"load {os.getloadavg()[0]:.2f}, core {args.core}, {args.samples} samples per tree and case")
        for k in range(args.samples):
            order = list(trees.items()) if k % 2 == 0 else list(trees.items())[::-1]
            for case in cases:
                for tag, root in order:
                    res = _sample(root, case, caches[(tag, case)], args.core)
                    if not res["hit"]:
                        raise RuntimeError(f"{tag} {case}: not a warm plan hit")
                    out.setdefault((case, tag), []).append(res)
    print(f"load {os.getloadavg()[0]:.2f} at the end")

    def med(case: tuple, tag: str, key: str) -> float:
        return statistics.median(r[key] for r in out[(case, tag)]) * 1e3

    for case in cases:
        name = f"{case[0]} N={case[1]}" if case[0] == "W9" else case[0]
        line = [f"{key} {med(case, 'base', key):.1f} -> {med(case, 'new', key):.1f} ms "
                f"({med(case, 'new', key) / med(case, 'base', key):.2f}x)" for key in ("wall", "cpu")]
        line.append(f"import graphjit cpu {med(case, 'base', 'icpu'):.1f} -> {med(case, 'new', 'icpu'):.1f} ms")
        print(f"{name}: " + "; ".join(line))
        if case[0] == "W9":
            for tag in trees:
                keys = sorted({k for r in out[(case, tag)] for k in r["stats"] if ":" not in k})
                print(f"    {tag} phases (ms):",
                      {k: round(statistics.median(r["stats"].get(k, 0.0) for r in out[(case, tag)]) * 1e3, 1)
                       for k in keys})
    return 0


if __name__ == "__main__":
    sys.exit(main())
