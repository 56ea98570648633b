"""compile/vectorcall.py: a class made through PyType_FromSpecWithBases whose instances own a vectorcall slot."""

import ast
import gc
import pathlib
import weakref

import numpy as np
import pytest

import graphjit
import graphjit.tensor as T
from graphjit.compile import vectorcall
from graphjit.compile.compiled_function import Function

ROOT = pathlib.Path(graphjit.__file__).parent

pytestmark = pytest.mark.skipif(not vectorcall.supported(), reason="CPython only")


@vectorcall.with_vectorcall_slot
class Probe:
    """A test class: its ``__call__`` and ``_fallback`` say which path a call took."""

    __slots__ = ()

    def __init__(self, label):
        self.label = label

    def __call__(self, *args, **kwargs):
        return ("__call__", self.label, args, kwargs)

    def _fallback(self, *args, **kwargs):
        return ("_fallback", self.label, args, kwargs)


@pytest.fixture(scope="module")
def add():
    x, y = T.dvector("x"), T.dvector("y")
    return graphjit.function([x, y], x + y, name="add")


def test_the_class_is_made_by_the_c_api_with_the_vectorcall_flag():
    for cls in (Probe, Function):
        assert cls.__flags__ & vectorcall._HAVE_VECTORCALL
        assert cls.__mro__[1].__name__ == cls.__name__ and cls.__mro__[1] is not cls
        assert cls.__module__ == cls.__mro__[1].__module__ and cls.__doc__ == cls.__mro__[1].__doc__
        assert not hasattr(cls, vectorcall._SLOT_MEMBER)           # only set_vectorcall writes the slot


def test_an_unset_slot_calls_dunder_call():
    p = Probe("a")
    assert vectorcall.vectorcall_of(p) == 0
    assert p(1, k=2) == ("__call__", "a", (1,), {"k": 2})


def test_instances_keep_attributes_weakrefs_and_are_collected():
    p = Probe("b")
    p.extra = [p]                                     # a cycle through the instance dict
    assert p.__dict__ == {"label": "b", "extra": [p]}
    p.__dict__ = {"label": "c"}
    assert p.label == "c" and not hasattr(p, "extra")
    p.extra = [p]
    ref = weakref.ref(p)
    del p
    gc.collect()
    assert ref() is None


def test_the_slot_runs_a_compiled_wrapper_with_the_instance_as_self(add):
    p = Probe("d")
    vectorcall.set_vectorcall(p, add.fn.wrapper_address)      # add keeps the code alive
    assert vectorcall.vectorcall_of(p) == add.fn.wrapper_address
    x = np.arange(3.0)
    np.testing.assert_array_equal(p(x, x), 2 * x)
    assert p(x, y=x) == ("_fallback", "d", (x,), {"y": x})     # the wrapper's miss asks self._fallback
    assert p.__call__(x, x)[0] == "__call__"
    vectorcall.set_vectorcall(p, 0)
    assert p(x, x)[0] == "__call__"


def test_set_vectorcall_checks_its_arguments(add):
    p = Probe("e")
    with pytest.raises(ValueError):
        vectorcall.set_vectorcall(p, -1)
    with pytest.raises(TypeError):
        vectorcall.set_vectorcall(p, "0x10")
    with pytest.raises(TypeError, match="no vectorcall slot"):
        vectorcall.set_vectorcall(object(), add.fn.wrapper_address)
    assert vectorcall.vectorcall_of(p) == 0 and p()[0] == "__call__"


def test_subclasses_are_called_through_dunder_call():
    class Sub(Probe):
        pass

    s = Sub("f")
    assert s(1) == ("__call__", "f", (1,), {})
    s.more = 1
    assert weakref.ref(s)() is s


def test_only_slotless_classes_are_accepted():
    class WithDict:
        def __call__(self):
            return None

    with pytest.raises(TypeError, match="__slots__"):
        vectorcall.with_vectorcall_slot(WithDict)


def _memory_writes(path: pathlib.Path) -> list:
    """Calls of ctypes' ``from_address``/``memmove``/``memset`` in a module (how an object's memory is written)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in ("from_address", "memmove", "memset"):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_call_path_reads_and_writes_no_memory_by_address():
    paths = sorted((ROOT / "compile").glob("*.py")) + [ROOT / "link" / "llvm" / "cpython/wrapper.py"]
    assert [hit for path in paths for hit in _memory_writes(path)] == []
