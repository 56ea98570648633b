"""RSS left behind per compiled graph: N distinct graphs made, called and dropped in a fresh process.

`python benchmarks/memory_per_graph.py [N]` prints one table: graphs compiled fresh (empty disk cache) through
the compile worker, the same with config.compile_worker = False (LLVM in the process), the same graphs loaded
from the disk cache, a Function pickled and unpickled N times, and llvmlite's O3 pass pipeline alone on a tiny
module (what an in-process compile cannot avoid; see docs/threads.md). Each row runs in its own process, the
collector running on its own; RSS comes from /proc/self/statm after gc.collect() and malloc_trim. Nothing is
asserted (the bounds are tests/link/llvm/jit/test_memory_residue.py's).
"""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import tempfile
import time

_PASS_IR = """
define void @f(double* %a, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%j, %loop]
  %p = getelementptr double, double* %a, i64 %i
  %x = load double, double* %p
  %y = fmul double %x, %x
  store double %y, double* %p
  %j = add i64 %i, 1
  %c = icmp slt i64 %j, %n
  br i1 %c, label %loop, label %done
done:
  ret void
}
"""


def _rss() -> int:
    """Resident bytes of this process, after returning freed heap to the system."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _graphs(n: int) -> float:
    """KB left per graph `x + c_i` (distinct constants), each compiled, called once and dropped."""
    import numpy as np
    import graphjit as gj
    import graphjit.tensor as gt
    from graphjit.link.llvm.jit import worker_client

    def one(c: float) -> None:
        x = gt.dvector("x")
        gj.function([x], x + c)(np.ones(3))

    for i in range(50):
        one(-1.5 - i)                  # warm-up, not measured (the compile worker starts meanwhile)
    worker_client.wait_until_ready(120.0)
    gc.collect()
    before = _rss()
    for i in range(n):
        one(i + 0.5)
    gc.collect()
    return (_rss() - before) / n / 1024


def _unpickle(n: int) -> float:
    """KB left per pickle round trip of a Function with a shared variable and an update, called each time."""
    import pickle
    import numpy as np
    import graphjit as gj
    import graphjit.tensor as gt

    x, w = gt.dvector("x"), gj.shared(np.ones(3), name="w")
    f = gj.function([x], (x * w).sum() + 1.0, updates=[(w, w * 0.5)])
    for _ in range(50):
        pickle.loads(pickle.dumps(f))(np.ones(3))
    gc.collect()
    before = _rss()
    for _ in range(n):
        pickle.loads(pickle.dumps(f))(np.ones(3))
    gc.collect()
    return (_rss() - before) / n / 1024


def _passes(n: int) -> float:
    """KB left per run of llvmlite's O3 module pipeline on a tiny module (fresh PassBuilder each run)."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                      features=llvm.get_host_cpu_features().flatten(), opt=3)

    def run() -> None:
        mod = llvm.parse_assembly(_PASS_IR)
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
        pb.getModulePassManager().run(mod, pb)

    for _ in range(50):
        run()
    gc.collect()
    before = _rss()
    for _ in range(n):
        run()
    gc.collect()
    return (_rss() - before) / n / 1024


def _child(kind: str, n: int, cache_dir: str, flags: str = "") -> tuple[float, float]:
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=cache_dir, GRAPHJIT_FLAGS=flags)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(n)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1]), time.perf_counter() - t0


def main(argv: list[str]) -> None:
    """Run the three rows in child processes and print the table."""
    if argv[:1] == ["--child"]:
        kind, n = argv[1], int(argv[2])
        print({"graphs": _graphs, "unpickle": _unpickle, "passes": _passes}[kind](n))
        return
    n = int(argv[0]) if argv else 300
    with tempfile.TemporaryDirectory() as cache_dir, tempfile.TemporaryDirectory() as other:
        rows = [("graphs compiled fresh", *_child("graphs", n, cache_dir)),
                ("fresh, compile_worker=False", *_child("graphs", n, other, "compile_worker=False")),
                ("same graphs from the disk cache", *_child("graphs", n, cache_dir)),
                ("Function pickled and unpickled", *_child("unpickle", n, cache_dir)),
                ("llvmlite O3 pipeline alone", *_child("passes", n, cache_dir))]
    print(f"RSS left per graph (or round trip, or pipeline run), {n} of them (fresh process per row)")
    print(f"  {'case':34s} {'KB each':>9s} {'wall s':>7s}")
    for name, kb, wall in rows:
        print(f"  {name:34s} {kb:9.1f} {wall:7.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
