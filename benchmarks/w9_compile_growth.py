"""W9: compile time as graphs grow: the random DAG of w9_graph.py (N = 100 ... 10000 operations over a 50 x 40
matrix) built, compiled and called once in a fresh process, from imports done to the first result.

Cold: an empty cache directory; warm: the same directory again, in another fresh process (every library's disk
cache pointed into it, as W5 does). graphjit's children also report `f.compile_stats` (graph/phase_timer.py):
the cold time split into rewriting, IR build, LLVM optimisation and code generation (and the rest), stored in
each result's `extra["phases"]` and drawn in `results/w9_compile_growth.png` against N.

PyTensor's C backend compiles a C module per node: it gets `PYTENSOR_TIMEOUT` seconds per child, reported as
n/a beyond (and the larger N are then skipped).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from common import Result, Settings, fmt_result, quartiles, reason_of
from w5_compile import child_env

HERE = Path(__file__).resolve().parent
IMPLS = ("pytensor-c", "jax", "graphjit")
THREAD_SETTINGS = ("1 thread", "default threads")   # default threads: graphjit's codegen uses both cores
SIZES = (100, 1000, 3000, 10000)
TIMEOUT = 600.0
PYTENSOR_TIMEOUT = 180.0
SEED = 0
PHASES = ("rewrite", "ir_build", "optimize", "codegen")

_CHILD = """
import sys, json, time
sys.path[:0] = [{here!r}, {root!r}]
import numpy as np
import peers, w9_graph
t_import = time.perf_counter()
{imports}
t_import = time.perf_counter() - t_import
steps = w9_graph.spec({n}, {seed})
X, W = w9_graph.data({seed})
t0 = time.perf_counter()
{build}
outs = f(X, W)
seconds = time.perf_counter() - t0
ok = all(np.allclose(np.asarray(a), b, rtol=1e-7, atol=1e-9)
         for a, b in zip(outs, w9_graph.reference(steps, X, W)))
