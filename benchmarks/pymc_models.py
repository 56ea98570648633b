"""PyMC's 13 model families (tests/pytensor_bridge/families.py) compiled by graphjit (mode "GRAPHJIT") against
PyTensor's C and NUMBA modes: compile time of the sampler's logp+dlogp function, cold (fresh caches) and warm
(the caches of a previous process), and the time of one logp+dlogp call as PyMC's NUTS makes it (the PyTensor
Function called with the raveled point: PyMC 5.28 sets ``trust_input`` on its ValueGradFunction wrapper, which
does not reach the PyTensor Function, so every call filters its argument) and with ``trust_input=True``. Each
measurement runs in a fresh process.

Run: ``taskset -c 1 python benchmarks/pymc_models.py [--models a,b] [--modes M,N] [--no-cold] [--sample] [--png PATH]``
(needs PyMC: ``pip install graphjit[pytensor]``). Prints a markdown table and writes the PNG (docs/pymc_models.png
by default) and the numbers to benchmarks/results/pymc_models.json. ``--sample`` adds a whole pm.sample of eight schools (1000 tune + 1000 draws, 4 chains, cores=1) with
GRAPHJIT and PyTensor's default mode, and how much of it the logp+dlogp calls take. Cold C compiles every C op of PyTensor afresh (minutes): ``--cold-c``.
"""

from __future__ import annotations

import os
import sys

import argparse
import compileall
import json
import pathlib
import statistics
import subprocess
import tempfile
import time
import timeit
import warnings
from typing import Any, Dict, List, Optional, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]
# Per model, the size of its data (observations; GP points): large enough that the work shows, small enough
# that PyTensor's numbers match the ranges of issue 36.
SIZES = {"eight_schools": 8, "linear": 100, "hierarchical_logistic": 200, "poisson": 100, "gamma": 100,
         "beta": 100, "student_t": 100, "normal_mixture": 100, "marginal_gp": 30, "latent_gp": 30,
         "stochastic_volatility": 100, "dirichlet_categorical": 100, "censored_switchpoint": 100}
MODES = ("GRAPHJIT", "NUMBA", "C")

from w5_compile import child_env  # noqa: E402  (benchmarks/ is the script's directory)


def worker(mode: str, name: str) -> Dict[str, float]:
    """In this process: compile the model's logp+dlogp with ``mode`` and time one call (microseconds)."""
    warnings.simplefilter("ignore")
    import numpy as np
    if mode == "GRAPHJIT":
        import graphjit.pytensor  # noqa: F401
    from pytensor_bridge.families import FAMILIES
    model = FAMILIES[name](SIZES[name])
    point = model.initial_point()
    start, cpu = time.perf_counter(), time.process_time()
    f = model.logp_dlogp_function(initial_point=point, ravel_inputs=True, mode=None if mode == "C" else mode)
    f.set_extra_values({})
    fn = f._pytensor_function
    x = 0.1 + np.zeros(fn.maker.fgraph.inputs[0].type.shape[0])
    fn(x)                                       # NUMBA compiles on the first call: it is part of compiling
    compile_s, compile_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    sampler = best_call_us(fn, x)
    fn.trust_input = True
    return {"compile_s": compile_s, "compile_cpu_s": compile_cpu_s, "call_us": sampler,
            "call_trusted_us": best_call_us(fn, x)}


def best_call_us(fn: Any, x: Any) -> float:
    """Microseconds of one ``fn(x)``: blocks of ~2 ms, the best of 40 (on a shared machine a longer block is more
    often preempted)."""
    number = 10
    while min(timeit.repeat(lambda: fn(x), number=number, repeat=3)) < 0.002:
        number *= 2
    return min(timeit.repeat(lambda: fn(x), number=number, repeat=40)) / number * 1e6


