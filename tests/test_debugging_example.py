"""examples/debugging_nan.py: NanGuardMode finds the 0/0 and its line; the fixed function trains and profiles."""

from __future__ import annotations

from tests.example_modules import load_example


def test_debugging_example():
    report = load_example("debugging_nan").main()
    first = report.splitlines()[0]
    assert first.startswith("NanGuardMode: NaN in the output of Elemwise{true_div")
    assert "debugging_nan.py:24" in report and "Input shapes: Elemwise{sub}.0: (64, 3)" in report
    assert "finite weights: True" in report and "Time in 20 calls" in report
