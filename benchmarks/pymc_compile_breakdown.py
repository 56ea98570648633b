"""Where one compile of a PyMC model's logp+dlogp goes (the region benchmarks/pymc_models.py times), per stage,
cold (fresh caches) and warm (the caches of the previous process), each in a fresh process.

Stages: PyMC building the logp graph (``Model.logp``), its pre-gradient rewrite and the gradient
(``pytensor.grad``), raveling the inputs (every mode pays these four: "pymc"), PyTensor's rewrites under the
mode's query (``FunctionMaker.prepare_fgraph``), then for GRAPHJIT the translation and ``graphjit.function``
with its own compile phases (``f.maker.compile_stats``: rewrite, ir_build, optimize, codegen, cache...), and
the first call. "gc" (the cyclic collector's pauses) and "imports" (the modules first imported inside the
region, ``-X importtime`` self times summed) are parts of the stages they happen in; "other" is the region
minus the stages.

Run: ``taskset -c 1 python benchmarks/pymc_compile_breakdown.py [--models a,b] [--modes GRAPHJIT,NUMBA]
[--clock cpu] [--profile MODEL]``. ``--clock cpu``: the stages in CPU time (``time.process_time``, which other jobs
on the machine inflate far less; "total" stays wall time, "total_cpu" is the region's CPU time, and "imports" and
graphjit's own phases "gj.*" are wall times). ``--profile``: the cProfile of one cold and one warm GRAPHJIT
compile, top functions by cumulative time. Prints one markdown table per mode, milliseconds.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

from pymc_models import ROOT, SIZES, child_env

MARK = "--- compile region ---"
CLOCK = time.perf_counter       # the stages' clock; time.process_time with --clock cpu
PYMC_STAGES = ("logp", "pregrad", "grad", "ravel")


def _timed(stages: Dict[str, float], key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = CLOCK()
        try:
            return fn(*args, **kwargs)
        finally:
            stages[key] = stages.get(key, 0.0) + CLOCK() - t0
    return wrapper


def instrument(stages: Dict[str, float], mode: str) -> None:
    """Wrap the functions whose time is a stage (PyMC's, PyTensor's maker, graphjit's linker)."""
    import pytensor
    from pytensor.compile.function import types
    from pymc.model import core
    core.Model.logp = _timed(stages, "logp", core.Model.logp)
    core.rewrite_pregrad = _timed(stages, "pregrad", core.rewrite_pregrad)
    pytensor.grad = _timed(stages, "grad", pytensor.grad)
    core.join_nonshared_inputs = _timed(stages, "ravel", core.join_nonshared_inputs)
    types.FunctionMaker.prepare_fgraph = staticmethod(_timed(stages, "pt_rewrites",
                                                             types.FunctionMaker.prepare_fgraph))
    if mode != "GRAPHJIT":
        return
    from graphjit.pytensor import linker
    linker.translate_fgraph = _timed(stages, "translate", linker.translate_fgraph)
    function = linker.graphjit.function

    def graphjit_function(*args: Any, **kwargs: Any) -> Any:
        t0 = CLOCK()
        fn = function(*args, **kwargs)
        stages["graphjit"] = CLOCK() - t0
        for phase, seconds in fn.maker.compile_stats.items():
            if ":" not in phase and phase != "total":
                stages["gj." + phase] = seconds
        return fn
    linker.graphjit = type("graphjit_timed", (), {"function": staticmethod(graphjit_function)})


def collector_timer(stages: Dict[str, float]) -> Callable[[str, Dict[str, int]], None]:
    """A gc callback adding the collector's pauses to stages["gc"] (they land inside the other stages)."""
    started = [0.0]
    stages["gc"] = 0.0

    def on_gc(phase: str, info: Dict[str, int]) -> None:
        if phase == "start":
            started[0] = CLOCK()
        else:
            stages["gc"] += CLOCK() - started[0]
    gc.callbacks.append(on_gc)
    return on_gc


def worker(mode: str, name: str, profile: bool) -> Dict[str, float]:
    """In this process: one compile of the model with ``mode``, its stages in seconds."""
    import warnings
    warnings.simplefilter("ignore")
    import numpy as np
    if mode == "GRAPHJIT":
        import graphjit.pytensor  # noqa: F401
    from pytensor_bridge.families import FAMILIES
    model = FAMILIES[name](SIZES[name])
    point = model.initial_point()
    stages: Dict[str, float] = {}
    instrument(stages, mode)
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
    gc_time = collector_timer(stages)
    print(MARK, file=sys.stderr, flush=True)
    t0, c0 = time.perf_counter(), time.process_time()
    if prof:
        prof.enable()
    f = model.logp_dlogp_function(initial_point=point, ravel_inputs=True, mode=mode)
    f.set_extra_values({})
    fn = f._pytensor_function
    x = 0.1 + np.zeros(fn.maker.fgraph.inputs[0].type.shape[0])
    t1 = CLOCK()
    fn(x)
    stages["first_call"] = CLOCK() - t1
    if prof:
        prof.disable()
    stages["total"], stages["total_cpu"] = time.perf_counter() - t0, time.process_time() - c0
    stages["region"] = stages["total_cpu"] if CLOCK is time.process_time else stages["total"]
    gc.callbacks.remove(gc_time)
    print(MARK, file=sys.stderr, flush=True)
    if prof:
        import pstats
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(45)
    return stages


def import_seconds(stderr: str) -> float:
    """The summed self time of the imports -X importtime reports between the two marks."""
    parts = stderr.split(MARK)
    if len(parts) < 3:
        return float("nan")
    total = 0
    for line in parts[1].splitlines():
        if line.startswith("import time:") and "|" in line:
            field = line.split(":", 1)[1].split("|")[0].strip()
            if field.isdigit():
                total += int(field)
    return total * 1e-6


def run(mode: str, name: str, cache: str, profile: bool = False, clock: str = "wall") -> Dict[str, float]:
    """worker() in a fresh process with its caches under ``cache``."""
    env = dict(child_env("pymc", cache), PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"),
                                                                     os.environ.get("PYTHONPATH", "")]))
    args = [sys.executable, "-X", "importtime", __file__, "--worker", mode, name, "--clock", clock] + \
        (["--prof"] if profile else [])
    out = subprocess.run(args, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": float("nan")}
    if profile:
        print(out.stderr.split(MARK)[-1], file=sys.stderr)
    stages = json.loads(out.stdout.strip().splitlines()[-1])
    stages["imports"] = import_seconds(out.stderr)
    return stages


COLUMNS = ("total", "total_cpu", "pymc", "pt_rewrites", "translate", "graphjit", "gj.rewrite", "gj.ir_build",
           "gj.optimize", "gj.codegen", "gj.cache", "first_call", "imports", "gc", "other")


def columns(st: Dict[str, float]) -> Dict[str, float]:
    """One row: the stages as the table shows them (cache: graphjit's keys, lookups and stores)."""
    row = {k: st.get(k, 0.0) for k in COLUMNS}
    row["pymc"] = sum(st.get(k, 0.0) for k in PYMC_STAGES)
    row["gj.cache"] = sum(v for k, v in st.items() if k.startswith("gj.") and ("key" in k or "cache" in k))
    row["other"] = st["region"] - row["pymc"] - row["pt_rewrites"] - st.get("graphjit", 0.0) - \
        st.get("translate", 0.0) - st["first_call"] - (0.0 if "graphjit" in st else st.get("link", 0.0))
    return row


def table(mode: str, rows: Dict[str, Dict[str, Dict[str, float]]]) -> str:
    """The markdown table of one mode (ms)."""
    cols = [c for c in COLUMNS if mode == "GRAPHJIT" or not (c.startswith("gj.") or c in ("translate", "graphjit"))]
    lines = [f"| {mode} | " + " | ".join(cols) + " |", "| --- " * (len(cols) + 1) + "|"]
    for name, by in rows.items():
        for which, st in by.items():
            if "error" in st:
                lines.append(f"| {name} {which} | failed |")
                continue
            row = columns(st)
            lines.append(f"| {name} {which} | " + " | ".join(f"{row[c] * 1e3:.0f}" for c in cols) + " |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--prof", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--models", default=",".join(SIZES))
    parser.add_argument("--modes", default="GRAPHJIT")
    parser.add_argument("--profile", metavar="MODEL")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="the stages' clock (cpu: time.process_time, less inflated on a busy machine)")
    args = parser.parse_args(argv)
    if args.worker:
        global CLOCK
        CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
        print(json.dumps(worker(*args.worker, args.prof)))
        return
    if args.profile:
        cache = tempfile.mkdtemp(prefix="pymc-breakdown-")
        for which in ("cold", "warm"):
            print(f"== {args.profile} GRAPHJIT {which}", file=sys.stderr)
            run("GRAPHJIT", args.profile, cache, profile=True)
        return
    import compileall
    compileall.compile_dir(str(ROOT / "src" / "graphjit"), quiet=1)
    for mode in args.modes.split(","):
        rows: Dict[str, Dict[str, Dict[str, float]]] = {}
        for name in args.models.split(","):
            cache = tempfile.mkdtemp(prefix=f"pymc-breakdown-{mode}-")
            rows[name] = {which: run(mode, name, cache, clock=args.clock) for which in ("cold", "warm")}
            print(f"  {name} {mode} done", file=sys.stderr, flush=True)
        print(table(mode, rows))
        print()


if __name__ == "__main__":
    main()
