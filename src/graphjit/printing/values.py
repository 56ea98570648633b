"""print_test_value: the test values of variables (config.compute_test_value), one line each."""

from __future__ import annotations

import sys
from typing import Any, Sequence, TextIO, Union

import numpy as np

from graphjit.graph.basic import Variable
from graphjit.graph.test_value import get_test_value, has_test_value


def _summary(value: Any) -> str:
    arr = value if isinstance(value, np.ndarray) else None
    if arr is None:
        return repr(value)
    text = np.array2string(arr, threshold=20, edgeitems=3).replace("\n", " ")
    return f"{arr.dtype} {arr.shape} {' '.join(text.split())}"


def print_test_value(variables: Union[Variable, Sequence[Variable]], file: Union[None, str, TextIO] = None
                     ) -> Any:
    """Print 'name: dtype shape value' for each variable's test value ('no test value' when it has none).

    With file="str" the text is returned; otherwise it is written to file (stdout by default).
    """
    if isinstance(variables, Variable):
        variables = [variables]
    lines = []
    for var in variables:
        value = _summary(get_test_value(var)) if has_test_value(var) else "no test value"
        lines.append(f"{var}: {value}\n")
    text = "".join(lines)
    if file == "str":
        return text
    out = sys.stdout if file is None else file
    out.write(text)
    return out
