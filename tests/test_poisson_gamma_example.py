"""examples/poisson_gamma_model.py: its log-densities are scipy.stats', its fits recover the parameters; the
python blocks of docs/special.md run."""

import pathlib
import re

import numpy as np
import scipy.stats as st

import graphjit as gj
import graphjit.tensor as gt
from example_modules import load_example

model = load_example("poisson_gamma_model")
DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def test_log_densities_are_scipy_stats():
    x, a, b = gt.dvector("x"), gt.dscalar("a"), gt.dscalar("b")
    f = gj.function([x, a, b], [model.poisson_logpmf(x, a), model.gamma_logpdf(x, a, b), model.beta_logpdf(x, a, b)])
    counts, values, shares = np.array([0.0, 1.0, 7.0]), np.array([0.3, 2.0, 9.5]), np.array([0.01, 0.5, 0.97])
    np.testing.assert_allclose(f(counts, 2.5, 1.0)[0], st.poisson.logpmf(counts, 2.5), rtol=1e-12)
    np.testing.assert_allclose(f(values, 2.5, 1.5)[1], st.gamma.logpdf(values, 2.5, scale=1 / 1.5), rtol=1e-12)
    np.testing.assert_allclose(f(shares, 2.5, 1.5)[2], st.beta.logpdf(shares, 2.5, 1.5), rtol=1e-12)
    assert f.native.fallback_nodes == []


def test_fits_recover_the_parameters(capsys):
    fits = model.main(["--steps", "2000"])
    np.testing.assert_allclose(fits["poisson"], [3.5], rtol=0.05)
    np.testing.assert_allclose(fits["gamma"], [2.0, 1.5], rtol=0.1)
    np.testing.assert_allclose(fits["beta"], [2.0, 5.0], rtol=0.1)
    assert "fitted" in capsys.readouterr().out


def test_docs_special_blocks_run():
    text = (DOCS / "special.md").read_text()
    blocks = re.findall(r"(<!-- no-run -->\n)?```python\n(.*?)```", text, flags=re.S)
    assert blocks
    namespace: dict = {}
    for skip, code in blocks:
        if not skip:
            exec(compile(code, "docs/special.md", "exec"), namespace)
