"""Tags: the scratchpad of a Variable or Apply (``var.tag.trace``, ``var.tag.test_value``), as in Theano.

A tag is an object with attributes. It also answers the dict-style calls older code uses
(``tag["trace"]``, ``tag.get(...)``, ``tag.setdefault(...)``, ``"x" in tag``), so both spellings work.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Tuple

# entries that are caches of compiled functions: neither copied to a clone nor pickled
_TRANSIENT = ("_eval_fns",)


class Tag:
    """Attributes attached to a graph node; also readable and writable like a dict."""

    def __init__(self, **entries: Any) -> None:
        self.__dict__.update(entries)

    # --- dict-style access (compatibility) ---------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        try:
            return self.__dict__[key]
        except KeyError:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self.__dict__[key]

    def __contains__(self, key: object) -> bool:
        return key in self.__dict__

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.__dict__))

    def get(self, key: str, default: Any = None) -> Any:
        """The entry key, or default."""
        return self.__dict__.get(key, default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The entry key, set to default first if absent."""
        if key not in self.__dict__:
            setattr(self, key, default)
        return self.__dict__[key]

    def pop(self, key: str, *default: Any) -> Any:
        """Remove and return the entry key (or default)."""
        return self.__dict__.pop(key, *default)

    def keys(self) -> List[str]:
        """The entry names."""
        return list(self.__dict__)

    def items(self) -> List[Tuple[str, Any]]:
        """(name, value) pairs."""
        return list(self.__dict__.items())

    def update(self, other: Any = (), **entries: Any) -> None:
        """Set entries from a mapping (or Tag) and keywords."""
        pairs = other.items() if hasattr(other, "items") else other
        for key, value in pairs:
            setattr(self, key, value)
        for key, value in entries.items():
            setattr(self, key, value)

    # --- copying and pickling ----------------------------------------------------------------
    def _entries(self) -> Dict[str, Any]:
        entries = dict(self.__dict__)
        for key in _TRANSIENT:
            entries.pop(key, None)
        return entries

    def copy(self) -> "Tag":
        """A shallow copy without cached compiled functions (what a cloned node gets)."""
        cp = Tag.__new__(type(self))
        cp.__dict__.update(self._entries())
        return cp

    def __getstate__(self) -> Dict[str, Any]:
        return self._entries()

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({inner})"


class VariableTag(Tag):
    """A Variable's tag: assigning ``test_value`` filters the value through the Variable's Type."""

    __slots__ = ("_type",)

    def __init__(self, type: Any, trace: Any) -> None:
        _set_type(self, type)
        self.__dict__["trace"] = trace

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "test_value":
            value = filter_test_value(self._type, value)
        object.__setattr__(self, name, value)

    def copy(self) -> "VariableTag":
        """A shallow copy without cached compiled functions (what a cloned Variable gets)."""
        cp = Tag.__new__(type(self))
        _set_type(cp, self._type)
        cp.__dict__.update(self._entries())
        return cp

    def __getstate__(self) -> Tuple[Dict[str, Any], Any]:     # type: ignore[override]
        return self._entries(), getattr(self, "_type", None)

    def __setstate__(self, state: Any) -> None:
        entries, typ = state
        _set_type(self, typ)
        self.__dict__.update(entries)


_set_type = VariableTag._type.__set__     # the slot's setter, bypassing __setattr__


def variable_tag(type: Any, tag: Any) -> VariableTag:
    """tag as a VariableTag of a Variable of this type (a dict from an older pickle is converted)."""
    if isinstance(tag, VariableTag):
        return tag
    new = VariableTag(type, None)
    new.__dict__.update(dict(tag) if tag is not None else {})
    return new


def filter_test_value(typ: Any, value: Any) -> Any:
    """value checked and converted by typ.filter (a clear TypeError naming the Type otherwise)."""
    if typ is None:
        return value
    try:
        return typ.filter(value)
    except (TypeError, ValueError) as e:
        raise type(e)(f"bad test value for a variable of type {typ}: {e}") from None
