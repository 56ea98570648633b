"""Lazy, uniform access to the peers (JAX, PyTensor) and to graphjit; a missing one raises ImportError."""
from __future__ import annotations

from types import ModuleType
from typing import Any


def jax() -> ModuleType:
    """The jax module, with float64 enabled (done once, before any array exists)."""
    import jax as _jax

    _jax.config.update("jax_enable_x64", True)
    return _jax


def jax_put(*arrays: Any) -> list:
    """Inputs placed on the JAX CPU device ahead of timing (JAX's native input form)."""
    j = jax()
    return [j.device_put(a) for a in arrays]


def pytensor_modes() -> dict[str, Any]:
    """PyTensor variants to measure: its default mode (NUMBA in 2.x/3.x) and its C backend when usable."""
    import pytensor
    from pytensor.compile.mode import Mode

    modes: dict[str, Any] = {"pytensor": None}
    if pytensor.config.cxx:
        modes["pytensor-c"] = Mode(linker="cvm", optimizer="fast_run")
    return modes


def pytensor_mode(variant: str) -> Any:
    """The Mode of one PyTensor variant; raises ImportError when that backend is unavailable here."""
    modes = pytensor_modes()
    if variant not in modes:
        raise ImportError(f"{variant}: no C++ compiler configured for PyTensor")
    return modes[variant]


class TheanoLike:
    """The Theano-style surface shared by graphjit and PyTensor: tensor module T, function, grad, shared.

    Attributes are looked up when used, so a graphjit still missing `grad` can already run W1.
    """

    def __init__(self, name: str, lib: ModuleType, T: ModuleType, mode: Any = None):
        self.name, self.lib, self.T, self.mode = name, lib, T, mode

    def function(self, inputs: list, outputs: Any, **kw: Any) -> Any:
        """Compile with this library (and mode, for PyTensor)."""
        if self.mode is not None:
            kw["mode"] = self.mode
        return self.lib.function(inputs, outputs, **kw)

    def grad(self, cost: Any, wrt: Any) -> Any:
        """Symbolic gradient."""
        return self.lib.grad(cost, wrt)

    def shared(self, value: Any, name: str) -> Any:
        """A shared variable holding `value`."""
        return self.lib.shared(value, name=name)


def graphjit() -> TheanoLike:
    """graphjit through its public API (DESIGN.md section 2)."""
    import graphjit as gj
    import graphjit.tensor as gt

    return TheanoLike("graphjit", gj, gt)


def pytensor(variant: str = "pytensor") -> TheanoLike:
    """PyTensor in one of its modes ("pytensor" default, "pytensor-c" C backend)."""
    import pytensor as pyt
    import pytensor.tensor as pt

    return TheanoLike(variant, pyt, pt, pytensor_mode(variant))


def theano_like(name: str) -> TheanoLike:
    """graphjit or a PyTensor variant, by implementation name."""
    return graphjit() if name == "graphjit" else pytensor(name)


def symbol(lib: TheanoLike, kind: str, name: str, dtype: str = "float64") -> Any:
    """A symbolic `kind` ("vector", "matrix") of float64 (dvector...) or float32 (fvector...)."""
    prefix = {"float64": "d", "float32": "f"}[dtype]
    return getattr(lib.T, prefix + kind)(name)
