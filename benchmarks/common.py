"""Shared pieces of the benchmark suite: cases, implementations, timing, verification."""
from __future__ import annotations

import statistics
import time
import timeit
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass
class Impl:
    """A ready-to-time implementation: `run()` does one call; `state()` adds what it mutated (for checks).

    `stmt` (a timeit statement and its globals), when given, is what gets timed instead of `run`: the bare call,
    without the ~50-100 ns of calling `run` itself (it matters for W2 only).
    """

    run: Callable[[], Any]
    state: Callable[[], tuple] | None = None
    stmt: tuple[str, dict] | None = None


Builder = Callable[[], "Impl | Callable[[], Any]"]


@dataclass
class Case:
    """One measured problem of a workload: a numpy reference and the builders of every implementation."""

    workload: str
    name: str
    reference: Callable[[], Any]
    impls: dict[str, Builder]
    rtol: float = 1e-6
    atol: float = 1e-9


@dataclass
class Result:
    """What one implementation did on one case, in seconds per call."""

    workload: str
    case: str
    impl: str
    status: str  # "ok", "mismatch" or "n/a"
    reason: str = ""
    median: float | None = None
    q1: float | None = None
    q3: float | None = None
    number: int = 0
    repeat: int = 0
    extra: dict = field(default_factory=dict)


@dataclass
class Settings:
    """How hard to measure: repeats per implementation and the minimum time of one repeat."""

    repeat: int = 7
    min_time: float = 0.1
    max_total: float = 6.0  # seconds spent timing one implementation, roughly
    compile_repeat: int = 3  # W5: fresh processes per cold/warm measurement
    clock: str = "wall"  # "cpu": the process's CPU time (time.process_time), steadier on a loaded machine


QUICK = Settings(repeat=3, min_time=0.02, max_total=1.5, compile_repeat=1)
FULL = Settings()


def reason_of(exc: BaseException) -> str:
    """A one-line reason for an n/a entry."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {msg}"[:160]


def to_arrays(value: Any) -> list[np.ndarray]:
    """Flatten a result (array, scalar, tuple of them, JAX arrays) into numpy arrays."""
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in to_arrays(v)]
    return [np.asarray(value)]


def matches(got: Any, want: Any, rtol: float, atol: float) -> tuple[bool, str]:
    """Compare a result with the numpy reference; returns (ok, why not)."""
    g, w = to_arrays(got), to_arrays(want)
    if len(g) != len(w):
        return False, f"{len(g)} outputs, expected {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        if a.shape != b.shape:
            return False, f"output {i}: shape {a.shape}, expected {b.shape}"
        if not np.allclose(a, b, rtol=rtol, atol=atol):
            err = float(np.max(np.abs(a.astype(np.float64) - b)))
            return False, f"output {i}: max abs error {err:.3g}"
    return True, ""


def measure(run: Callable[[], Any], settings: Settings,
            stmt: tuple[str, dict] | None = None) -> tuple[list[float], int]:
    """Per-call times of `repeat` repeats (gc off, as timeit), each at least `min_time` long."""
    clock = time.process_time if settings.clock == "cpu" else timeit.default_timer
    timer = timeit.Timer(stmt[0], globals=stmt[1], timer=clock) if stmt else timeit.Timer(run, timer=clock)
    one = min(timer.repeat(repeat=2, number=1))  # warm-up excluded: the first calls are not kept
    number = max(1, int(settings.min_time / max(one, 1e-9)))
    repeat = settings.repeat
    if one * number * repeat > settings.max_total:
        repeat = max(3, min(repeat, int(settings.max_total / max(one * number, 1e-9))))
    return [t / number for t in timer.repeat(repeat=repeat, number=number)], number


def quartiles(times: list[float]) -> tuple[float, float, float]:
    """(q1, median, q3) of the per-call times."""
    if len(times) < 2:
        return times[0], times[0], times[0]
    q1, med, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return q1, med, q3


def run_case(case: Case, settings: Settings, log: Callable[[str], None] = print,
             verbose: bool = False) -> list[Result]:
    """Build, verify against numpy, then time every implementation of a case; failures become n/a."""
    want = case.reference()
    results = []
    for name, build in case.impls.items():
        res = Result(case.workload, case.name, name, "n/a")
        try:
            impl = build()
            impl = impl if isinstance(impl, Impl) else Impl(impl)
            out = impl.run()  # first call: compiles, and is checked
            got = (out, *impl.state()) if impl.state else out
            ok, why = matches(got, want, case.rtol, case.atol)
            res.status, res.reason = ("ok", "") if ok else ("mismatch", why)
            times, res.number = measure(impl.run, settings, impl.stmt)
            res.repeat = len(times)
            res.q1, res.median, res.q3 = quartiles(times)
        except Exception as exc:  # a peer or graphjit failing is reported, never fatal
            res.status, res.reason = "n/a", reason_of(exc)
            if verbose:
                traceback.print_exc()
        log(f"  {case.workload} {case.name:<22} {name:<16} " + fmt_result(res))
        results.append(res)
    return results


def fmt_time(t: float | None) -> str:
    """Seconds as a short human string."""
    if t is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def fmt_result(res: Result) -> str:
    """The median, or n/a with its reason, or the median flagged as a mismatch."""
    if res.status == "n/a":
        return f"n/a ({res.reason})"
    text = fmt_time(res.median)
    return text if res.status == "ok" else f"{text} MISMATCH ({res.reason})"
