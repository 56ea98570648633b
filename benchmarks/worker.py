"""One benchmark subprocess: one workload, some implementations, one thread setting; writes JSON results.

Started by run.py with the thread setting's environment and CPU affinity already in place. Results are
rewritten after every case, so a crash keeps what was measured before it.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]

import numpy  # noqa: E402,F401  (imported first, so threadpoolctl sees numpy's BLAS)

try:
    from threadpoolctl import threadpool_info  # noqa: E402
except ImportError:                              # not in every venv: the record then says so
    threadpool_info = None

from common import FULL, QUICK  # noqa: E402


def _pools() -> list[str]:
    if threadpool_info is None:
        return ["unknown (threadpoolctl not installed)"]
    return [f"{p['internal_api']} {p.get('architecture') or ''} x{p['num_threads']}".replace("  ", " ")
            for p in threadpool_info()]


def main() -> None:
    """Run the requested cases and write {"affinity", "blas", "results", "threadpools"} to --out."""
    p = argparse.ArgumentParser()
    p.add_argument("--module", required=True)
    p.add_argument("--impls", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = p.parse_args()
    settings = dataclasses.replace(QUICK if args.quick else FULL, clock=args.clock)
    impls = args.impls.split(",")
    out = Path(args.out)
    record = {"affinity": sorted(os.sched_getaffinity(0)), "blas": _pools(), "results": []}
    load_start = os.getloadavg()[0]

    def save(results: list) -> None:
        for r in results:  # 1-minute load average around the measurement: other processes disturb timings
            r.extra["loadavg"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
        record["results"] += [dataclasses.asdict(r) for r in results]
        record["threadpools"] = _pools()
        out.write_text(json.dumps(record, default=str))

    def log(line: str) -> None:
        print(line, flush=True)

    save([])
    module = importlib.import_module(args.module)
    if hasattr(module, "run"):
        save(module.run(settings, impls, log))
        return
    from common import run_case

    for case in module.cases(args.quick, impls):
        save(run_case(case, settings, log, verbose=args.verbose))


if __name__ == "__main__":
    main()
