"""function_dump: write what is needed to reproduce a call of function() (to attach to a bug report)."""

from __future__ import annotations

import pickle
import platform
import sys
from typing import Any, Dict

import numpy as np

from graphjit.config import config

FORMAT = "graphjit.function_dump/1"


def function_dump(filename: str, inputs: Any, outputs: Any = None, mode: Any = None, updates: Any = None,
                  givens: Any = None, no_default_updates: Any = False, accept_inplace: bool = False,
                  name: Any = None, allow_input_downcast: Any = None, profile: Any = None,
                  on_unused_input: Any = None) -> None:
    """Pickle function()'s arguments (the graphs, shared variables with their values, the mode) to filename,
    with the versions and config flags in force, so that ``graphjit.function(**load_function_dump(filename))``
    compiles the same function elsewhere (Theano's ``function_dump``).

    The file is a pickle: loading it runs whatever it names, so load only dumps you trust (graphjit never
    loads one by itself; its compile cache holds no pickles that run code).
    """
    kwargs: Dict[str, Any] = dict(inputs=inputs, outputs=outputs, mode=mode, updates=updates, givens=givens,
                                  no_default_updates=no_default_updates, accept_inplace=accept_inplace, name=name,
                                  allow_input_downcast=allow_input_downcast, profile=profile,
                                  on_unused_input=on_unused_input)
    version = getattr(sys.modules.get("graphjit"), "__version__", "unknown")   # the package is loaded first
    record = {"format": FORMAT, "function_kwargs": kwargs, "config": config.flags(),
              "versions": {"graphjit": version, "numpy": np.__version__, "python": sys.version,
                           "platform": platform.platform()}}
    with open(filename, "wb") as f:
        pickle.dump(record, f, protocol=pickle.HIGHEST_PROTOCOL)


def load_function_dump(filename: str, with_info: bool = False) -> Any:
    """The function() keyword arguments stored by function_dump (and, with_info, the versions and flags).

    It unpickles the file: only load dumps you trust.
    """
    with open(filename, "rb") as f:
        record = pickle.load(f)     # noqa: S301 - documented: a dump is loaded explicitly by the user
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"{filename} is not a graphjit function_dump file")
    kwargs = record["function_kwargs"]
    return (kwargs, {"config": record["config"], "versions": record["versions"]}) if with_info else kwargs
