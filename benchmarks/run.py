"""Run the graphjit benchmark suite against its peers: `python benchmarks/run.py [--quick] [--only W1,W2]`.

Each thread setting ("1 thread": pinned to core 0 with every library's thread count at 1; "default threads")
runs in its own subprocess, since thread counts are read from the environment at import time.
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
RESULTS = HERE / "results"
WORKLOADS = {"W1": "w1_elementwise", "W2": "w2_overhead", "W3": "w3_mlp", "W4": "w4_reductions", "W5": "w5_compile"}
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
PACKAGES = ("numpy", "numexpr", "numba", "llvmlite", "jax", "jaxlib", "pytensor", "matplotlib", "graphjit")


def bench_env(setting: str) -> dict[str, str]:
    """The environment of one thread setting's subprocess."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET and k not in ONE_THREAD_ENV}
    if setting == "1 thread":
        env.update(ONE_THREAD_ENV)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), env.get("PYTHONPATH", "")]))
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


def worker(setting: str, only: list[str], quick: bool, impls: set[str] | None, out: Path) -> None:
    """Inside one thread setting's subprocess: run the selected workloads, write results as JSON."""
    if setting == "1 thread":
        _pin()
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import numpy  # noqa: F401  (so that threadpoolctl sees numpy's BLAS)
    from threadpoolctl import threadpool_info

    from common import FULL, QUICK, run_case

    settings = QUICK if quick else FULL
    record: dict[str, Any] = {"affinity": sorted(os.sched_getaffinity(0)), "blas": threadpool_info(),
                              "thread_env": {k: os.environ.get(k) for k in ONE_THREAD_ENV}, "results": []}
    print(f"== {setting}: cores {record['affinity']}, BLAS "
          + ", ".join(f"{b['internal_api']} {b.get('architecture')} x{b['num_threads']}" for b in record["blas"]),
          flush=True)
    for key in only:
        module = importlib.import_module(WORKLOADS[key])
        if hasattr(module, "run"):
            if setting in module.THREAD_SETTINGS:
                record["results"] += module.run(settings)
            continue
        for case in module.cases(quick):
            if impls:
                case.impls = {k: v for k, v in case.impls.items() if k in impls}
            record["results"] += run_case(case, settings, log=lambda s: print(s, flush=True))
    record["results"] = [dataclasses.asdict(r) for r in record["results"]]
    record["threadpools_at_end"] = threadpool_info()
    out.write_text(json.dumps(record, default=str))


def run_setting(setting: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one thread setting in a fresh subprocess; a crash becomes an empty, explained entry."""
    with tempfile.TemporaryDirectory(prefix="gj-bench-") as d:
        out = Path(d) / "out.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", setting, "--only", args.only,
               "--out", str(out)] + (["--quick"] if args.quick else []) + (["--impls", args.impls] if args.impls else [])
        proc = subprocess.run(cmd, env=bench_env(setting), preexec_fn=_pin if setting == "1 thread" else None)
        if proc.returncode != 0 or not out.exists():
            return {"error": f"worker exited with code {proc.returncode}", "results": []}
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    """Parse arguments; run as the orchestrator, or as one setting's worker."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads, e.g. W1,W2")
    p.add_argument("--quick", action="store_true", help="few, short repeats (a smoke run)")
    p.add_argument("--threads", choices=["1", "default", "both"], default="both")
    p.add_argument("--impls", default="", help="comma-separated implementations to keep (default: all)")
    p.add_argument("--out", default=str(RESULTS / "latest.json"))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    only = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = [w for w in only if w not in WORKLOADS]
    if unknown:
        p.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    impls = set(filter(None, args.impls.split(","))) or None
    if args.worker:
        worker(args.worker, only, args.quick, impls, Path(args.out))
        return 0

    sys.path.insert(0, str(HERE))
    import report

    chosen = list(SETTINGS.values()) if args.threads == "both" else [SETTINGS[args.threads]]
    record = {"meta": metadata() | {"quick": args.quick, "workloads": only}, "settings": {}}
    for setting in chosen:
        record["settings"][setting] = run_setting(setting, args)
    for setting, data in record["settings"].items():
        if data.get("error"):
            print(f"\n[{setting}] {data['error']}")
        print(report.table(setting, data["results"]))
    out = Path(args.out)
    report.write_json(out, record)
    try:
        report.write_chart(out.with_suffix(".png"), record)
        print(f"\nwrote {out} and {out.with_suffix('.png')}")
    except ImportError as exc:
        print(f"\nwrote {out}; no chart ({exc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
