"""ElementwiseRV: the base of the draws numpy makes element by element from real parameters broadcast to the
sample (the continuous and discrete distributions), and the pathwise gradients they share."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Variable
from graphjit.tensor.math import mul, sub, true_div
from graphjit.tensor.random import RandomVariable, _float_params, _to_param


class ElementwiseRV(RandomVariable):
    """A draw by numpy's Generator method named ``name``: ``getattr(rng, name)(*params, size=size)``.

    ``sample_kind`` is the dtype kind of the sample ("f": float, "i": integer); ``int_params`` lists the
    parameters numpy takes as integers (the others are real numbers it converts to double).
    """

    sample_kind = "f"
    int_params: Tuple[int, ...] = ()

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        kind = np.dtype(self.dtype).kind
        if (kind != "f") if self.sample_kind == "f" else (kind not in "iu"):
            what = "a float" if self.sample_kind == "f" else "an integer"
            raise TypeError(f"{self}: dtype must be {what} dtype, got {self.dtype}")
        out = _float_params(self, params)
        for i in self.int_params:
            if np.dtype(out[i].dtype).kind not in "biu":
                raise TypeError(f"{self}: parameter {i + 1} must be an integer, got {out[i].describe()}")
        return out

    def draw(self, rng: np.random.Generator, size: Optional[Tuple[int, ...]], *params: Any) -> Any:
        return getattr(rng, self.name)(*params, size=size)


def loc_scale_grads(params: List[Variable], sample: Variable, gz: Variable) -> List[Variable]:
    """sample = loc + scale * z with z fixed by the generator: d/dloc = 1, d/dscale = z = (sample - loc) / scale."""
    loc, scale = params
    return [_to_param(gz, loc), _to_param(mul(gz, true_div(sub(sample, loc), scale)), scale)]


def scale_grad(scale: Variable, sample: Variable, gz: Variable) -> Variable:
    """sample = scale * z with z fixed: d/dscale = sample / scale."""
    return _to_param(mul(gz, true_div(sample, scale)), scale)


class StandardDrawRV(RandomVariable):
    """A parameterless draw with numpy's dtype keyword (random, standard_normal): float32 samples come from
    numpy's float C draw (``<c name>_f``), not from the double one cast."""

    c_names: Tuple[str, str] = ("", "")    # numpy's C draw for float64, for float32

    def __init__(self, dtype: str = "floatX", has_size: bool = False, inplace: bool = False):
        super().__init__(dtype, has_size, inplace)
        if self.dtype not in ("float32", "float64"):
            raise TypeError(f"{type(self).__name__}: dtype must be float32 or float64 (numpy's {self.name}), "
                            f"got {self.dtype}")
        # per instance: the C function depends on the dtype (numpy's _f draws for float32)
        self.c_draw = ((self.c_names[1], "float", ()) if self.dtype == "float32"
                       else (self.c_names[0], "double", ()))

    def draw(self, rng: np.random.Generator, size: Optional[Tuple[int, ...]], *params: Any) -> Any:
        return getattr(rng, self.name)(size=size, dtype=self.dtype)


class RandomRV(StandardDrawRV):
    """Floats uniform on [0, 1) (Generator.random)."""

    name = "random"
    c_names = ("random_standard_uniform", "random_standard_uniform_f")


class StandardNormalRV(StandardDrawRV):
    """Standard Gaussian samples (Generator.standard_normal)."""

    name = "standard_normal"
    c_names = ("random_standard_normal", "random_standard_normal_f")


__all__ = ["ElementwiseRV", "StandardDrawRV", "RandomRV", "StandardNormalRV"]
