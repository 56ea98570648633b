"""A short run of examples/mlp_digits.py: gradients, shared variables and updates really train."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

pytest.importorskip("sklearn")

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mode", [None, "PY"])
def test_mlp_digits_short_training(tmp_path, mode):
    mlp = _load("mlp_digits")
    argv = ["--epochs", "6", "--subset", "600", "--no-progress", "--out", str(tmp_path / "loss.png")]
    history = mlp.main(argv + (["--mode", mode] if mode else []))
    losses = history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(np.isfinite(losses))
    assert history["accuracy"][-1] > 0.8   # chance is 0.1
    assert (tmp_path / "loss.png").stat().st_size > 0


def test_logistic_regression_example():
    lr = _load("logistic_regression")
    assert lr.main(["--steps", "60"]) > 0.8
