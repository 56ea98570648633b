"""jit/lazy_ir.py: llvmlite.ir for the loader's modules, imported on first use and then read directly."""

import subprocess
import sys

from llvmlite import ir as real

from graphjit.link.llvm.jit.lazy_ir import ir


def test_it_is_llvmlite_ir_once_used():
    assert ir.Module is real.Module and ir.Function is real.Function
    assert isinstance(ir.IntType(32), real.Type)
    assert "IRBuilder" in ir.__dict__                # copied in: later reads need no __getattr__


def test_a_fresh_process_imports_llvmlite_ir_on_first_use_only():
    code = ("import sys\nfrom graphjit.link.llvm.jit import bulk, ir_prep, lapack_library, special_library\n"
            "from graphjit.link.llvm.ir import modules\n"
            "assert 'llvmlite.ir' not in sys.modules\n"
            "assert str(special_library.function_type(next(iter(special_library.FUNCTIONS)))).startswith(('double', 'float'))\n"
            "assert 'llvmlite.ir' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
