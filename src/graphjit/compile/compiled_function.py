"""Function: the callable returned by function(): fills input containers, runs the thunk, applies updates."""

from __future__ import annotations

import copy
import threading
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from graphjit.compile import vectorcall
from graphjit.compile.locking import guard, ordered_locks
from graphjit.compile.pickling import reduce_function
from graphjit.compile.profiling import profile_of
from graphjit.graph.basic import Constant, Variable, clone_replace
from graphjit.link import call_plan
from graphjit.link.basic import Container, SlowPath
from graphjit.scalar.basic import ScalarType
from graphjit.tensor.type import TensorType
from graphjit.graph import forksafe

_REQUIRED, _REFEED, _STATE = "required", "refeed", "state"
_CHECKED_TYPES = (TensorType, ScalarType)     # their values are filtered even with trust_input


@vectorcall.with_vectorcall_slot
class Function:
    """A compiled function: ``f(*args, output_subset=None, **kwargs)`` returns the outputs, applies the updates.

    Attributes: ``maker`` (FunctionMaker: ``fgraph``, ``inputs``, ``mode``), ``fn`` (the thunk),
    ``input_storage`` / ``output_storage`` (Containers), ``trust_input`` (skip argument filtering).

    For a graph compiled by the LLVM linker, the Function's vectorcall slot is the compiled function-call
    wrapper (compile/vectorcall.py, link/llvm/cpython/fncall.py) reading this Function's call plan
    (link/call_plan.py): ``f(x, y)`` runs no Python frame, with several outputs, updates, shared variables,
    defaults, keywords and Python scalars for 0-d inputs too; what it does not take (lists, casts, errors,
    ``output_subset``) goes to ``_fallback``, that is ``__call__``.  ``call_path`` says which path serves calls.
    """

    __slots__ = ()          # the instance dict, weakrefs and the vectorcall slot are added by with_vectorcall_slot

    def __init__(self, maker: Any, fn: Callable[[], None], input_storage: List[Container],
                 output_storage: List[Container], name: Optional[str] = None):
        self.maker = maker
        self.fn = fn
        self._uid = uuid.uuid4().hex
        self.input_storage = input_storage
        self.output_storage = output_storage
        self.name = name
        self.trust_input = False
        self.unpack_single = maker.unpack_single
        explicit = [k for k, spec in enumerate(maker.inputs) if not spec.implicit]
        self._n_explicit = len(explicit)
        if explicit != list(range(self._n_explicit)):
            raise ValueError("implicit inputs must come after the explicit ones")
        self._n_user_outputs = len(maker.outputs)
        self._updates: List[Tuple[int, int]] = sorted(maker.fgraph.update_mapping.items())
        self._defaults = [self._default_of(k) for k in range(self._n_explicit)]
        self._init_fast_path()
        self._set_locks(forksafe.new_rlock())
        self._names: Dict[str, List[int]] = {}
        for k in range(self._n_explicit):
            name_k = maker.inputs[k].name
            if name_k is not None:
                self._names.setdefault(name_k, []).append(k)
        self._set_target()

    def _set_target(self) -> None:
        """Calls go straight to the compiled function-call wrapper (link/llvm/cpython/fncall.py) when it can serve
        them: LLVM linker, every explicit input a native tensor that is required or has an immutable default."""
        self._plan = None
        address = getattr(self.fn, "function_call_address", None)
        if not (vectorcall.supported() and address and self._native_ok()):
            if vectorcall.supported():
                vectorcall.set_vectorcall(self, 0)
            return
        self._plan = self._make_plan()
        vectorcall.set_call_plan(self, self._plan.address)
        vectorcall.set_vectorcall(self, address)       # self.fn keeps the compiled library alive

    def _native_ok(self) -> bool:
        checked = getattr(self.fn, "inputs_checked", [])[:self._n_explicit]
        if len(checked) != self._n_explicit or not all(checked):
            return False
        for k in range(self._n_explicit):
            kind, _ = self._defaults[k]
            if kind == _STATE or (kind == _REFEED and self.maker.inputs[k].mutable):
                return False
        return True

    def _make_plan(self) -> call_plan.CallPlan:
        """The call plan of this Function (link/call_plan.py): what its compiled wrapper reads at every call."""
        containers = self.input_storage
        n_in = len(containers)
        sources: List[Any] = [self._defaults[k][1] for k in range(self._n_explicit)]
        sources += [containers[k].storage for k in range(self._n_explicit, n_in)]
        names = [None] * n_in
        for name, indices in self._names.items():
            if len(indices) == 1:
                names[indices[0]] = name
        scalars = [k < self._n_explicit and not containers[k].strict
                   and (containers[k].type.dtype != "float32" or containers[k].allow_downcast is not False)
                   for k in range(n_in)]
        updates: List[Any] = [None] * len(self.output_storage)
        for out_idx, in_idx in self._updates:
            updates[out_idx] = containers[in_idx].storage
        locks = ((self._own_lock,) if self._fast_extra else ()) + self._locks
        extra = self._fast_extra[0] if self._fast_extra else None
        return call_plan.make_plan(self._n_explicit, self._n_user_outputs, self.unpack_single, sources, names,
                                   scalars, updates, locks, extra, len(self.output_storage))

    @property
    def call_path(self) -> str:
        """Which path serves a call: "native" (the compiled wrapper, no Python frame) or "python" (``__call__``).

        A native call still goes through ``__call__`` for what its checks refuse (errors, casts, keywords it
        does not know, ``output_subset``)."""
        if self._plan is not None and vectorcall.vectorcall_of(self) == getattr(self.fn, "function_call_address", 0):
            return "native"
        return "python"

    def _init_fast_path(self) -> None:
        """Call the native wrapper directly (LLVM linker) when every input is positional and required."""
        native_call = getattr(self.fn, "native_call", None)
        checked = getattr(self.fn, "inputs_checked", [])[:self._n_explicit]
        required = all(self._defaults[k][0] == _REQUIRED for k in range(self._n_explicit))
        required = required and len(checked) == self._n_explicit and all(checked)
        self._fast = native_call if required else None
        implicit = range(self._n_explicit, len(self.input_storage))
        self._fast_cells = [self.input_storage[k].storage for k in implicit]
        self._fast_extra = tuple(getattr(self.fn, "extra_args", ()))
        self._fast_simple = (not self._fast_cells and not self._fast_extra and not self._updates
                             and self.unpack_single)

    def _set_locks(self, own: threading.RLock) -> None:
        """The locks a call takes (locking.py): its state containers', and its own around its containers.

        The own lock comes first: no one else takes it (but a copy sharing its memory), so the global order
        of the state locks is kept.
        """
        state = [c for c, spec in zip(self.input_storage, self.maker.inputs)
                 if spec.implicit or spec.update is not None or isinstance(spec.value, Container)]
        self._own_lock = own
        self._locks = ordered_locks(state)
        # the fast path needs its own lock only with a fallback table (it keeps per-call results)
        self._fast_guard = guard(((own,) if self._fast_extra else ()) + self._locks)
        self._slow_guard = guard((own,) + self._locks)

    @property
    def native(self) -> Any:
        """What the LLVM linker produced (llvm_ir, optimized_ir, asm, cache_key, fallback_nodes, timings)."""
        return getattr(self.fn, "native", None)

    @property
    def profile(self) -> Any:
        """The ProfileStats of a function compiled with profile=True (``f.profile.summary()``), else None."""
        return profile_of(self)

    @property
    def compile_stats(self) -> Dict[str, float]:
        """Seconds per compile phase of this Function (``maker.compile_stats``; docs/performance.md, W9)."""
        return self.maker.compile_stats

    def _finish_fast(self, res: Any) -> Any:
        n_out = len(self.output_storage)
        outputs = [res] if n_out == 1 else list(res) if n_out else []
        for cell, value in zip(self.output_storage, outputs):
            cell.storage[0] = value
        containers = self.input_storage
        for out_idx, in_idx in self._updates:
            containers[in_idx].storage[0] = outputs[out_idx]
        if self.unpack_single:
            return outputs[0]
        return outputs[:self._n_user_outputs]

    def _default_of(self, k: int) -> Tuple[str, Any]:
        spec = self.maker.inputs[k]
        if spec.update is not None or isinstance(spec.value, Container):
            return (_STATE, None)
        if spec.value is not None:
            return (_REFEED, self.input_storage[k].storage[0])
        return (_REQUIRED, None)

    # --- calling -------------------------------------------------------------------------------
    def __call__(self, *args: Any, output_subset: Optional[Sequence[int]] = None, **kwargs: Any) -> Any:
        """Run the function on args (positional, or keyword by input name); return the outputs."""
        fast = self._fast
        if fast is not None and output_subset is None and not kwargs and len(args) == self._n_explicit:
            try:
                if self._fast_simple:
                    return fast(*args)
                held = self._fast_guard
                if held is None:
                    return self._finish_fast(fast(*args))
                with held:
                    return self._finish_fast(fast(*args, *[c[0] for c in self._fast_cells], *self._fast_extra))
            except SlowPath:
                pass                        # filter through the containers below, then re-enter
        with self._slow_guard:
            return self._call_containers(args, output_subset, kwargs)

    _fallback = __call__        # what the compiled wrappers call with the arguments they do not take (cpython/fncall.py)

    def word_error(self, code: int, msg: int, node: int, a: int, b: int, c: int) -> BaseException:
        """The exception of a native error record (the compiled wrapper, as this Function's vectorcall, asks)."""
        return self.fn.native.describe_error(code, msg, node, a, b, c)

    def __dask_tokenize__(self) -> tuple:
        """The compiled code's key (or a per-Function id) and the current values of the implicit inputs."""
        tokenize = forksafe.import_module("dask.base").tokenize
        native = self.native
        key = native.cache_key if native is not None else self._uid
        state = [c.storage[0] for c, spec in zip(self.input_storage, self.maker.inputs) if spec.implicit]
        return ("graphjit.Function", key, tokenize(*state))

    def _call_containers(self, args: tuple, output_subset: Optional[Sequence[int]], kwargs: Dict[str, Any]) -> Any:
        """The call through the input containers and the thunk (the caller holds the locks)."""
        containers = self.input_storage
        if len(args) > self._n_explicit:
            raise TypeError(f"{self._label()} takes {self._n_explicit} arguments, got {len(args)}")
        if self.trust_input:            # only values of user Types skip their filter (docs/graph.md)
            for k, arg in enumerate(args):
                if not isinstance(containers[k].type, _CHECKED_TYPES):
                    containers[k].storage[0] = arg
                else:
                    self._set_input(k, arg)
        else:
            for k, arg in enumerate(args):
                self._set_input(k, arg)
        if kwargs or len(args) < self._n_explicit:
            self._fill_remaining(len(args), kwargs)
        self.fn()
        outputs = [c.storage[0] for c in self.output_storage]
        for out_idx, in_idx in self._updates:
            containers[in_idx].storage[0] = outputs[out_idx]
        if output_subset is not None:
            return [outputs[i] for i in self._check_subset(output_subset)]
        if self.unpack_single:
            return outputs[0]
        return outputs[:self._n_user_outputs]

    def _label(self) -> str:
        return f"function {self.name!r}" if self.name else "the function"

    def _set_input(self, k: int, value: Any) -> None:
        try:
            self.input_storage[k].put(value)
        except (TypeError, ValueError, OverflowError) as e:
            raise type(e)(f"{self._label()}, argument {k}: {e}") from e

    def _fill_remaining(self, n_args: int, kwargs: Dict[str, Any]) -> None:
        given = set(range(n_args))
        for key, value in kwargs.items():
            k = self._index_of_name(key)
            if k in given:
                raise TypeError(f"{self._label()} got two values for argument {key!r}")
            self._set_input(k, value)
            given.add(k)
        missing = []
        for k in range(n_args, self._n_explicit):
            if k in given:
                continue
            kind, default = self._defaults[k]
            if kind == _REFEED:
                mutable = self.maker.inputs[k].mutable
                self.input_storage[k].storage[0] = copy.deepcopy(default) if mutable else default
            elif kind == _REQUIRED:
                missing.append(f"argument {k}, {self.maker.inputs[k].variable.describe()}")
        if missing:
            raise TypeError(f"{self._label()} is missing " + "; ".join(missing))

    def _index_of_name(self, key: str) -> int:
        indices = self._names.get(key)
        if not indices:
            names = ", ".join(repr(n) for n in self._names) or "none"
            raise TypeError(f"{self._label()} got an unexpected keyword argument {key!r}; "
                            f"input names: {names}")
        if len(indices) > 1:
            raise TypeError(f"{self._label()}: several inputs are named {key!r} "
                            f"(arguments {indices}); pass them by position")
        return indices[0]

    def _check_subset(self, subset: Sequence[int]) -> List[int]:
        result = list(subset)
        for i in result:
            if not isinstance(i, int) or not 0 <= i < self._n_user_outputs:
                raise ValueError(f"output_subset: {i!r} is not an output index "
                                 f"(0..{self._n_user_outputs - 1})")
        return result

    # --- access by input -------------------------------------------------------------------------
    def _container_of(self, key: Union[str, int, Variable]) -> Container:
        if isinstance(key, str):
            return self.input_storage[self._index_of_name(key)]
        if isinstance(key, int):
            return self.input_storage[key]
        for spec, container in zip(self.maker.inputs, self.input_storage):
            if spec.variable is key:
                return container
        raise KeyError(f"{key} is not an input of {self._label()}")

    def __getitem__(self, key: Union[str, int, Variable]) -> Any:
        """The value held for an input (by name, position or Variable)."""
        return self._container_of(key).data

    def __setitem__(self, key: Union[str, int, Variable], value: Any) -> None:
        """Set the value held for an input (filtered through its Type)."""
        self._container_of(key).data = value

    # --- copies --------------------------------------------------------------------------------
    def copy(self, share_memory: bool = False, swap: Optional[Dict[Variable, Variable]] = None,
             delete_updates: bool = False, name: Optional[str] = None) -> "Function":
        """A new Function computing the same thing.

        Shared variables stay shared (their containers are reused) unless ``swap`` maps them to
        other shared variables of the same Type. With ``share_memory`` the copy uses the same graph
        and the same storage for intermediate results as self. With ``delete_updates`` the copy applies
        no update (it is compiled again, without them; not combinable with share_memory).
        """
        swap = dict(swap or {})
        implicit = {spec.variable for spec in self.maker.inputs if spec.implicit}
        for old in swap:
            if old not in implicit:
                raise ValueError(f"swap: {old} is not a shared variable used by {self._label()}")
        if delete_updates:
            if share_memory:
                raise ValueError("Function.copy: share_memory=True and delete_updates=True cannot be combined "
                                 "(the copy without updates is another graph)")
            return self._copy_without_updates(swap, name)
        maker = self.maker.clone(share_memory=share_memory, swap=swap)
        cells = []
        for spec, old_spec, container in zip(maker.inputs, self.maker.inputs, self.input_storage):
            if isinstance(spec.value, Container) and spec.implicit:
                cells.append(spec.value.storage)
            else:
                cells.append([copy.deepcopy(container.storage[0])
                              if old_spec.update is not None else container.storage[0]])
        storage_map = None
        if share_memory:
            boundary = set(self.maker.fgraph.inputs) | set(self.maker.fgraph.outputs)
            storage_map = {v: cell for v, cell in getattr(self.fn, "storage_map", {}).items()
                           if v not in boundary and not isinstance(v, Constant)}
        maker.name = name if name is not None else self.name
        fn = maker.create(input_storage=cells, storage_map=storage_map, trust_input=self.trust_input)
        if share_memory:
            fn._set_locks(self._own_lock)       # the intermediate storage is shared too
            fn._set_target()                    # its call plan names the locks
        return fn

    def _copy_without_updates(self, swap: Dict[Variable, Variable], name: Optional[str]) -> "Function":
        """copy(delete_updates=True): the same inputs and outputs compiled again without the updates."""
        specs = []
        for spec in self.maker.inputs:
            cp = copy.copy(spec)
            if cp.update is not None:
                cp.update = None
                cp.mutable = False if cp.implicit else cp.mutable
            new_var = swap.get(cp.variable)
            if new_var is not None:
                if new_var.type != cp.variable.type:
                    raise TypeError(f"swap: {new_var.describe()} does not have the type of {cp.variable.describe()}")
                cp.variable, cp.value = new_var, new_var.container
            specs.append(cp)
        outs = list(self.maker.outputs)
        if swap:
            replaced = clone_replace([o.variable for o in outs], swap)
            outs = [type(o)(v, o.borrow) for o, v in zip(outs, replaced)]
        outputs = outs[0] if self.unpack_single else outs
        maker = type(self.maker)(specs, outputs, mode=self.maker.mode, accept_inplace=True, on_unused_input="ignore",
                                 name=name if name is not None else self.name,
                                 profile=getattr(self.maker, "profile", False))
        cells = maker.initial_cells()
        for k, (spec, container) in enumerate(zip(specs, self.input_storage)):
            if not spec.implicit:
                cells[k][0] = container.storage[0]
        fn = maker.create(input_storage=cells, trust_input=self.trust_input)
        fn.name = maker.name
        return fn

    def __reduce__(self) -> tuple:
        """Pickle as the rewritten graph, mode, In/Out settings and shared values (compile/pickling.py)."""
        return reduce_function(self)

    def __str__(self) -> str:
        return f"Function({self.name or ''}: {self.maker.fgraph})"

    __repr__ = __str__
