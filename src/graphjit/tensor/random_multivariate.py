"""The multivariate distributions: dirichlet, multinomial, multivariate_normal. Each parameter has core
dimensions (the last ``core_ndims[i]`` axes); the other axes are batch axes, broadcast together (or to ``size``,
the batch shape, as numpy's size). The sample is the batch shape followed by one core axis of length k."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from graphjit.graph.basic import Apply, Variable
from graphjit.tensor.basic import constant
from graphjit.tensor.elemwise import broadcast_static_shape
from graphjit.tensor.random import RandomVariable, _float_params, _size_static
from graphjit.tensor.shape import broadcast_shape_symbolic


class MultivariateRV(RandomVariable):
    """A draw whose parameters have core dimensions ``core_ndims`` and whose sample ends in one axis of length k."""

    core_ndims: Tuple[int, ...] = ()
    sample_kind = "f"

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        kind = np.dtype(self.dtype).kind
        if (kind != "f") if self.sample_kind == "f" else (kind not in "iu"):
            raise TypeError(f"{self}: dtype {self.dtype} is not a{' float' if self.sample_kind == 'f' else 'n integer'}"
                            " dtype")
        out = _float_params(self, params)
        for p, nd in zip(out, self.core_ndims):
            if p.ndim < nd:
                raise TypeError(f"{self}: a parameter needs at least {nd} dimension(s), got {p.describe()}")
        return out

    def core_length(self, shapes: Sequence[Tuple[Any, ...]]) -> Any:
        """k, from the parameters' shapes (static lengths or symbolic ones)."""
        return shapes[-1][-1]

    def static_shape(self, size: Optional[Variable], params: Sequence[Variable]) -> Tuple[Optional[int], ...]:
        k = self.core_length([p.type.shape for p in params])
        if size is not None:
            return _size_static(size) + (k,)
        batch = self._batch_shapes([p.type.shape for p in params], params)
        return broadcast_static_shape(batch, f"batch dimensions of {self}") + (k,)

    def _batch_shapes(self, shapes: Sequence[Tuple[Any, ...]], params: Sequence[Variable]) -> List[tuple]:
        ndim = max(p.ndim - nd for p, nd in zip(params, self.core_ndims))
        return [(1,) * (ndim - (p.ndim - nd)) + tuple(s[:p.ndim - nd])
                for p, nd, s in zip(params, self.core_ndims, shapes)]

    def infer_shape(self, fgraph: Any, node: Apply, shapes: list) -> list:
        n_size = 1 if self.has_size else 0
        params = node.inputs[1 + n_size:]
        k = self.core_length(shapes[1 + n_size:])
        if self.has_size:
            batch = super().infer_shape(fgraph, node, shapes)[1]
        else:
            padded = [tuple(constant(s, dtype="int64") if isinstance(s, (int, np.integer)) else s for s in b)
                      for b in self._batch_shapes(shapes[1:], params)]
            static = self._batch_shapes([p.type.shape for p in params], params)
            batch = tuple(broadcast_shape_symbolic(padded, static))
        return [None, tuple(batch) + (k,)]

    def draw(self, rng: np.random.Generator, size: Optional[Tuple[int, ...]], *params: Any) -> Any:
        params = [np.asarray(p) for p in params]
        if all(p.ndim == nd for p, nd in zip(params, self.core_ndims)):
            return self.draw_one(rng, size, *params)
        batch = size if size is not None else np.broadcast_shapes(
            *[p.shape[:p.ndim - nd] for p, nd in zip(params, self.core_ndims)])
        params = [np.broadcast_to(p, tuple(batch) + p.shape[p.ndim - nd:]) for p, nd in zip(params, self.core_ndims)]
        out = None
        for idx in np.ndindex(*batch):
            one = np.asarray(self.draw_one(rng, None, *[p[idx] for p in params]))
            if out is None:
                out = np.empty(tuple(batch) + one.shape, one.dtype)
            out[idx] = one
        if out is None:        # an empty batch
            out = np.empty(tuple(batch) + (self.core_length([p.shape for p in params]),))
        return out

    def draw_one(self, rng: np.random.Generator, size: Optional[Tuple[int, ...]], *params: Any) -> Any:
        """numpy's draw for parameters without batch dimensions."""
        raise NotImplementedError(f"{type(self).__name__}.draw_one")


class DirichletRV(MultivariateRV):
    """Dirichlet samples (vectors on the simplex) of concentrations alpha, last axis (Generator.dirichlet).

    Batched alpha draws one vector per batch element in C order (numpy's dirichlet takes a vector)."""

    name, n_params = "dirichlet", 1
    core_ndims = (1,)

    def draw_one(self, rng: np.random.Generator, size: Any, alpha: Any) -> Any:
        return rng.dirichlet(alpha, size)


class MultinomialRV(MultivariateRV):
    """Counts of n trials over the categories of probabilities pvals, last axis (Generator.multinomial)."""

    name, n_params = "multinomial", 2
    core_ndims = (0, 1)
    sample_kind = "i"

    def prepare_params(self, params: Sequence[Any]) -> List[Variable]:
        out = super().prepare_params(params)
        if np.dtype(out[0].dtype).kind not in "biu":
            raise TypeError(f"{self}: n must be an integer, got {out[0].describe()}")
        return out

    def draw(self, rng: np.random.Generator, size: Optional[Tuple[int, ...]], n: Any, pvals: Any) -> Any:
        return rng.multinomial(n, pvals, size)      # numpy broadcasts batched n and pvals itself


class MultivariateNormalRV(MultivariateRV):
    """Gaussian vectors of mean ``mean`` (last axis) and covariance cov (last two axes), drawn with numpy's
    ``method="cholesky"`` (Generator.multivariate_normal); batched parameters draw one vector per batch element."""

    name, n_params = "multivariate_normal", 2
    core_ndims = (1, 2)

    def core_length(self, shapes: Sequence[Tuple[Any, ...]]) -> Any:
        k = shapes[0][-1]
        return shapes[1][-1] if k is None else k

    def draw_one(self, rng: np.random.Generator, size: Any, mean: Any, cov: Any) -> Any:
        return rng.multivariate_normal(mean, cov, size, method="cholesky")


__all__ = ["MultivariateRV", "DirichletRV", "MultinomialRV", "MultivariateNormalRV"]
