"""The one place the random tests compile under FAST_RUN (directly, or through op_check's modes).

The random ops still run ``perform`` under FAST_RUN on this branch: compiling a draw warns (FallbackWarning),
which pytest turns into an error. Every compile goes through ``function`` / ``check_case`` here, which allow it.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator

import graphjit as gj
import op_check
from graphjit.link.fallback_warning import FallbackWarning

MODES = ["PY", "FAST_RUN"]


@contextlib.contextmanager
def fallback_allowed() -> Iterator[None]:
    """FallbackWarning ignored inside."""
    with warnings.catch_warnings():
        # lead: drop this filter once s5-rng merges
        warnings.filterwarnings("ignore", category=FallbackWarning)
        yield


def function(*args: Any, **kwargs: Any) -> Any:
    """graphjit.function (FAST_RUN by default), FallbackWarning allowed."""
    with fallback_allowed():
        return gj.function(*args, **kwargs)


def check_case(case: op_check.Case) -> None:
    """op_check.check_case, FallbackWarning allowed."""
    with fallback_allowed():
        op_check.check_case(case)
