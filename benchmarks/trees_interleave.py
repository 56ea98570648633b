"""graphjit against itself: the W workloads of two checkouts, interleaved, to show a change kept its speed.

`python benchmarks/trees_interleave.py BASE NEW [--only W1,W2,W3,W4,W5,W9] [--rounds 3] [--quick]`

BASE and NEW are graphjit checkouts (a `git worktree add /tmp/base <commit>` and the working tree; the src layout
and the older flat one both work). Each round runs every workload once per tree, each in a fresh process of that
tree's own `benchmarks/worker.py`, pinned to one core with one thread; the trees alternate and their order flips
every round, so load from other processes falls on both alike. Prints per case the median over rounds of each
tree's median, and NEW / BASE (above 1: NEW is slower). Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from run import ONE_THREAD_ENV, UNSET, WORKLOADS  # noqa: E402


def _env() -> dict[str, str]:
    """One thread, no PYTHONPATH: each tree's worker puts its own graphjit first."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET and k != "PYTHONPATH"}
    env.update(ONE_THREAD_ENV)
    return env


def run_tree(tree: Path, module: str, quick: bool, core: int) -> dict[str, float]:
    """One worker of `tree` for one workload: case -> median seconds (cases that failed are left out)."""
    with tempfile.TemporaryDirectory(prefix="gj-trees-") as d:
        out = Path(d) / "out.json"
        cmd = ["taskset", "-c", str(core), sys.executable, str(tree / "benchmarks" / "worker.py"), "--module", module,
               "--impls", "graphjit", "--out", str(out)] + ["--quick"] * quick
        subprocess.run(cmd, env=_env(), cwd=d, capture_output=True, text=True, timeout=1800)
        data = json.loads(out.read_text()) if out.exists() else {"results": []}
    return {r["case"]: r["median"] for r in data["results"] if r["status"] == "ok" and r["median"]}


def _fmt(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--only", default="W1,W2,W3,W4,W5,W9")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="the workloads' quick settings (fewer, shorter repeats)")
    p.add_argument("--core", type=int, default=min(os.sched_getaffinity(0)))
    args = p.parse_args(argv)
    trees = {"base": args.base.resolve(), "new": args.new.resolve()}
    samples: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in range(args.rounds):
        order = ("base", "new") if r % 2 == 0 else ("new", "base")
        for w in args.only.split(","):
            for name in order:
                for case, median in run_tree(trees[name], WORKLOADS[w], args.quick, args.core).items():
                    samples.setdefault((w, case), {}).setdefault(name, []).append(median)
            print(f"round {r + 1}/{args.rounds} {w} done, load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"\n{'case':<34} {'base':>10} {'new':>10} {'new/base':>9}  (median over {args.rounds} rounds, one core)")
    for (w, case), by_tree in samples.items():
        if len(by_tree) < 2:
            print(f"{w + ' ' + case:<34} {'n/a':>10} {'n/a':>10}")
            continue
        b, n = statistics.median(by_tree["base"]), statistics.median(by_tree["new"])
        print(f"{w + ' ' + case:<34} {_fmt(b):>10} {_fmt(n):>10} {n / b:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
