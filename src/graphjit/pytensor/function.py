"""The PyTensor Function of the GRAPHJIT mode: its call goes straight to graphjit's native function.

PyTensor's ``Function.__call__`` spends ~0.6 µs per call in Python around the work (filling and clearing input
storage cells, updates, output unpacking), more than graphjit's whole call for a small model. A GRAPHJIT function
with plain positional ndarray arguments skips that: the arguments go to graphjit's native call (which checks
them itself), the update outputs go to their shared variables' storage, and the outputs come back as PyTensor
returns them. Anything else (keyword arguments, ``output_subset``, profiling, inputs with default values,
arguments PyTensor would convert) takes PyTensor's own ``__call__``.

PyMC compiles through ``Mode(linker=mode.linker, optimizer=...)``, a new plain Mode, so the FunctionMaker cannot
ride on a Mode subclass: ``install()`` gives PyTensor's Mode a ``function_maker`` property (which PyTensor's
``orig_function`` reads) that answers only for a mode whose linker is graphjit's.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
from pytensor.compile.function.types import Function, FunctionMaker, _pickle_Function
from pytensor.compile.mode import Mode

from graphjit.pytensor.linker import GraphjitLinker

_ndarray = np.ndarray


def _arg_check(variable: Any) -> Tuple[np.dtype, int, Optional[Tuple[int, ...]]]:
    """(dtype, ndim, static shape or None) of an explicit input: an ndarray matching them needs no conversion."""
    vtype = variable.type
    shape = getattr(vtype, "shape", None)
    static = tuple(shape) if shape is not None and all(s is not None for s in shape) else None
    return np.dtype(vtype.dtype), vtype.ndim, static


def _fits(arg: Any, check: Tuple[np.dtype, int, Optional[Tuple[int, ...]]]) -> bool:
    """Whether PyTensor's filter would pass ``arg`` through unchanged (an ndarray of the type's dtype and shape)."""
    dtype, ndim, static = check
    if type(arg) is not _ndarray or (arg.dtype is not dtype and arg.dtype != dtype):
        return False
    return arg.shape == static if static is not None else arg.ndim == ndim


class GraphjitFunction(Function):
    """PyTensor's Function, with a direct call path into graphjit's native function for plain arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._native = self._native_plan()

    def _native_plan(self) -> Optional[Tuple[Callable[..., Any], list, list, list]]:
        """(native call, explicit-input checks, implicit storage cells, update cells), or None when this
        function must always take PyTensor's call (another linker, inputs with defaults, aliasing groups)."""
        native = getattr(self.vm, "native_call", None)
        if native is None or self.has_defaults or self._potential_aliased_input_groups or self.output_keys:
            return None
        explicit = [c for c in self.input_storage if not c.implicit]
        implicit = [c for c in self.input_storage if c.implicit]
        # positional arguments fill the explicit inputs, which come first, every one required
        flags = [c.implicit for c in self.input_storage]
        if any(not c.required for c in explicit) or flags != sorted(flags):
            return None
        checks = [_arg_check(inp.variable) for inp in self.maker.inputs[:len(explicit)]]
        return native, checks, [c.storage for c in implicit], list(self.update_input_storage)

    def __reduce__(self) -> tuple:
        """Pickled as PyTensor pickles its Function (the maker recompiles it; copyreg's entry is for Function
        alone)."""
        return _pickle_Function(self)

    def __call__(self, *args: Any, output_subset: Any = None, **kwargs: Any) -> Any:
        """The function's outputs (see PyTensor's Function.__call__): the direct call when it applies."""
        plan = self._native
        if plan is None or kwargs or output_subset is not None or self.profile:
            return super().__call__(*args, output_subset=output_subset, **kwargs)
        native, checks, implicit, updates = plan
        if len(args) != len(checks):
            return super().__call__(*args)
        if not self.trust_input and not (_fits(args[0], checks[0]) if len(args) == 1 else
                                         all(map(_fits, args, checks))):
            return super().__call__(*args)
        outputs = native(*args, *[cell[0] for cell in implicit]) if implicit else native(*args)
        if updates:
            for i, container in updates:
                container.storage[0] = outputs[i]
            outputs = outputs[:self.n_returned_outputs]
        if self.return_none:
            return None
        if self.unpack_single:
            return outputs[0]
        return outputs


class GraphjitFunctionMaker(FunctionMaker):
    """PyTensor's FunctionMaker building GraphjitFunction."""

    def __init__(self, *args: Any, function_builder: type = GraphjitFunction, **kwargs: Any) -> None:
        super().__init__(*args, function_builder=function_builder, **kwargs)


def _function_maker(mode: Mode) -> type:
    """GraphjitFunctionMaker for a mode whose linker is graphjit's; no attribute (PyTensor's default) otherwise."""
    if isinstance(getattr(mode, "linker", None), GraphjitLinker):
        return GraphjitFunctionMaker
    raise AttributeError("function_maker")


def install() -> None:
    """Give PyTensor's Mode the ``function_maker`` property (once; a Mode subclass's own attribute still wins)."""
    if "function_maker" not in vars(Mode):
        Mode.function_maker = property(_function_maker)
