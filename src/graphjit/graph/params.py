"""Op parameter types: EnumType / EnumList (named constants) and ParamsType (a record of params)."""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Tuple

from graphjit.graph.type import Type

_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class EnumType(Type, dict):
    """Named constants usable as op parameters; in LLVM they become integer/float constants."""

    def __init__(self, ctype: str = "double", cname: str = "", **kwargs: Any):
        aliases: Dict[str, str] = {}
        values: Dict[str, Any] = {}
        for name, value in kwargs.items():
            if not _NAME.match(name):
                raise AttributeError(f"{type(self).__name__}: constant name {name!r} must be "
                                     "capital letters, digits and underscores, starting with a letter")
            if isinstance(value, tuple):
                if len(value) != 2 or not isinstance(value[0], str):
                    raise TypeError(f"{name}: an aliased constant is (alias, value), got {value!r}")
                alias, value = value
                if alias in aliases or alias in kwargs:
                    raise TypeError(f"alias {alias!r} is used twice")
                aliases[alias] = name
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, (int, float)):
                raise TypeError(f"{name}: constant values must be int, float or bool, got {value!r}")
            values[name] = value
        dict.__init__(self, values)
        self.aliases = aliases
        self.ctype = ctype
        self.cname = cname or ctype.replace(" ", "_")

    def __getattr__(self, key: str) -> Any:
        if key in self:
            return self[key]
        raise AttributeError(f"{type(self).__name__} has no constant {key!r}")

    def __setattr__(self, key: str, value: Any) -> None:
        if key in self:
            raise AttributeError("constants of an EnumType are read-only")
        object.__setattr__(self, key, value)

    def fromalias(self, alias: str) -> Any:
        """The constant value with this alias (or with this exact name)."""
        if alias in self.aliases:
            return self[self.aliases[alias]]
        return self[alias]

    def get_aliases(self) -> Tuple[str, ...]:
        """The sorted aliases."""
        return tuple(sorted(self.aliases))

    def has_alias(self, alias: str) -> bool:
        """True if alias names a constant of this enum."""
        return alias in self.aliases

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        if not strict and isinstance(data, str):
            if data in self.aliases or data in self:
                return self.fromalias(data)
        if isinstance(data, bool):
            data = int(data)
        if data not in set(self.values()):
            raise TypeError(f"{data!r} is not a value of {self}")
        return data

    def values_eq(self, a: Any, b: Any) -> bool:
        return a == b

    def __eq__(self, other: Any) -> bool:
        return (type(self) is type(other) and self.ctype == other.ctype
                and dict.__eq__(self, other) and self.aliases == other.aliases)

    def __ne__(self, other: Any) -> bool:  # dict.__ne__ would ignore ctype and aliases
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self), self.ctype, tuple(sorted(self.items())),
                     tuple(sorted(self.aliases.items()))))

    def __str__(self) -> str:
        items = ", ".join(f"{k}:{v}" for k, v in sorted(self.items()))
        return f"{type(self).__name__}<{self.ctype}>({items})"

    def __repr__(self) -> str:
        return str(self)


class EnumList(EnumType):
    """An EnumType whose constants are numbered 0..n-1 in the order given."""

    def __init__(self, *names: Any, ctype: str = "int", cname: str = ""):
        kwargs: Dict[str, Any] = {}
        for i, item in enumerate(names):
            if isinstance(item, tuple):
                if len(item) != 2:
                    raise TypeError(f"EnumList: expected (NAME, alias), got {item!r}")
                kwargs[item[0]] = (item[1], i)
            else:
                kwargs[item] = i
        if len(kwargs) != len(names):
            raise TypeError("EnumList: a constant name is repeated")
        super().__init__(ctype=ctype, cname=cname, **kwargs)


class Params(dict):
    """A record of op parameter values (attribute access)."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, _hashable(v)) for k, v in self.items())))


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


class ParamsType(Type):
    """The Type of an op's parameter record: field name -> Type; get_params reads op attributes."""

    def __init__(self, **fields: Type):
        for name, t in fields.items():
            if not isinstance(t, Type):
                raise TypeError(f"ParamsType field {name!r} must be a Type, got {t!r}")
        self.fields: Tuple[Tuple[str, Type], ...] = tuple(fields.items())

    def get_params(self, op: Any) -> Params:
        """A Params of op's attributes named by the fields, each filtered through its Type."""
        return Params({name: t.filter(getattr(op, name)) for name, t in self.fields})

    def filter(self, data: Any, strict: bool = False, allow_downcast: Optional[bool] = None) -> Any:
        if not isinstance(data, dict):
            raise TypeError(f"{self}: expected a Params record, got {type(data).__name__}")
        return Params({name: t.filter(data[name], strict, allow_downcast) for name, t in self.fields})

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other) and self.fields == other.fields

    def __hash__(self) -> int:
        return hash((type(self), self.fields))

    def __str__(self) -> str:
        return "ParamsType<" + ", ".join(f"{n}:{t}" for n, t in self.fields) + ">"
