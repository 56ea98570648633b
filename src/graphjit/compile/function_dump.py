"""function_dump: write what is needed to reproduce a call of function() (to attach to a bug report)."""

from __future__ import annotations

import pickle
import platform
import sys
from typing import Any, Dict, Optional, Sequence

import numpy as np

from graphjit.config import config
from graphjit.graph.basic import Variable, ancestors


class FunctionDump(dict):
    """function()'s keyword arguments, as Theano's dump held them (``function(**d)`` compiles them), with the
    versions and config flags in force when it was written in ``info``."""

    def __init__(self, kwargs: Dict[str, Any], info: Dict[str, Any]) -> None:
        super().__init__(kwargs)
        self.info = info


def function_dump(filename: str, inputs: Any, outputs: Any = None, mode: Any = None, updates: Any = None,
                  givens: Any = None, no_default_updates: Any = False, accept_inplace: bool = False,
                  name: Any = None, rebuild_strict: bool = True, allow_input_downcast: Any = None,
                  profile: Any = None, on_unused_input: Any = None,
                  extra_tag_to_remove: Optional[Sequence[str]] = None) -> None:
    """Pickle function()'s arguments (the graphs, shared variables with their values, the mode) to filename,
    so that Theano's recipe ``d = pickle.load(f); graphjit.function(**d)`` compiles the same function
    elsewhere (Theano's ``function_dump``); the versions and config flags in force are kept beside them
    (``load_function_dump(filename, with_info=True)``).

    extra_tag_to_remove: attributes of the variables' ``tag`` left out of the file (Theano's argument; the
    graphs given are not changed).  rebuild_strict is accepted for Theano's signature and not stored:
    ``graphjit.function`` has no such argument (givens must match the replaced variable's type).

    The file is a pickle: loading it runs whatever it names, so load only dumps you trust (graphjit never
    loads one by itself; its compile cache holds no pickles that run code).
    """
    kwargs: Dict[str, Any] = dict(inputs=inputs, outputs=outputs, mode=mode, updates=updates, givens=givens,
                                  no_default_updates=no_default_updates, accept_inplace=accept_inplace, name=name,
                                  allow_input_downcast=allow_input_downcast, profile=profile,
                                  on_unused_input=on_unused_input)
    version = getattr(sys.modules.get("graphjit"), "__version__", "unknown")   # the package is loaded first
    info = {"config": config.flags(),
            "versions": {"graphjit": version, "numpy": np.__version__, "python": sys.version,
                         "platform": platform.platform()}}
    dump = FunctionDump(kwargs, info)
    data = pickle.dumps(dump, protocol=pickle.HIGHEST_PROTOCOL)
    if extra_tag_to_remove:
        dump = pickle.loads(data)       # noqa: S301 - our own bytes: a copy whose tags are stripped
        _strip_tags(dump, extra_tag_to_remove)
        data = pickle.dumps(dump, protocol=pickle.HIGHEST_PROTOCOL)
    with open(filename, "wb") as f:
        f.write(data)


def _strip_tags(kwargs: Dict[str, Any], names: Sequence[str]) -> None:
    """Delete the tag attributes names from every variable of the graphs kwargs holds."""
    for var in ancestors(_variables(kwargs.values())):
        for name in names:
            var.tag.__dict__.pop(name, None)


def _variables(values: Any) -> list:
    """The Variables in values (nested in lists, tuples, dicts, In/Out wrappers)."""
    out = []
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, Variable):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif hasattr(v, "variable") and isinstance(getattr(v, "variable"), Variable):
            stack.append(v.variable)
    return out


def load_function_dump(filename: str, with_info: bool = False) -> Any:
    """The function() keyword arguments stored by function_dump (and, with_info, the versions and flags).

    It unpickles the file: only load dumps you trust.
    """
    with open(filename, "rb") as f:
        record = pickle.load(f)     # noqa: S301 - documented: a dump is loaded explicitly by the user
    if not isinstance(record, FunctionDump):
        raise ValueError(f"{filename} is not a graphjit function_dump file")
    kwargs = dict(record)
    return (kwargs, record.info) if with_info else kwargs
