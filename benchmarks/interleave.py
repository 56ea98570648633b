"""Cross-check for a busy machine: several implementations of one workload timed in ONE process, in rounds.

`python benchmarks/interleave.py W3 --impls graphjit,jax,numpy [--rounds 21] [--threads 1|default]`

Each round times every implementation once (a few warm calls, then `--calls` calls), so load from other
processes falls on all of them alike; run.py runs each implementation in its own process one after the other,
which on a shared machine can put one implementation in a quiet minute and another in a busy one. The price:
libraries share this process (run.py avoids that), allocator state included: numpy's W3 float64 step ran in
8.1 ms next to an older graphjit that freed large arrays every call (glibc then stops mmap-ing big blocks) and
in 10-11.6 ms alone. Quote both. Every implementation is first checked against the numpy reference, as in
run.py. Prints per case the median per-call time and the ratio to graphjit's.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from run import WORKLOADS, bench_env  # noqa: E402


def _ensure_env(threads: str) -> None:
    """Re-exec with the thread setting's environment (BLAS reads it at load time) and, for 1, one core."""
    env = bench_env("1 thread" if threads == "1" else "default threads")
    if os.environ.get("GJ_INTERLEAVE_ENV") != threads:
        env["GJ_INTERLEAVE_ENV"] = threads
        if threads == "1":
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def _time_round(run, calls: int) -> float:
    for _ in range(3):
        run()
    t = time.perf_counter()
    for _ in range(calls):
        run()
    return (time.perf_counter() - t) / calls


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, build every case's implementations, time them in interleaved rounds."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=sorted(WORKLOADS))
    p.add_argument("--impls", required=True, help="comma-separated implementations, e.g. graphjit,jax,numpy")
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--calls", type=int, default=20, help="timed calls per implementation per round")
    p.add_argument("--threads", choices=["1", "default"], default="1")
    args = p.parse_args(argv)
    _ensure_env(args.threads)
    import numpy as np
    from common import Impl, fmt_time, matches
    module = __import__(WORKLOADS[args.workload])
    impls = args.impls.split(",")
    print(f"{args.workload}, {args.threads} thread(s), {args.rounds} rounds of {args.calls} calls, "
          f"cores {sorted(os.sched_getaffinity(0))}, load {os.getloadavg()[0]:.2f}")
    for case in module.cases(False, impls):
        want, runs = case.reference(), {}
        for name, build in case.impls.items():
            impl = build()
            impl = impl if isinstance(impl, Impl) else Impl(impl)
            out = impl.run()
            ok, why = matches((out, *impl.state()) if impl.state else out, want, case.rtol, case.atol)
            if not ok:
                print(f"  {case.name}: {name} MISMATCH ({why}), left out")
                continue
            runs[name] = impl.run
        times = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                times[name].append(_time_round(run, args.calls))
        med = {name: float(np.median(t)) for name, t in times.items()}
        base = med.get("graphjit")
        for name, m in med.items():
            ratio = f"  /graphjit {m / base:.2f}x" if base else ""
            print(f"  {case.name:<22} {name:<12} {fmt_time(m):>9}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
