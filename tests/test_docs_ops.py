"""docs/ops.md's op tables are generated from the op classes and the LLVM backend's registry (tools/ops_doc.py):
they stay in sync, and every op class says which numpy function it follows."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ops_doc_is_current():
    # a child process: the generator imports every graphjit module, which the import-order tests must not see
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ops_doc.py"), "--check"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
