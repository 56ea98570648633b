"""Small helpers of the graph layer: the user's source line, and the MethodNotDefined marker."""

from __future__ import annotations

import os
import sys
from typing import Optional

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class MethodNotDefined(NotImplementedError):
    """Raised by an optional method of an Op or Type that a subclass did not provide."""


def user_source_line() -> Optional[str]:
    """Return 'file:line' of the innermost frame outside graphjit, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None
