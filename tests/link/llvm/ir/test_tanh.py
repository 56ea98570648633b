"""graphjit's inline float64 tanh (link/llvm/ir/tanh.py): accuracy against numpy, special values, the table."""

import ctypes
import json
import os
import struct
import subprocess
import sys
import uuid

import numpy as np
import pytest
from llvmlite import ir

import graphjit as gj
import graphjit.tensor as gt
from graphjit.link.llvm.ir import tanh, tanh_table
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.modules import exported_name, new_module, symbol_prefix
from graphjit.link.llvm.jit.compiler import get_compiler

from tests.link.llvm.ir.test_fastmath import ulp_distance

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
DBL, I64 = ir.DoubleType(), ir.IntType(64)
MAX_ULP = 1                                   # against np.tanh (glibc's, itself 1 ulp off in ~20% of points)
N = 2_000_000                                 # points per range; 5 ranges + the grid: > 10**7 in all
RANGES = {
    "small path [0, LOW]": (-tanh_table.LOW, tanh_table.LOW),
    "[-1, 1]": (-1.0, 1.0),
    "[-4, 4]": (-4.0, 4.0),
    "table [-CAP, CAP]": (-tanh_table.CAP, tanh_table.CAP),
    "beyond [-40, 40]": (-40.0, 40.0),
}
SPECIAL = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -1e-310, 1e-300, -1e-300, 1e-20, -1e-9, np.inf,
           -np.inf, np.nan, -np.nan, 1e308, -1e308, 19.06, 19.0615, 19.07, 20.0, 710.0, -750.0, 0.625, 0.5, 1.0, -2.0]


def _map(vectorize: bool):
    """``f(x, out, n)``: out[i] = tanh(x[i]) by the inline tanh, in a scalar loop or the one LLVM may vectorise."""
    module = new_module(symbol_prefix(f"tanh_{uuid.uuid4().hex[:8]}"))
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [DBL.as_pointer(), DBL.as_pointer(), I64]),
                     exported_name(module, "f"))
    ctx = LowerContext(ir.IRBuilder(fn.append_basic_block("entry")))
    b = ctx.builder
    x, out, n = fn.args
    with ctx.for_range(n, vectorize=vectorize) as i:
        b.store(tanh.emit_tanh(b, b.load(b.gep(x, [i]))), b.gep(out, [i]))
    b.ret_void()
    lib = get_compiler().compile(module)
    f = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(lib.get_address("f"))

    def run(values):
        values = np.ascontiguousarray(values, dtype=np.float64)
        res = np.empty_like(values)
        f(values.ctypes.data, res.ctypes.data, values.size)
        return res
    run.library = lib                          # the code lives as long as its NativeLibrary
    return run


@pytest.fixture(scope="module")
def scalar_tanh():
    """The scalar form (what a scan step's recurrence runs)."""
    return _map(False)


def _bits(v: float) -> int:
    return struct.unpack("<q", struct.pack("<d", v))[0]


def _from_bits(i: int) -> float:
    return struct.unpack("<d", struct.pack("<q", i))[0]


def _row_edges() -> np.ndarray:
    """Every row's low end and the doubles next to it, on both sides of 0."""
    shift = 52 - tanh_table.BITS
    first = _bits(tanh_table.LOW) >> shift
    ends = [_from_bits((first + k) << shift) for k in range(len(tanh_table.ROWS) + 1)]
    edges = np.concatenate([np.array(ends), np.nextafter(ends, 0), np.nextafter(ends, np.inf)])
    return np.concatenate([edges, -edges])


@pytest.mark.parametrize("name", list(RANGES))
def test_within_one_ulp_of_numpy(scalar_tanh, name):
    x = np.random.default_rng(abs(hash(name)) % 2**32).uniform(*RANGES[name], N)
    assert ulp_distance(scalar_tanh(x), np.tanh(x)).max() <= MAX_ULP


def test_tiny_and_subnormal_inputs(scalar_tanh):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-1e-8, 1e-8, 100_000), rng.uniform(-1e-300, 1e-300, 100_000),
                        rng.uniform(-2.3e-308, 2.3e-308, 100_000), np.arange(-1000, 1000) * 5e-324])
    got = scalar_tanh(x)
    assert ulp_distance(got, np.tanh(x)).max() <= MAX_ULP
    assert np.array_equal(np.signbit(got), np.signbit(x))


