"""function(): inputs, outputs, updates and givens in; a compiled Function out."""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from graphjit.compile.compiled_function import Function
from graphjit.compile.io import In, Out
from graphjit.compile.maker import FunctionMaker, as_update
from graphjit.compile.mode import Mode
from graphjit.compile.profiling import print_at_exit
from graphjit.compile.sharedvalue import SharedVariable
from graphjit.graph.basic import Variable, clone_replace, graph_inputs
from graphjit.graph.compile_hook import set_function_builder
from graphjit.graph.gc_pause import gc_paused
from graphjit.graph.test_value import without_test_values

Pairs = Union[Dict[Variable, Any], Sequence[Tuple[Variable, Any]], None]
OutputSpec = Union[Variable, Out, Sequence[Union[Variable, Out]], None]


@without_test_values        # config.compute_test_value applies to the user's graph building, not to compiling
def function(inputs: Sequence[Union[Variable, In]], outputs: OutputSpec = None,
             mode: Union[str, Mode, None] = None, updates: Pairs = None, givens: Pairs = None,
             no_default_updates: Union[bool, Sequence[Variable]] = False,
             accept_inplace: bool = False, name: Optional[str] = None,
             on_unused_input: Optional[str] = None,
             allow_input_downcast: Optional[bool] = None, profile: Optional[bool] = None) -> Function:
    """Compile a callable computing outputs from inputs; shared variables are implicit inputs.

    ``outputs`` is a Variable or Out (the call returns one value) or a list (returns a list).
    ``updates`` are (shared variable, new value expression) pairs applied after each call, all
    computed from the old values. ``givens`` replaces Variables of the graph by other Variables.
    ``profile=True`` (default ``config.profile``, whose profiles are also printed at exit) compiles a
    variant with run-time counters: ``f.profile.summary()`` (docs/debugging.md).
    """
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"function(): inputs must be a list or tuple of Variables or In, "
                        f"got {type(inputs).__name__}")
    ins = [_explicit_input(spec, allow_input_downcast) for spec in inputs]
    single = isinstance(outputs, (Variable, Out))
    outs = [] if outputs is None else [outputs] if single else list(outputs)
    outs = [_as_out(o) for o in outs]
    update_pairs = _pairs(updates, "updates")
    givens_map = _givens(givens)
    for shared_var, _ in update_pairs:
        if not isinstance(shared_var, SharedVariable):
            raise TypeError(f"updates: {shared_var} is not a shared variable; only shared "
                            "variables can be updated")
    exprs = [o.variable for o in outs] + [_as_variable(s, e) for s, e in update_pairs]
    in_updates = [spec.update for spec in ins if spec.update is not None]
    if givens_map:
        replaced = clone_replace(exprs + in_updates, givens_map)
        exprs, in_updates = replaced[:len(exprs)], replaced[len(exprs):]
        it = iter(in_updates)
        for spec in ins:
            if spec.update is not None:
                spec.update = next(it)
    outs = [Out(e, o.borrow) for e, o in zip(exprs, outs)]
    update_d = dict(zip((s for s, _ in update_pairs), exprs[len(outs):]))
    implicit = _implicit_inputs(ins, outs, update_d, no_default_updates, givens_map)
    with gc_paused():       # one pause for the rewrites and the linking: its objects are handed over together
        maker = FunctionMaker(ins + implicit, outs[0] if single else outs, mode=mode,
                              accept_inplace=accept_inplace, on_unused_input=on_unused_input,
                              name=name, profile=profile)
        fn = maker.create()
    if maker.profile and profile is None:       # config.profile: every profile is printed at exit
        print_at_exit(fn.profile)
    return fn


set_function_builder(function)


def _as_out(spec: Any) -> Out:
    if isinstance(spec, Out):
        return spec
    if isinstance(spec, Variable):
        return Out(spec)
    raise TypeError(f"function(): outputs must be Variables or Out, got {spec!r}")


def _explicit_input(spec: Union[Variable, In], allow_input_downcast: Optional[bool]) -> In:
    spec = copy.copy(spec) if isinstance(spec, In) else In(spec)
    if isinstance(spec.variable, SharedVariable):
        raise TypeError(f"function(): {spec.variable.describe()} is a shared variable; shared "
                        "variables are implicit inputs and cannot be listed in inputs (use givens "
                        "to substitute a non-shared variable for it)")
    if spec.allow_downcast is None:
        spec.allow_downcast = allow_input_downcast
    return spec


def _pairs(pairs: Pairs, what: str) -> List[Tuple[Variable, Any]]:
    if pairs is None:
        return []
    items = list(pairs.items()) if isinstance(pairs, dict) else list(pairs)
    result = []
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"function(): {what} must be (variable, expression) pairs or a dict, "
                            f"got {item!r}")
        result.append((item[0], item[1]))
    keys = [k for k, _ in result]
    for k in keys:
        if not isinstance(k, Variable):
            raise TypeError(f"function(): {what}: {k!r} is not a Variable")
        if sum(1 for other in keys if other is k) > 1:
            raise ValueError(f"function(): {what}: {k.describe()} appears more than once")
    return result


def _givens(givens: Pairs) -> Dict[Variable, Variable]:
    result = {}
    for old, new in _pairs(givens, "givens"):
        try:
            result[old] = old.type.filter_variable(new)
        except TypeError as e:
            raise TypeError(f"givens: cannot replace {old.describe()} by {new}: {e}") from e
    return result


def _as_variable(shared_var: Variable, expr: Any) -> Variable:
    try:
        return as_update(shared_var, expr)
    except TypeError as e:
        raise TypeError(f"updates: {e}") from e


def _implicit_inputs(ins: List[In], outs: List[Out], update_d: Dict[Variable, Variable],
                     no_default_updates: Union[bool, Sequence[Variable]],
                     givens: Dict[Variable, Variable]) -> List[In]:
    """The shared variables the graph reads or updates (with their updates), as implicit Ins."""
    explicit = {spec.variable for spec in ins}
    skip_defaults = set() if no_default_updates is False else (
        None if no_default_updates is True else set(no_default_updates))
    while True:
        roots = [o.variable for o in outs] + list(update_d.values()) + list(update_d)
        roots += [spec.update for spec in ins if spec.update is not None]
        shared = [v for v in graph_inputs(roots) if isinstance(v, SharedVariable)
                  and v not in explicit]
        added = False
        for var in shared:
            if (var not in update_d and var.default_update is not None and skip_defaults is not None
                    and var not in skip_defaults):
                expr = clone_replace(var.default_update, givens) if givens else var.default_update
                update_d[var] = _as_variable(var, expr)
                added = True
        if not added:
            break
    return [In(var, value=var.container, update=update_d.get(var), mutable=var in update_d,
               implicit=True, strict=var.container.strict,
               allow_downcast=var.container.allow_downcast, name=var.name) for var in shared]
