"""benchmarks/w7_gp.py: graphjit's implementation agrees with the numpy/scipy reference (value and hand-written
gradient), which itself agrees with finite differences; small n."""

import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


def _w7():
    sys.path.insert(0, str(BENCH))
    try:
        import w7_gp
    finally:
        sys.path.remove(str(BENCH))
    return w7_gp


def test_w7_graphjit_matches_the_reference():
    w7 = _w7()
    x, y, theta = w7.data(30)
    want_value, want_grad = w7.nll_numpy(x, y, theta)
    value, grad = w7.w7_theano_like("graphjit", x, y, theta)()
    np.testing.assert_allclose(value, want_value, rtol=1e-10)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-8, atol=1e-10)
    eps = 1e-6
    numeric = [(w7.nll_numpy(x, y, theta + eps * e)[0] - w7.nll_numpy(x, y, theta - eps * e)[0]) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(want_grad, numeric, rtol=1e-5, atol=1e-7)