def test_row_edges_and_boundaries(scalar_tanh):
    # each row's low end and its neighbours (where one polynomial hands over to the next), the small path's
    # threshold, CAP, and a fine grid across both
    around = [tanh_table.LOW, tanh_table.CAP, 0.625]
    grid = np.concatenate([np.linspace(v * (1 - 1e-9), v * (1 + 1e-9), 20_001) for v in around])
    x = np.concatenate([_row_edges(), grid, -grid])
    assert ulp_distance(scalar_tanh(x), np.tanh(x)).max() <= MAX_ULP


def test_special_values(scalar_tanh):
    x = np.array(SPECIAL)
    got, want = scalar_tanh(x), np.tanh(x)
    assert ulp_distance(got, want).max() <= MAX_ULP
    assert np.array_equal(np.isnan(got), np.isnan(x))
    assert np.array_equal(np.signbit(got[~np.isnan(x)]), np.signbit(x[~np.isnan(x)]))     # -0.0 stays -0.0
    assert got[x == np.inf].tolist() == [1.0] and got[x == -np.inf].tolist() == [-1.0]
    assert np.all(np.abs(got[np.isfinite(x)]) <= 1.0)


def test_vectorised_loop_gives_the_same_bits(scalar_tanh):
    # the inline tanh is meant for recurrences, but a loop LLVM vectorises must compute the same values
    x = np.concatenate([np.random.default_rng(2).uniform(-25, 25, 100_003), np.array(SPECIAL)])
    np.testing.assert_array_equal(_map(True)(x), scalar_tanh(x))


def test_table_layout():
    values = tanh.table_values()
    width = tanh_table.DEGREE + 1
    assert len(tanh_table.ROWS) <= tanh.ROWS and len(values) == tanh.ROWS * (width + 1)
    assert all(len(row) == width + 1 for row in tanh_table.ROWS)
    shift = 52 - tanh_table.BITS
    for k, row in enumerate(tanh_table.ROWS):
        x = _from_bits(((_bits(tanh_table.LOW) >> shift) + k) << shift)   # the row's low end: its index by bits
        r = (_bits(x) >> shift) % tanh.ROWS
        assert values[r * width:(r + 1) * width] == list(row[:width])
        assert values[tanh.ROWS * width + r] == row[width]
        # c0 (hi + lo) is tanh at the row's low end
        c0 = np.longdouble(row[0]) + np.longdouble(row[width])
        assert abs(c0 - np.tanh(np.longdouble(x))) <= 2e-19 * row[0]
    assert _from_bits((_bits(tanh_table.LOW) >> shift) + len(tanh_table.ROWS) << shift) == tanh_table.CAP


TABLE_ULP, SMALL_ULP = 0.25, 0.05      # the fit's worst errors are ~0.20 and ~0.014 ulp


def _worst_errors(table) -> tuple:
    """The worst error of a table's polynomials against mpmath's tanh, in ulps of the result: (rows, small path).

    The polynomials are evaluated exactly (mpmath at 50 digits, the coefficients as the doubles they are), so
    this measures the table, not the float64 evaluation (the ulp tests above measure that)."""
    import mpmath
    mpmath.mp.dps = 50
    shift = 52 - table.BITS
    worst = 0.0
    for k, row in enumerate(table.ROWS):
        lo = _from_bits(((_bits(table.LOW) >> shift) + k) << shift)
        hi = _from_bits(((_bits(table.LOW) >> shift) + k + 1) << shift)
        for f in np.linspace(0.0, 1.0, 9):
            t = mpmath.mpf(float(lo + f * (hi - lo))) - mpmath.mpf(lo)
            p = mpmath.mpf(row[0]) + mpmath.mpf(row[-1]) + t * sum(mpmath.mpf(q) * t ** j
                                                                   for j, q in enumerate(row[1:-1]))
            want = mpmath.tanh(mpmath.mpf(lo) + t)
            worst = max(worst, float(abs(p - want)) / np.spacing(float(want)))
    small = 0.0
    for a in np.linspace(table.LOW / 64, table.LOW, 64):
        a, u = mpmath.mpf(float(a)), mpmath.mpf(float(a)) ** 2
        p = a + a * u * sum(mpmath.mpf(c) * u ** j for j, c in enumerate(table.SMALL))
        want = mpmath.tanh(a)
        small = max(small, float(abs(p - want)) / np.spacing(float(want)))
    return worst, small