print(json.dumps({{"seconds": seconds, "import": t_import, "ok": ok, "phases": phases, "nodes": nodes}}))
"""

_IMPORTS = {
    "jax": "peers.jax(); import jax.numpy as jnp",
    "pytensor-c": "import pytensor, pytensor.tensor as pt; mode = peers.pytensor_mode('pytensor-c')",
    "graphjit": "import graphjit as gj, graphjit.tensor as gt",
}
_BUILD = {
    "jax": ("jf = peers.jax().jit(lambda x, w: w9_graph.evaluate(steps, jnp, x, w))\n"
            "f = lambda x, w: [a.block_until_ready() for a in jf(x, w)]\nphases, nodes = {}, None"),
    "pytensor-c": ("x, w = pt.dmatrix('x'), pt.dmatrix('w')\n"
                   "f = pytensor.function([x, w], w9_graph.evaluate(steps, pt, x, w), mode=mode)\n"
                   "phases, nodes = {}, len(f.maker.fgraph.apply_nodes)"),
    "graphjit": ("x, w = gt.dmatrix('x'), gt.dmatrix('w')\n"
                 "f = gj.function([x, w], w9_graph.evaluate(steps, gt, x, w))\n"
                 "phases, nodes = f.compile_stats, len(f.maker.fgraph.apply_nodes)"),
}


def child(impl: str, n: int, cache_dir: str, timeout: float) -> dict:
    """One fresh process building, compiling and calling the N-operation graph once."""
    code = _CHILD.format(here=str(HERE), root=str(HERE.parent / "src"), imports=_IMPORTS[impl], build=_BUILD[impl],
                         n=n, seed=SEED)
    proc = subprocess.run([sys.executable, "-c", code], env=child_env(impl, cache_dir), capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        raise RuntimeError(lines[-1][:160] if lines else f"exit code {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def case_names() -> list[str]:
    """N = ... cold and warm."""
    return [f"N={n} {kind}" for n in SIZES for kind in ("cold", "warm")]


def run(settings: Settings, impls: list[str], log: Callable[[str], None] = print) -> list[Result]:
    """Cold and warm compile times at every N, `compile_repeat` fresh cache dirs each."""
    results = []
    for impl in impls:
        timeout = PYTENSOR_TIMEOUT if impl.startswith("pytensor") else TIMEOUT
        failed = ""
        for n in SIZES:
            cold: list[dict] = []
            warm: list[dict] = []
            error = failed
            for _ in range(settings.compile_repeat if not error else 0):
                try:
                    with tempfile.TemporaryDirectory(prefix="gj-w9-") as d:
                        cold.append(child(impl, n, d, timeout))
                        warm.append(child(impl, n, d, timeout))
                except subprocess.TimeoutExpired:
                    error = failed = f"time-out: over {timeout:.0f} s"
                except RuntimeError as exc:
                    error = str(exc)
                except Exception as exc:  # noqa: BLE001
                    error = reason_of(exc)
                if error:
                    break
            for kind, runs in (("cold", cold), ("warm", warm)):
                res = Result("W9", f"N={n} {kind}", impl, "n/a" if error else "ok", error)
                if not error:
                    times = [r["seconds"] for r in runs]
                    res.q1, res.median, res.q3 = quartiles(times)
                    res.number, res.repeat = 1, len(times)
                    if not all(r["ok"] for r in runs):
                        res.status, res.reason = "mismatch", "outputs differ from numpy"
                    mid = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
                    res.extra.update(phases=mid["phases"], nodes=mid["nodes"], imports=mid["import"])
                log(f"  W9 {res.case:<22} {impl:<16} " + fmt_result(res) + _phase_note(res))
                results.append(res)
    return results


def _phase_note(res: Result) -> str:
    phases = res.extra.get("phases") or {}
    if not phases:
        return ""
    parts = [f"{k} {phases[k]:.3f}" for k in PHASES if k in phases]
    return f"   [{', '.join(parts)}; nodes {res.extra.get('nodes')}]" if parts else ""


def chart(record: dict, out: Path | None = None) -> Path | None:
    """run.py's hook: the W9 chart of a whole run's record (every implementation's worker), one thread setting
    (the first that has W9 results); written to results/w9_compile_growth.png unless out is given."""
    for setting, data in record["settings"].items():
        results = [Result(**{k: v for k, v in r.items()}) for r in data["results"] if r["workload"] == "W9"]
        if results:
            target = out or HERE / "results" / "w9_compile_growth.png"
            return _chart(results, f"{setting}, load {_load(results)}", target)
    return None


def _load(results: list[Result]) -> str:
    loads = [x for r in results for x in r.extra.get("loadavg", [])]
    return f"{min(loads):.1f}-{max(loads):.1f}" if loads else "?"


def _chart(results: list[Result], label: str, out: Path) -> Path | None:
    """Compile time against N (log-log) for every implementation, cold and warm; graphjit's phases stacked."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
    for k, impl in enumerate(sorted({r.impl for r in results})):
        for kind, style in (("cold", "-o"), ("warm", "--s")):
            pts = [(int(r.case.split()[0][2:]), r.median) for r in results
                   if r.impl == impl and r.case.endswith(kind) and r.status != "n/a"]
            if pts:
                ax.plot(*zip(*pts), style, color=f"C{k}", label=f"{impl} {kind}")
    ax.set(xscale="log", yscale="log", xlabel="N (operations)", ylabel="seconds, imports done to first result",
           title=f"W9: compile time against graph size ({label})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    cold = sorted(((int(r.case.split()[0][2:]), r) for r in results
                   if r.impl == "graphjit" and r.case.endswith("cold") and r.status != "n/a"), key=lambda p: p[0])
    if cold:
        labels = [str(n) for n, _ in cold]
        bottom = [0.0] * len(cold)
        for k, name in enumerate(PHASES + ("other",)):
            vals = []
            for n, r in cold:
                ph = r.extra.get("phases") or {}
                vals.append(r.median - sum(ph.get(p, 0.0) for p in PHASES) if name == "other" else ph.get(name, 0.0))
            bx.bar(labels, [v / n * 1e3 for v, (n, _) in zip(vals, cold)], bottom=bottom, label=name, color=f"C{k}")
            bottom = [b + v / n * 1e3 for b, v, (n, _) in zip(bottom, vals, cold)]
        bx.set(xlabel="N", ylabel="ms per operation", title="graphjit cold: phases per operation (flat = linear)")
        bx.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


if __name__ == "__main__":
    # `python benchmarks/w9_compile_growth.py --chart RUN.json [OUT.png]`: the chart of a run.py record;
    # `python benchmarks/w9_compile_growth.py [impl,...] [N,...]`: a direct run (one repeat, this process' cores)
    from common import QUICK

    if sys.argv[1:2] == ["--chart"]:
        print(chart(json.loads(Path(sys.argv[2]).read_text()), Path(sys.argv[3]) if len(sys.argv) > 3 else None))
        sys.exit(0)
    chosen = sys.argv[1].split(",") if len(sys.argv) > 1 else list(IMPLS)
    if len(sys.argv) > 2:
        SIZES = tuple(int(v) for v in sys.argv[2].split(","))
    t = time.perf_counter()
    res = run(QUICK, chosen)
    print(_chart(res, "direct run", HERE / "results" / "w9_compile_growth.png"),
          f"done in {time.perf_counter() - t:.0f} s")
