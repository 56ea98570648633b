"""scipy's special-function kernels behind the lowerings (jit/special_library.py): published lazily, checked, and
re-established for an object loaded from the disk cache in a new process."""

import json
import os
import subprocess
import sys

import llvmlite.binding as llvm
import pytest

from graphjit.link.llvm.jit import special_library, symbols

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def run_child(cache_dir):
    env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(cache_dir), PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "special_child.py")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.soak
def test_a_warm_process_links_the_cached_object_to_scipys_kernels(tmp_path):
    cold = run_child(tmp_path)
    assert cold["ok"] and not cold["cache_hit"] and cold["fallback"] == 0
    warm = run_child(tmp_path)                     # nothing lowered: the providers publish the pointers
    assert warm["ok"] and warm["plan_hit"] and warm["cache_hit"], warm


def test_every_kernel_has_the_signature_graphjit_calls_and_a_provider():
    for name in special_library.FUNCTIONS:
        address = special_library.publish(name)
        assert address and llvm.address_of_symbol(special_library.symbol(name)) == address
        assert special_library.symbol(name) in symbols._PROVIDERS


def test_a_changed_signature_is_refused(monkeypatch):
    monkeypatch.setitem(special_library.FUNCTIONS, "gj_test_bad", ("gammaln", "float", ("float",)))
    with pytest.raises(ImportError, match="C signature"):
        special_library.publish("gj_test_bad")


def test_import_graphjit_and_its_backend_do_not_load_scipy():
    code = ("import sys, graphjit, graphjit.tensor, graphjit.link.llvm; "
            "print(sorted(m for m in sys.modules if m.startswith('scipy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")))
    assert out.stdout.strip() == "[]"
