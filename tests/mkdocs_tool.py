"""tools/mkdocs_api.py (the API reference's mkdocs hook) loaded as a module, for the docs tests."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parent.parent


def mkdocs_api() -> ModuleType:
    """The hook module, loaded once per process."""
    if "mkdocs_api" not in sys.modules:
        spec = importlib.util.spec_from_file_location("mkdocs_api", ROOT / "tools" / "mkdocs_api.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["mkdocs_api"] = module
        spec.loader.exec_module(module)
    return sys.modules["mkdocs_api"]
