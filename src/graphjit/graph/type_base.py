"""TypeBase: the root class of every Type, below graph/basic.py so a Variable can check its type.

graph/type.py's Type (which creates Variables, so imports graph/basic.py) is its one direct subclass.
"""


class TypeBase:
    """The root of graph/type.py's Type: ``isinstance(t, TypeBase)`` is ``isinstance(t, Type)``."""

    __slots__ = ()