def test_checked_in_table_meets_its_error_bound():
    # what the table must satisfy, not its digits: a refit on other libraries differs in the last digits
    rows, small = _worst_errors(tanh_table)
    assert rows <= TABLE_ULP and small <= SMALL_ULP, (rows, small)


@pytest.mark.soak
@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="the fit needs x87 long double (64-bit significand)")
def test_generator_writes_a_table_within_the_bound(tmp_path):
    # tools/fit_tanh.py writes a table of the same layout that meets the same bound (its digits may differ)
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import fit_tanh
    finally:
        sys.path.pop(0)
    fit_tanh.OUT = tmp_path / "tanh_table.py"
    fit_tanh.main()
    written: dict = {}
    exec(compile(fit_tanh.OUT.read_text(), str(fit_tanh.OUT), "exec"), written)
    table = type("Table", (), written)
    assert (table.BITS, table.DEGREE, table.LOW, table.CAP, len(table.ROWS)) == \
        (tanh_table.BITS, tanh_table.DEGREE, tanh_table.LOW, tanh_table.CAP, len(tanh_table.ROWS))
    rows, small = _worst_errors(table)
    assert rows <= TABLE_ULP and small <= SMALL_ULP, (rows, small)


def test_rejects_other_types():
    b = ir.IRBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [ir.FloatType()]), "g")
                     .append_basic_block())
    with pytest.raises(TypeError, match="float64 only"):
        tanh.emit_tanh(b, b.function.args[0])


def _recurrence(w, x, s0):
    out, s = np.empty_like(x), s0
    for t in range(len(x)):
        s = np.tanh(w * s + x[t])
        out[t] = s
    return out


def test_scan_recurrence_takes_the_inline_tanh():
    w, x, s0 = gt.dscalar("w"), gt.dvector("x"), gt.dscalar("s0")
    out, _ = gj.scan(lambda xt, s, w_: gt.tanh(w_ * s + xt), sequences=x, outputs_info=s0, non_sequences=w)
    f = gj.function([w, x, s0], out, mode="FAST_RUN")
    assert tanh.TABLE_NAME in f.native.llvm_ir
    xv = np.random.default_rng(6).standard_normal(5000) * 3
    got, want = f(0.5, xv, 0.1), _recurrence(0.5, xv, 0.1)
    # one step's ulp can grow through w * s, so compare step by step from the same previous state
    step = np.tanh(0.5 * np.concatenate([[0.1], got[:-1]]) + xv)
    assert ulp_distance(got, step).max() <= MAX_ULP
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


CHILD = """
import json, sys
import numpy as np
import graphjit as gj, graphjit.tensor as gt
w, x, s0 = gt.dscalar("w"), gt.dvector("x"), gt.dscalar("s0")
out, _ = gj.scan(lambda xt, s, w_: gt.tanh(w_ * s + xt), sequences=x, outputs_info=s0, non_sequences=w)
f = gj.function([w, x, s0], out, mode="FAST_RUN")
xv = np.random.default_rng(7).standard_normal(3000) * 4
got = f(0.5, xv, 0.0)
prev = np.concatenate([[0.0], got[:-1]])
print(json.dumps({"cache_hit": f.native.cache_hit, "bits": got.tobytes().hex(),
                  "close": bool(np.allclose(got, np.tanh(0.5 * prev + xv), rtol=3e-16, atol=0))}))
"""


@pytest.mark.soak
def test_table_survives_the_disk_cache_in_a_new_process(tmp_path):
    # the table is a constant global of the object: a new process loading it from the disk cache must
    # relocate it (nothing else to re-establish) and compute the same bits
    def child():
        env = dict(os.environ, GRAPHJIT_CACHE_DIR=str(tmp_path), PYTHONPATH=os.path.join(ROOT, "src"))
        proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first, second = child(), child()
    assert not first["cache_hit"] and second["cache_hit"]
    assert first["close"] and second["close"] and first["bits"] == second["bits"]
