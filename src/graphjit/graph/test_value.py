"""Test values (Theano's ``compute_test_value``): every node's value computed as the graph is built.

With ``config.compute_test_value`` other than ``'off'``, building a node runs its op's ``perform`` on the
test values of its inputs (``x.tag.test_value = ...``, a Constant's data, a shared variable's value) and
stores the results as the outputs' test values. A shape error then surfaces at the user's line that built
the failing node instead of at the first call of the compiled function. An input without a test value is
skipped silently (``'ignore'``), with a TestValueWarning (``'warn'``) or with a TestValueError (``'raise'``).
``'off'`` (the default) costs one dict lookup per node.
"""

from __future__ import annotations

import copy
import functools
import warnings
from typing import Any, Callable, List

from graphjit.config import FLAG_VALUES, config
from graphjit.graph.basic import Apply, Constant, Variable
from graphjit.graph.utils import MethodNotDefined, TestValueError, user_source_line, user_stacklevel



class TestValueWarning(UserWarning):
    """compute_test_value='warn': a node's test value was not computed (an input has none)."""

    __test__ = False


def has_test_value(var: Variable) -> bool:
    """Whether var has a test value (a Constant and a shared variable always have one)."""
    return isinstance(var, Constant) or _is_shared(var) or "test_value" in var.tag.__dict__


def get_test_value(var: Variable) -> Any:
    """var's test value: tag.test_value, a Constant's data or a shared variable's current value."""
    return var.get_test_value()


def _is_shared(var: Variable) -> bool:
    # duck-typed, as in Variable.get_test_value
    return hasattr(var, "container") and hasattr(var, "get_value")


def compute_test_values(node: Apply) -> None:
    """Set the test values of node's outputs from its inputs' (per config.compute_test_value)."""
    mode = FLAG_VALUES["compute_test_value"]
    if mode == "off":
        return
    values: List[Any] = []
    for i, inp in enumerate(node.inputs):
        if not has_test_value(inp):
            _missing(node, mode, f"input {i}, {inp.describe()}, has no test value")
            return
        values.append(get_test_value(inp))
    destroyed = {i for ins in getattr(node.op, "destroy_map", {}).values() for i in ins}
    values = [copy.deepcopy(v) if i in destroyed else v for i, v in enumerate(values)]
    storage: List[List[Any]] = [[None] for _ in node.outputs]
    op = node.op
    try:
        params = (op.get_params(node),) if op.params_type is not None else ()
        op.perform(node, values, storage, *params)
    except MethodNotDefined:
        _missing(node, mode, f"{op} has no perform")
        return
    except Exception as e:
        raise _perform_error(node, values, e) from e
    for out, cell in zip(node.outputs, storage):
        if cell[0] is not None:
            out.tag.test_value = cell[0]


def without_test_values(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn runs with compute_test_value 'off' (compiling: the nodes rewrites build need no test values)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if FLAG_VALUES["compute_test_value"] == "off":
            return fn(*args, **kwargs)
        with config.change_flags(compute_test_value="off"):
            return fn(*args, **kwargs)
    return wrapper


def _where(node: Apply) -> str:
    line = user_source_line()
    return f" built at {line}" if line else ""


def _missing(node: Apply, mode: str, why: str) -> None:
    if mode == "ignore":
        return
    message = f"cannot compute the test value of {node.op}{_where(node)}: {why}"
    if mode == "warn":
        warnings.warn(message, TestValueWarning, stacklevel=user_stacklevel())
        return
    raise TestValueError(message)


def _describe_value(value: Any) -> str:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{dtype} {tuple(shape)}"
    return type(value).__name__


def _perform_error(node: Apply, values: List[Any], error: Exception) -> Exception:
    """error re-raised with the node, its inputs' test values (shapes) and the user's line."""
    inputs = ", ".join(f"{inp} ({_describe_value(v)})" for inp, v in zip(node.inputs, values))
    message = f"computing the test value of {node.op}{_where(node)} on {inputs}: {error}"
    try:
        return type(error)(message)
    except Exception:
        return ValueError(message)