def run_worker(mode: str, name: str, cache: str) -> Dict[str, float]:
    """worker() in a fresh process whose PyTensor, numba and graphjit caches live under ``cache``."""
    # child_env: every cache under ``cache`` (PyTensor's base_compiledir, which holds its numba cache too) and
    # graphjit's modules byte-compiled as an installed package's are
    env = dict(child_env("pymc", cache), PYTHONPATH=os.pathsep.join([str(ROOT / "src"),
                                                                     os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, __file__, "--worker", mode, name], env=env, capture_output=True,
                         text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(names: List[str], cold: bool, cold_c: bool,
            modes: Sequence[str] = MODES) -> Dict[str, Dict[str, Dict[str, float]]]:
    """results[name][mode] = {compile_cold_s, compile_warm_s, call_us} (cold left out where not measured)."""
    results: Dict[str, Dict[str, Dict[str, float]]] = {}
    compileall.compile_dir(str(ROOT / "src" / "graphjit"), quiet=1)      # what pip does at install
    warm_c = tempfile.mkdtemp(prefix="pymc-bench-c-")
    for name in names:
        results[name] = {}
        for mode in modes:
            row: Dict[str, float] = {}
            cache = tempfile.mkdtemp(prefix=f"pymc-bench-{mode}-") if mode != "C" or cold_c else warm_c
            if cold and (mode != "C" or cold_c):
                first = run_worker(mode, name, cache)
                row["compile_cold_s"] = first.get("compile_s", float("nan"))
                row["compile_cold_cpu_s"] = first.get("compile_cpu_s", float("nan"))
                row.update({k: v for k, v in first.items() if k == "error"})
            elif mode == "C":
                run_worker(mode, name, cache)                  # fills the shared C cache
            warm = run_worker(mode, name, cache)
            row.update(compile_warm_s=warm.get("compile_s", float("nan")),
                       compile_warm_cpu_s=warm.get("compile_cpu_s", float("nan")),
                       call_us=warm.get("call_us", float("nan")),
                       call_trusted_us=warm.get("call_trusted_us", float("nan")))
            row.update({k: v for k, v in warm.items() if k == "error"})
            results[name][mode] = row
            print(f"  {name:24s} {mode:8s} {row}", file=sys.stderr, flush=True)
    return results


def table(results: Dict[str, Dict[str, Dict[str, float]]]) -> str:
    """The markdown table, with the medians and the ratios to PyTensor's best mode and to NUMBA."""
    nan = float("nan")
    lines = ["| model | sampler's call GRAPHJIT µs | NUMBA µs | C µs | ratio to best | compile cold GJ / NUMBA s "
             "| compile warm GJ / NUMBA / C s |", "| --- | --- | --- | --- | --- | --- | --- |"]
    ratios, cold_r, warm_r = [], [], []
    for name, row in results.items():
        gj, nb, c = row["GRAPHJIT"], row["NUMBA"], row["C"]
        best = min(t for t in (nb["call_us"], c["call_us"]) if t == t)     # a mode that failed is NaN
        ratios.append(gj["call_us"] / best)
        cold = f"{gj.get('compile_cold_s', float('nan')):.2f} / {nb.get('compile_cold_s', float('nan')):.2f}"
        if nb.get("compile_cold_s", float("nan")) == nb.get("compile_cold_s"):
            cold_r.append(gj["compile_cold_s"] / nb["compile_cold_s"])
        if nb["compile_warm_s"] == nb["compile_warm_s"]:
            warm_r.append(gj["compile_warm_s"] / nb["compile_warm_s"])
        lines.append(f"| {name} | {gj['call_us']:.2f} | {nb['call_us']:.2f} | {c['call_us']:.2f} | "
                     f"{ratios[-1]:.2f} | {cold} | {gj['compile_warm_s']:.2f} / {nb['compile_warm_s']:.2f} / "
                     f"{c['compile_warm_s']:.2f} |")
    lines.append(f"\nper call as PyMC's sampler calls, GRAPHJIT / PyTensor's best mode: median "
                 f"{statistics.median(ratios):.2f}, max {max(ratios):.2f}")
    trusted = [row["GRAPHJIT"]["call_trusted_us"] / min(t for t in (row["NUMBA"].get("call_trusted_us", nan),
                                                                    row["C"].get("call_trusted_us", nan)) if t == t)
               for row in results.values() if "call_trusted_us" in row["GRAPHJIT"]]
    if trusted:
        lines.append(f"per call with trust_input=True, GRAPHJIT / PyTensor's best mode: median "
                     f"{statistics.median(trusted):.2f}, max {max(trusted):.2f}")
    if cold_r:
        lines.append(f"compile cold, GRAPHJIT / NUMBA: median {statistics.median(cold_r):.3f}, "
                     f"max {max(cold_r):.3f}")
    lines.append(f"compile warm, GRAPHJIT / NUMBA: median {statistics.median(warm_r):.3f}, max {max(warm_r):.3f}")
    lines += cpu_ratios(results)
    return "\n".join(lines)


def cpu_ratios(results: Dict[str, Dict[str, Dict[str, float]]]) -> List[str]:
    """The compile ratios in CPU time (``time.process_time``: less inflated by other jobs on the machine)."""
    lines = []
    for which in ("cold", "warm"):
        key = f"compile_{which}_cpu_s"
        r = [row["GRAPHJIT"][key] / row["NUMBA"][key] for row in results.values()
             if row["NUMBA"].get(key, float("nan")) == row["NUMBA"].get(key) and key in row["GRAPHJIT"]]
        if r:
            lines.append(f"compile {which} in CPU time, GRAPHJIT / NUMBA: median {statistics.median(r):.3f}, "
                         f"max {max(r):.3f}")
    return lines


def plot(results: Dict[str, Dict[str, Dict[str, float]]], path: str) -> None:
    """Per-call and warm-compile bars per model and mode (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    names = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    for ax, key, title in ((axes[0], "call_us", "one logp+dlogp call (µs)"),
                           (axes[1], "compile_warm_s", "compile, warm caches (s)")):
        for i, mode in enumerate(MODES):
            ax.bar(np.arange(len(names)) + (i - 1) * 0.27, [results[n][mode][key] for n in names], 0.27,
                   label=mode)
        ax.set_yscale("log")
        ax.set_xticks(np.arange(len(names)), names, rotation=60, ha="right")
        ax.set_title(title)
        ax.legend()
    fig.suptitle("PyMC models: graphjit (mode GRAPHJIT) against PyTensor's NUMBA and C modes")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


SAMPLE_CODE = """
import json, sys, time, warnings
warnings.simplefilter('ignore')
sys.argv = ['x']
sys.path[:0] = [{examples!r}]
import pymc.step_methods.hmc.integration as integration
import pymc_eight_schools as ex
inside = [0.0, 0]
_init = integration.CpuLeapfrogIntegrator.__init__
def init(self, potential, logp_dlogp_func):
    # time every logp+dlogp call of the sampler's integrator (~0.1 us of timing per call)
    _init(self, potential, logp_dlogp_func)
    func, clock = self._logp_dlogp_func, time.perf_counter
    def timed(q, info):
        start = clock()
        out = func(q, info)
        inside[0] += clock() - start
        inside[1] += 1
        return out
    self._logp_dlogp_func = timed
integration.CpuLeapfrogIntegrator.__init__ = init
cpu = time.process_time()
post, seconds = ex.sample({mode}, 1000, 4)
print(json.dumps([seconds, time.process_time() - cpu, inside[0], inside[1], float(post['mu'].mean()),
                  float(post['tau'].mean())]))
"""


def sample_eight_schools() -> str:
    """pm.sample of eight schools with GRAPHJIT and with PyTensor's default mode, each in a fresh process: wall
    and CPU seconds of pm.sample, and the seconds and calls inside the sampler's logp+dlogp function."""
    lines = []
    for name, mode in (("GRAPHJIT", "'GRAPHJIT'"), ("default", "None")):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", SAMPLE_CODE.format(examples=str(ROOT / "examples"), mode=mode)],
                             capture_output=True, text=True, env=env)
        wall = time.perf_counter() - start
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip().splitlines()[-1])
        seconds, cpu, inside, calls, mu, tau = json.loads(out.stdout.strip().splitlines()[-1])
        lines.append((name, seconds, cpu, inside, calls, wall, mu, tau))
    text = ["| pm.sample eight schools | sample s | sample CPU s | in logp+dlogp s (calls) | rest s | "
            "process wall s | mean mu | mean tau |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    text += [f"| {m} | {s:.2f} | {c:.2f} | {i:.3f} ({n}) | {s - i:.2f} | {w:.2f} | {mu:.2f} | {tau:.2f} |"
             for m, s, c, i, n, w, mu, tau in lines]
    gj, default = lines
    text.append(f"\nspeed-up of pm.sample (default / GRAPHJIT): {default[1] / gj[1]:.2f}x wall, "
                f"{default[2] / gj[2]:.2f}x CPU; with a logp+dlogp of no cost at all it could be at most "
                f"{default[2] / (gj[2] - gj[3]):.2f}x CPU")
    return "\n".join(text)


