"""PyMC models of the 13 families compile unchanged with mode="GRAPHJIT": values and gradients equal
PyTensor's default mode to 1e-8 relative at random points, all native."""

import numpy as np
import pymc as pm
import pytest
from pytensor.compile.mode import get_default_mode

import graphjit.pytensor  # noqa: F401  (registers the mode)
from graphjit.pytensor.linker import GraphjitLinker
from pytensor_bridge.families import FAMILIES

REFERENCE = get_default_mode()
# PyTensor's C mode warns when it finds no BLAS to link (pip installs); the reference values do not change.
pytestmark = pytest.mark.filterwarnings("ignore:PyTensor could not link to a BLAS installation:UserWarning")


def random_points(fn, count=3, seed=0):
    """Points of the raveled value space around the origin."""
    size = fn.maker.fgraph.inputs[0].type.shape[0]
    rng = np.random.default_rng(seed)
    return [0.5 * rng.normal(size=size) for _ in range(count)]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_logp_and_gradient_equal_pytensor(family):
    model = FAMILIES[family]()
    ours = model.logp_dlogp_function(mode="GRAPHJIT", ravel_inputs=True)
    ref = model.logp_dlogp_function(mode=REFERENCE, ravel_inputs=True)
    for f in (ours, ref):
        f.set_extra_values({})
    assert ours._pytensor_function.vm.jit_fn.native.fallback_nodes == []
    for x in random_points(ours._pytensor_function):
        (value, grad), (ref_value, ref_grad) = ours(x), ref(x)
        np.testing.assert_allclose(value, ref_value, rtol=1e-8)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-12 * np.abs(ref_grad).max())


def test_compile_logp_and_dlogp_take_the_mode():
    model = FAMILIES["eight_schools"]()
    point = model.initial_point()
    point["mu"] = np.array(1.5)
    for compile_name in ("compile_logp", "compile_dlogp"):
        ours = getattr(model, compile_name)(mode="GRAPHJIT")
        ref = getattr(model, compile_name)(mode=REFERENCE)
        want = ref(point)
        np.testing.assert_allclose(ours(point), want, rtol=1e-8, atol=1e-12 * np.abs(want).max())
        assert isinstance(ours.f.maker.linker, GraphjitLinker)


def test_pm_sample_runs_with_the_mode():
    with FAMILIES["eight_schools"]():
        idata = pm.sample(draws=60, tune=60, chains=1, cores=1, random_seed=3, progressbar=False,
                          compile_kwargs={"mode": "GRAPHJIT"})
    assert idata.posterior["theta_t"].shape == (1, 60, 8)
    assert np.isfinite(idata.sample_stats["lp"]).all()
