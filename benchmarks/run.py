"""Run the graphjit benchmark suite against its peers: `python benchmarks/run.py [--quick] [--only W1,W2]`.

Every (thread setting, workload, implementation) runs in its own subprocess (worker.py): thread counts are
read from the environment at import time, and libraries sharing a process (OpenBLAS, OpenMP, XLA thread
pools) disturb each other's timings. "1 thread": pinned to one core, every library's thread count at 1;
"default threads": the libraries' defaults.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.metadata as md
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import report  # noqa: E402
from common import Result  # noqa: E402

RESULTS = HERE / "results"
WORKLOADS = {"W1": "w1_elementwise", "W2": "w2_overhead", "W3": "w3_mlp", "W4": "w4_reductions", "W5": "w5_compile",
             "W6": "w6_scan", "W7": "w7_gp", "W8": "w8_eight_schools", "W9": "w9_compile_growth"}
SETTINGS = {"1": "1 thread", "default": "default threads"}
ONE_THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}
# Set on some machines for old OpenBLAS builds; they slow a current numpy, so benchmarks run without them.
UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
WORKER_TIMEOUT = 1200.0
PACKAGES = ("numpy", "numexpr", "numba", "llvmlite", "jax", "jaxlib", "pytensor", "matplotlib", "graphjit")


def bench_env(setting: str) -> dict[str, str]:
    """The environment of one thread setting's subprocess."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET and k not in ONE_THREAD_ENV}
    if setting == "1 thread":
        env.update(ONE_THREAD_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent / "src"), env.get("PYTHONPATH", "")]))
    return env


def _pin() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def metadata() -> dict[str, Any]:
    """Machine, versions and commit, for the JSON record."""
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": platform.python_version(), "cpu": cpu,
            "cores": os.cpu_count(), "commit": commit, "versions": versions, "unset_env": list(UNSET)}


def impl_names(module: Any) -> list[str]:
    """The implementations a workload module offers."""
    return list(getattr(module, "IMPLS", None) or module.BUILDERS)


def run_worker(setting: str, module: Any, impl: str, args: argparse.Namespace) -> dict[str, Any]:
    """One implementation of one workload in a fresh process; a crash or time-out becomes n/a entries."""
    with tempfile.TemporaryDirectory(prefix="gj-bench-") as d:
        out = Path(d) / "out.json"
        cmd = [sys.executable, str(HERE / "worker.py"), "--module", module.__name__, "--impls", impl,
               "--out", str(out), "--clock", args.clock] + ["--quick"] * args.quick + ["--verbose"] * args.verbose
        try:
            proc = subprocess.run(cmd, env=bench_env(setting), timeout=WORKER_TIMEOUT,
                                  preexec_fn=_pin if setting == "1 thread" else None)
            failure = f"worker exited with code {proc.returncode}" if proc.returncode else ""
        except subprocess.TimeoutExpired:
            failure = f"worker timed out after {WORKER_TIMEOUT:.0f} s"
        data = json.loads(out.read_text()) if out.exists() else {"results": []}
    for r in data["results"]:
        r["extra"]["threadpools"] = data.get("threadpools")
    done = {r["case"] for r in data["results"]}
    workload = next(k for k, v in WORKLOADS.items() if v == module.__name__)
    for case in module.case_names():
        if case not in done:
            reason = failure or "no result"
            data["results"].append(dataclasses.asdict(Result(workload, case, impl, "n/a", reason)))
            print(f"  {workload} {case:<22} {impl:<16} n/a ({reason})", flush=True)
    return data


def run_setting(setting: str, only: list[str], impls: set[str] | None, args: argparse.Namespace) -> dict:
    """Every selected workload and implementation under one thread setting, one process each."""
    record: dict[str, Any] = {"thread_env": {k: bench_env(setting).get(k) for k in ONE_THREAD_ENV},
                              "results": []}
    print(f"== {setting}", flush=True)
    for key in only:
        module = importlib.import_module(WORKLOADS[key])
        if setting not in getattr(module, "THREAD_SETTINGS", SETTINGS.values()):
            continue
        for impl in impl_names(module):
            if impls and impl not in impls:
                continue
            data = run_worker(setting, module, impl, args)
            if "blas" in data and "blas" not in record:
                record["affinity"], record["blas"] = data["affinity"], data["blas"]
                print(f"   cores {data['affinity']}, BLAS {', '.join(data['blas'])}", flush=True)
            record["results"] += data["results"]
    return record


def main(argv: list[str] | None = None) -> int:
    """Parse arguments; run as the orchestrator, or as one setting's worker."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads, e.g. W1,W2")
    p.add_argument("--quick", action="store_true", help="few, short repeats (a smoke run)")
    p.add_argument("--threads", choices=["1", "default", "both"], default="both")
    p.add_argument("--impls", default="", help="comma-separated implementations to keep (default: all)")
    p.add_argument("--out", default=str(RESULTS / "latest.json"))
    p.add_argument("--verbose", action="store_true", help="print tracebacks of failing implementations")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="time per call in wall time, or in the process's CPU time (steadier on a busy machine)")
    args = p.parse_args(argv)
    only = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = [w for w in only if w not in WORKLOADS]
    if unknown:
        p.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    impls = set(filter(None, args.impls.split(","))) or None

    chosen = list(SETTINGS.values()) if args.threads == "both" else [SETTINGS[args.threads]]
    record = {"meta": metadata() | {"quick": args.quick, "workloads": only}, "settings": {}}
    for setting in chosen:
        record["settings"][setting] = run_setting(setting, only, impls, args)
    for setting, data in record["settings"].items():
        print(report.table(setting, data["results"]))
    out = Path(args.out)
    report.write_json(out, record)
    try:
        report.write_chart(out.with_suffix(".png"), record)
        print(f"\nwrote {out} and {out.with_suffix('.png')}")
    except ImportError as exc:
        print(f"\nwrote {out}; no chart ({exc})")
    for key in only:                    # a workload's own chart of the whole run (W9: time against N)
        hook = getattr(importlib.import_module(WORKLOADS[key]), "chart", None)
        if hook is not None:
            print(f"wrote {hook(record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
