"""Run in a fresh process by test_memory_residue.py: the memory a compiled-and-dropped graph, or an unpickled
Function, leaves behind.

``graphs <rounds> <per_round>``: distinct graphs ``x + c_i`` made, called and dropped (a warm-up first, until the
compile worker is ready); ``unpickle <rounds> <per_round>``: a Function pickled, unpickled and called.  The
collector runs on its own in the loops (as in a user's process): gc.collect() only before each reading.  Prints
JSON {rss: [KB per item, each round], objects: [gc-tracked objects per item, each round], worker: pid or None}.
"""

import ctypes
import gc
import json
import os
import pickle
import sys

import numpy as np

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.jit import worker_client


def rss() -> int:
    """Resident bytes, after collecting garbage and returning free heap pages to the system."""
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def one_graph(c: float) -> None:
    x = gt.dvector("x")
    f = gj.function([x], x + c)
    assert f(np.ones(3))[0] == 1.0 + c


def main(kind: str, rounds: int, per_round: int) -> None:
    if kind == "graphs":
        counter = iter(range(10 ** 6))
        step = lambda: one_graph(next(counter) + 0.5)       # noqa: E731
        for _ in range(2 * worker_client.START_AFTER):
            step()
        worker_client.wait_until_ready(120.0)
        for _ in range(4):
            step()
    else:
        x, w = gt.dvector("x"), gj.shared(np.ones(3), name="w")
        f = gj.function([x], (x * w).sum() + 1.0, updates=[(w, w * 0.5)])

        def step() -> None:
            g = pickle.loads(pickle.dumps(f))
            g(np.ones(3))
        for _ in range(50):
            step()
    rss_rounds, object_rounds = [], []
    before, objects = rss(), len(gc.get_objects())
    for _ in range(rounds):
        for _ in range(per_round):
            step()
        after, now = rss(), len(gc.get_objects())
        rss_rounds.append((after - before) / per_round / 1024)
        object_rounds.append((now - objects) / per_round)
        before, objects = after, now
    print(json.dumps({"rss": rss_rounds, "objects": object_rounds, "worker": worker_client.info()["pid"]}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
