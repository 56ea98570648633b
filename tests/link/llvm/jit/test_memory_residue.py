"""What a long-running process keeps per graph compiled and dropped, and per Function unpickled (issue 37).

Each measurement runs in a fresh process (residue_child.py): rounds of graphs made, called and dropped with the
collector running on its own, RSS and gc-tracked objects read after each round; the median of the rounds'
slopes is held to the bound (one noisy round on a shared machine does not decide).  Before issue 37: 80 KB of
llvmlite's pass-manager residue per fresh compile plus ~300 KB of compile garbage and the arenas it spread over
(cold), 8-13 KB per unpickled Function; now ~1 KB and ~0 KB (docs/threads.md).
"""

import json
import os
import statistics
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))


def _child(cache_dir, kind: str, rounds: int, per_round: int) -> dict:
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.join(ROOT, "src"))
    env.pop("GRAPHJIT_FLAGS", None)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "residue_child.py"), kind, str(rounds),
                           str(per_round)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.soak
def test_a_compiled_and_dropped_graph_leaves_at_most_20_kb_cold_8_kb_warm(tmp_path):
    cold = _child(tmp_path, "graphs", 5, 10)            # fresh compiles, through the compile worker
    assert cold["worker"] is not None
    assert statistics.median(cold["rss"]) <= 20, f"cold: KB per graph in each round {cold['rss']}"
    assert statistics.median(cold["objects"]) <= 1, f"cold: objects per graph {cold['objects']}"
    warm = _child(tmp_path, "graphs", 5, 10)            # the same graphs, from the disk cache
    assert warm["worker"] is None                       # nothing compiled fresh: no worker started
    assert statistics.median(warm["rss"]) <= 8, f"warm: KB per graph in each round {warm['rss']}"
    assert statistics.median(warm["objects"]) <= 1, f"warm: objects per graph {warm['objects']}"


@pytest.mark.soak
def test_an_unpickled_function_leaves_under_1_kb(tmp_path):
    out = _child(tmp_path, "unpickle", 5, 100)
    assert statistics.median(out["rss"]) < 1, f"KB per round trip in each round {out['rss']}"
    assert statistics.median(out["objects"]) <= 0.1, f"objects per round trip {out['objects']}"
