"""Small helpers of the graph layer: the user's source line (and the stacklevel of a warning pointing at it), and its
two exceptions (MethodNotDefined, TestValueError)."""

from __future__ import annotations

import os
import sys
from typing import Optional

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class MethodNotDefined(NotImplementedError):
    """Raised by an optional method of an Op or Type that a subclass did not provide."""


class TestValueError(ValueError):
    """A variable has no test value, or its node's test value cannot be computed (graph/test_value.py)."""

    __test__ = False        # not a pytest test class


_INSIDE: dict[str, bool] = {}      # code filename -> is it graphjit's (every Variable asks: keep it cheap)


def user_source_line() -> Optional[str]:
    """Return 'file:line' of the innermost frame outside graphjit, or None."""
    frame = sys._getframe(1)
    inside = _INSIDE
    while frame is not None:
        filename = frame.f_code.co_filename
        known = inside.get(filename)
        if known is None:
            known = inside[filename] = os.path.abspath(filename).startswith(_PACKAGE_DIR)
        if not known:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` in the caller that names the innermost frame outside graphjit (the
    user's line), whatever the depth of graphjit's frames in between; 2 if there is none."""
    line = user_source_line()
    frame, level = sys._getframe(1), 1
    while frame is not None:
        if f"{frame.f_code.co_filename}:{frame.f_lineno}" == line:
            return level
        frame, level = frame.f_back, level + 1
    return 2
