"""W5: compile time of the W3 training graph (float64) in a fresh process, imports done to first result.

Cold: an empty cache directory; warm: the same directory again. Each library's on-disk cache is pointed at
the temporary directory: GRAPHJIT_CACHE_DIR, JAX's persistent compilation cache, PyTensor's base_compiledir
(its C compiledir and the numba cache of its default NUMBA mode), NUMBA_CACHE_DIR.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from common import Result, Settings, fmt_result, quartiles, reason_of

HERE = Path(__file__).resolve().parent
IMPLS = ("pytensor", "pytensor-c", "jax", "graphjit")
THREAD_SETTINGS = ("1 thread",)  # compile time is measured once, pinned, as DESIGN.md's anchors are
TIMEOUT = 300.0

_CHILD = """
import sys, json, time
sys.path[:0] = [{here!r}, {root!r}]
import numpy as np
import peers, w3_mlp
t_import = time.perf_counter()
{imports}
t_import = time.perf_counter() - t_import
X, Y, params = w3_mlp.data("float64")
t0 = time.perf_counter()
impl = {build}
impl.run()
print(json.dumps({{"seconds": time.perf_counter() - t0, "import": t_import}}))
"""

_IMPORTS = {
    "jax": "peers.jax(); import jax.numpy",
    "pytensor": "import pytensor, pytensor.tensor; peers.pytensor_modes()",
    "pytensor-c": "import pytensor, pytensor.tensor; peers.pytensor_mode('pytensor-c')",
    "graphjit": "import graphjit, graphjit.tensor",
}


def child_env(impl: str, cache_dir: str) -> dict[str, str]:
    """The environment of one compile-time child: every cache pointed into `cache_dir`."""
    env = dict(os.environ)
    # an installed package has its bytecode compiled (pip does it); an editable checkout run with
    # PYTHONDONTWRITEBYTECODE would compile graphjit's modules from source in every child instead
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["GRAPHJIT_CACHE_DIR"] = os.path.join(cache_dir, "graphjit")
    env["JAX_COMPILATION_CACHE_DIR"] = os.path.join(cache_dir, "jax")
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    # base_compiledir holds both the C compiledir and PyTensor's numba cache (base_compiledir/numba)
    flags = [f for f in env.get("PYTENSOR_FLAGS", "").split(",") if f and "compiledir" not in f]
    env["PYTENSOR_FLAGS"] = ",".join(flags + [f"base_compiledir={os.path.join(cache_dir, 'pytensor')}"])
    env["NUMBA_CACHE_DIR"] = os.path.join(cache_dir, "numba")
    return env


def compile_seconds(impl: str, cache_dir: str) -> tuple[float, float]:
    """Run one fresh process that builds and first-calls the W3 step: (seconds from imports done to the first
    result, seconds of the library's imports)."""
    build = "w3_mlp.w3_jax(X, Y, params)" if impl == "jax" else f"w3_mlp.w3_theano_like({impl!r}, X, Y, params)"
    code = _CHILD.format(here=str(HERE), root=str(HERE.parent / "src"), imports=_IMPORTS[impl], build=build)
    proc = subprocess.run([sys.executable, "-c", code], env=child_env(impl, cache_dir), capture_output=True,
                          text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        raise RuntimeError(lines[-1][:160] if lines else f"exit code {proc.returncode}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["seconds"], out["import"]


def case_names() -> list[str]:
    """The names of the cases: from imports done to the first result (DESIGN.md's W5), then the same with the
    library's imports counted (what a user waits for; a backend loaded on first use moves time between them)."""
    return ["mlp f64 cold", "mlp f64 warm", "mlp f64 cold +imports", "mlp f64 warm +imports"]


def run(settings: Settings, impls: list[str], log: Callable[[str], None] = print) -> list[Result]:
    """Cold and warm compile times of the chosen implementations, `compile_repeat` fresh cache dirs each."""
    results = []
    for impl in impls:
        cold: list[float] = []
        warm: list[float] = []
        cold_total: list[float] = []
        warm_total: list[float] = []
        error = ""
        try:
            for _ in range(settings.compile_repeat):
                with tempfile.TemporaryDirectory(prefix="gj-w5-") as d:
                    for times, totals in ((cold, cold_total), (warm, warm_total)):
                        seconds, imports = compile_seconds(impl, d)
                        times.append(seconds)
                        totals.append(seconds + imports)
        except RuntimeError as exc:  # the child's own last error line
            error = str(exc)
        except Exception as exc:
            error = reason_of(exc)
        for case, times in zip(case_names(), (cold, warm, cold_total, warm_total)):
            res = Result("W5", case, impl, "n/a" if error else "ok", error)
            if not error:
                res.q1, res.median, res.q3 = quartiles(times)
                res.number, res.repeat = 1, len(times)
            log(f"  W5 {case:<22} {impl:<16} " + fmt_result(res))
            results.append(res)
    return results
