"""examples/gp_fit.py fits a GP's hyperparameters (without its plot), and its prediction is sensible."""

import numpy as np

from example_modules import load_example


def test_gp_fit_example_lowers_the_nll_and_recovers_the_noise():
    gp = load_example("gp_fit")
    theta, history = gp.main(["--no-plot", "--steps", "120"])
    assert history[-1] < history[0] - 10
    assert all(np.isfinite(history))
    assert 0.1 < np.exp(theta[2]) < 0.35           # the data's noise std is 0.2
    x, y = gp.data()
    _, predict = gp.build()
    mean, std = predict(x, y, x, theta)
    assert np.sqrt(np.mean((mean - y) ** 2)) < 0.3 and (std > 0).all()


def test_gp_fit_example_writes_its_plot(tmp_path):
    import pytest
    pytest.importorskip("matplotlib")
    gp = load_example("gp_fit")
    out = tmp_path / "fit.png"
    gp.main(["--steps", "5", "--out", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
