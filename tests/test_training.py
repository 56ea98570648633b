"""A short run of examples/mlp_digits.py: gradients, shared variables and updates really train."""

from __future__ import annotations

import numpy as np
import pytest

from example_modules import load_example

pytest.importorskip("sklearn")


@pytest.mark.parametrize("mode", [None, "PY"])
def test_mlp_digits_short_training(tmp_path, mode):
    mlp = load_example("mlp_digits")
    argv = ["--epochs", "6", "--subset", "600", "--no-progress", "--out", str(tmp_path / "loss.png")]
    history = mlp.main(argv + (["--mode", mode] if mode else []))
    losses = history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(np.isfinite(losses))
    assert history["accuracy"][-1] > 0.8   # chance is 0.1
    assert (tmp_path / "loss.png").stat().st_size > 0


def test_logistic_regression_example():
    lr = load_example("logistic_regression")
    assert lr.main(["--steps", "60"]) > 0.8
