"""Configuration flags (floatX, mode, cache_dir, ...), read from GRAPHJIT_FLAGS at import."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, Mapping, Optional

ENV_FLAGS = "GRAPHJIT_FLAGS"
ENV_CACHE_DIR = "GRAPHJIT_CACHE_DIR"


class ConfigError(ValueError):
    """A flag is unknown, or a value is not valid for its flag."""


@dataclass(frozen=True)
class Flag:
    """One configuration flag: its default, how a value is parsed and checked, and its meaning."""

    name: str
    default: Any
    parse: Callable[[Any], Any]
    doc: str


def _choice(*allowed: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        value = str(value)
        if value not in allowed:
            raise ConfigError(f"expected one of {', '.join(allowed)}; got {value!r}")
        return value
    return parse


def _nonempty_str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"expected a non-empty string; got {value!r}")
    return value


def _opt_level(value: Any) -> int:
    try:
        level = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"expected an integer 0-3; got {value!r}") from None
    if not 0 <= level <= 3:
        raise ConfigError(f"expected an integer 0-3; got {value!r}")
    return level


def _default_cache_dir() -> str:
    return os.environ.get(ENV_CACHE_DIR) or os.path.join(os.path.expanduser("~"), ".cache", "graphjit")


FLAGS: Dict[str, Flag] = {f.name: f for f in [
    Flag("floatX", "float64", _choice("float64", "float32", "float16"),
         "dtype of floating-point variables created without an explicit dtype"),
    Flag("mode", "FAST_RUN", _nonempty_str,
         "name of the default compilation mode (see graphjit.compile.mode)"),
    Flag("cache_dir", None, lambda v: os.path.expanduser(_nonempty_str(v)),
         f"directory of the compiled-object cache (default ${ENV_CACHE_DIR} or ~/.cache/graphjit)"),
    Flag("opt_level", 3, _opt_level, "LLVM optimisation level, 0-3"),
    Flag("on_unused_input", "raise", _choice("raise", "warn", "ignore"),
         "what function() does with an input the outputs do not depend on"),
    Flag("rewrite_verbose", False, lambda v: str(v).lower() in ("1", "true", "yes", "on"),
         "print every replacement the graph rewrites make"),
    Flag("profile", False, lambda v: str(v).lower() in ("1", "true", "yes", "on"),
         "profile every function (function(profile=True)) and print each profile's summary at exit"),
    Flag("compute_test_value", "off", _choice("off", "ignore", "warn", "raise"),
         "compute each node's test value as the graph is built (x.tag.test_value); an input without one is "
         "ignored, warned about or an error"),
    Flag("print_test_value", False, lambda v: str(v).lower() in ("1", "true", "yes", "on"),
         "repr() of a variable with a test value adds the value on a second line (Theano's flag), and "
         "debugprint adds each variable's test value"),
    Flag("inline_exp", True, lambda v: str(v).lower() in ("1", "true", "yes", "on"),
         "LLVM backend: float64 exp is graphjit's inline table exp (False: libm/libmvec's exp)"),
    Flag("compile_worker", True, lambda v: str(v).lower() in ("1", "true", "yes", "on"),
         "LLVM backend: after a process's first few fresh compiles, LLVM optimises and generates code in a "
         "worker process (so no LLVM memory stays behind per graph); False: always in this process"),
]}


class Config:
    """The flag values; read and set them as attributes (unknown names raise)."""

    def __init__(self, flags: Mapping[str, Flag] = FLAGS):
        object.__setattr__(self, "_flags", dict(flags))
        object.__setattr__(self, "_values", {})
        self.reset()

    def reset(self) -> None:
        """Set every flag back to its default."""
        for flag in self._flags.values():
            default = _default_cache_dir() if flag.name == "cache_dir" else flag.default
            self._values[flag.name] = flag.parse(default)

    def _flag(self, name: str) -> Flag:
        flag = self._flags.get(name)
        if flag is None:
            known = ", ".join(sorted(self._flags))
            raise ConfigError(f"unknown graphjit flag {name!r}; known flags: {known}")
        return flag

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"unknown graphjit flag {name!r}; known flags: "
                                 f"{', '.join(sorted(self._flags))}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        flag = self._flag(name)
        try:
            self._values[name] = flag.parse(value)
        except ConfigError as e:
            raise ConfigError(f"bad value for graphjit flag {name!r}: {e}") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._flags))

    def flags(self) -> Dict[str, Any]:
        """A snapshot of every flag value."""
        return dict(self._values)

    def describe(self) -> str:
        """One line per flag: name, value and meaning."""
        return "\n".join(f"{f.name} = {self._values[f.name]!r}  # {f.doc}" for f in self._flags.values())

    def __str__(self) -> str:
        """``print(config)``: every flag with its value, default and meaning (set them with GRAPHJIT_FLAGS)."""
        lines = ["graphjit configuration (set with GRAPHJIT_FLAGS=name=value,... or config.name = value)"]
        for f in self._flags.values():
            value = self._values[f.name]
            default = "" if f.name == "cache_dir" or value == f.parse(f.default) else f"  (default {f.default!r})"
            lines.append(f"{f.name} = {value!r}{default}\n    {f.doc}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<graphjit Config: {', '.join(f'{k}={v!r}' for k, v in self._values.items())}>"

    def update_from_string(self, text: str) -> None:
        """Set flags from 'name=value,name=value' (the GRAPHJIT_FLAGS syntax)."""
        for name, value in parse_flags_string(text).items():
            setattr(self, name, value)

    @contextlib.contextmanager
    def change_flags(self, **changes: Any) -> Iterator["Config"]:
        """Context manager setting some flags and restoring them on exit (also on error)."""
        for name in changes:
            self._flag(name)
        saved = {name: self._values[name] for name in changes}
        try:
            for name, value in changes.items():
                setattr(self, name, value)
            yield self
        finally:
            self._values.update(saved)


def parse_flags_string(text: str) -> Dict[str, str]:
    """Split 'a=1,b=2' into {'a': '1', 'b': '2'}; empty items are skipped."""
    result: Dict[str, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{ENV_FLAGS}: expected name=value, got {item!r}")
        result[name.strip()] = value.strip()
    return result


def _config_from_environment() -> Config:
    cfg = Config()
    text: Optional[str] = os.environ.get(ENV_FLAGS)
    if text:
        try:
            cfg.update_from_string(text)
        except ConfigError as e:
            raise ConfigError(f"in the environment variable {ENV_FLAGS}={text!r}: {e}") from None
    return cfg


config = _config_from_environment()

# the flag values themselves (the dict config reads and writes): a hot path checks a flag with one lookup, not
# through Config.__getattr__ (graph/test_value.py)
FLAG_VALUES: Dict[str, Any] = config._values
change_flags = config.change_flags