def main(argv: Optional[List[str]] = None) -> None:
    """Measure, print the tables, write the PNG."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("MODE", "MODEL"), help=argparse.SUPPRESS)
    parser.add_argument("--models", default=",".join(SIZES))
    parser.add_argument("--no-cold", action="store_true")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="measure only these modes (prints the JSON: the table needs all three)")
    parser.add_argument("--cold-c", action="store_true")
    parser.add_argument("--sample", action="store_true")
    parser.add_argument("--png", default=str(ROOT / "docs" / "pymc_models.png"))
    parser.add_argument("--results", help="tabulate and plot a previous run's JSON instead of measuring")
    parser.add_argument("--sample-only", action="store_true", help="only the pm.sample comparison")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    if args.sample_only:
        print(sample_eight_schools())
        return
    if args.results:
        results = json.loads(pathlib.Path(args.results).read_text())
    else:
        modes = args.modes.split(",")
        results = measure(args.models.split(","), not args.no_cold, args.cold_c, modes)
        (ROOT / "benchmarks" / "results" / "pymc_models.json").write_text(json.dumps(results, indent=1))
        if set(modes) != set(MODES):
            print(json.dumps(results, indent=1))
            return
    print(table(results))
    plot(results, args.png)
    print(f"wrote {args.png}")
    if args.sample:
        print(sample_eight_schools())


if __name__ == "__main__":
    main()
