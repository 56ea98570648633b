"""The fallback: a node without ``lower`` runs its Python ``perform``, called back from the native entry.

IR side: ``i8* gj_fallback(i8* rt, i8* table, i32 node, i8** inputs, i8** outputs)`` (one symbol, published
with ``add_symbol``; the IR holds no address).  ``table`` is a hidden last input of the entry: the
FallbackTable of the Function (a PyObject*).  Each input pointer is an array struct or a PyObject* slot; the
callback fills each output's struct (or slot) and keeps the results alive until the next call.  It returns
NULL, or a borrowed exception the native side raises with ``PyErr_SetObject``.  The GIL is held throughout:
graphs with fallbacks never release it.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from graphjit.link.llvm.jit import binding as _binding
from graphjit.graph.basic import Apply, Constant
from graphjit.graph.utils import user_stacklevel
from graphjit.link.basic import raise_with_op
from graphjit.link.fallback_warning import FallbackWarning, fallback_message  # noqa: F401  (its old path)

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_PYTHON
from graphjit.link.llvm.ir.graph_context import GraphContext, Value
from graphjit.link.llvm.ir.layouts import I32, I64, I8P, is_native_tensor
from graphjit.link.llvm.jit.symbols import CallbackSymbol, provide




_WARNED: set = set()


def warn_fallbacks(nodes: Sequence[Apply]) -> None:
    """Warn at compile time, once per op per process, listing the ops that run through perform (and their native
    alternatives); the warning names the user's line that compiled the graph."""
    fresh = {(type(n.op).__module__, type(n.op).__qualname__, str(n.op)) for n in nodes} - _WARNED
    if fresh:
        _WARNED.update(fresh)
        names = sorted(name for _, _, name in fresh)
        warnings.warn(fallback_message(nodes, names), FallbackWarning, stacklevel=user_stacklevel())


class _ArrayView:
    """Exposes a native array struct to numpy (__array_interface__), keeping its owner alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, iface: dict, owner: Any) -> None:
        self.__array_interface__ = iface
        self.owner = owner


def _struct_type(ndim: int) -> type:
    return _STRUCTS.setdefault(ndim, type(f"ArrayStruct{ndim}", (ctypes.Structure,), {"_fields_": [
        ("meminfo", ctypes.c_void_p), ("parent", ctypes.c_void_p), ("nitems", ctypes.c_int64),
        ("itemsize", ctypes.c_int64), ("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * ndim),
        ("strides", ctypes.c_int64 * ndim)]}))


_STRUCTS: dict[int, type] = {}


def array_from_struct(addr: int, dtype: np.dtype, ndim: int) -> np.ndarray:
    """An ndarray over the memory an array struct at addr describes."""
    s = _struct_type(ndim).from_address(addr)
    owner = ctypes.cast(s.parent, ctypes.py_object).value if s.parent else None
    shape, strides = tuple(s.shape), tuple(s.strides)
    if isinstance(owner, np.ndarray) and owner.shape == shape and owner.strides == strides \
            and owner.__array_interface__["data"][0] == (s.data or 0):
        return owner
    iface = {"shape": shape, "strides": strides, "typestr": dtype.str, "data": (s.data or 0, False),
             "version": 3}
    return np.asarray(_ArrayView(iface, owner))


def fill_struct(addr: int, arr: np.ndarray) -> None:
    """Describe arr in the array struct at addr (parent = arr, which the caller keeps alive)."""
    s = _struct_type(arr.ndim).from_address(addr)
    s.meminfo, s.parent = None, id(arr)
    s.nitems, s.itemsize = arr.size, arr.itemsize
    s.data = arr.__array_interface__["data"][0]
    s.shape[:] = arr.shape
    s.strides[:] = arr.strides


class FallbackTable:
    """Per Function: the fallback nodes by toposort index, and the results kept alive until the next call.

    What a call keeps alive (results, the exception being raised) is per thread: perform is Python code, so
    another thread may run the same Function in between two fallback nodes of this call.
    """

    def __init__(self, order: Sequence[Apply], nodes: Sequence[Apply]) -> None:
        self.order = list(order)
        self.plans = {self.order.index(n): n for n in nodes}
        self.first = min(self.plans) if self.plans else -1
        self._local = threading.local()

    @property
    def keep(self) -> list:
        """The values this thread's current call keeps alive."""
        local = self._local
        if not hasattr(local, "keep"):
            local.keep = []
        return local.keep

    @property
    def error(self) -> BaseException | None:
        """The exception this thread's last fallback node raised (kept alive for the native side)."""
        return getattr(self._local, "error", None)

    @error.setter
    def error(self, value: BaseException | None) -> None:
        self._local.error = value

    def run(self, index: int, ins: int, outs: int) -> int:
        """Run node `index`'s perform; 0, or id() of the exception to raise (kept in self.error)."""
        if index == self.first:
            self.keep.clear()
        self.error = None
        node = self.plans[index]
        values: list = []
        try:
            in_ptrs = (ctypes.c_void_p * max(len(node.inputs), 1)).from_address(ins)
            values = [self._input(v, in_ptrs[k]) for k, v in enumerate(node.inputs)]
            cells = [[None] for _ in node.outputs]
            params = (node.op.get_params(node),) if node.op.params_type is not None else ()
            node.op.perform(node, values, cells, *params)
            out_ptrs = (ctypes.c_void_p * max(len(node.outputs), 1)).from_address(outs)
            for k, (var, cell) in enumerate(zip(node.outputs, cells)):
                self._output(var, cell[0], out_ptrs[k])
            return 0
        except Exception as exc:            # noqa: BLE001 - reported to the caller of the native entry
            try:
                raise_with_op(node, exc, values, index)
            except Exception as wrapped:     # noqa: BLE001
                self.error = wrapped
            return id(self.error)

    def _input(self, var: Any, ptr: int) -> Any:
        if isinstance(var, Constant):
            return var.data
        if is_native_tensor(var):
            return array_from_struct(ptr, var.type.numpy_dtype, var.type.ndim)
        return ctypes.cast(ctypes.c_void_p.from_address(ptr).value, ctypes.py_object).value

    def _output(self, var: Any, value: Any, ptr: int) -> None:
        if is_native_tensor(var):
            arr = np.asarray(value)
            want = var.type.numpy_dtype
            if arr.dtype != want or not arr.flags.aligned:
                arr = arr.astype(want)
            if arr.ndim != var.type.ndim:
                raise TypeError(f"perform of {var.owner.op} returned a {arr.ndim}-d array for the "
                                f"{var.type.ndim}-d output {var}")
            self.keep.append(arr)
            fill_struct(ptr, arr)
        else:
            self.keep.append(value)
            ctypes.c_void_p.from_address(ptr).value = id(value)


def _callback(rt: int, table: int, index: int, ins: int, outs: int) -> int:
    return ctypes.cast(table, ctypes.py_object).value.run(index, ins, outs) or None


_FALLBACK = CallbackSymbol("gj_fallback", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                                            ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p),
                           _callback)


def publish_callback() -> None:
    """Publish gj_fallback and PyErr_SetObject, which the fallback's error path calls (once per process)."""
    _FALLBACK.publish()
    if not _binding.address_of_symbol("PyErr_SetObject"):
        _binding.add_symbol("PyErr_SetObject", ctypes.cast(ctypes.pythonapi.PyErr_SetObject, ctypes.c_void_p).value)


provide("PyErr_SetObject", publish_callback)


def emit_fallback_call(gctx: GraphContext, node: Apply, table: ir.Value) -> None:
    """Emit the call of node's perform through gj_fallback; outputs become struct pointers or slots."""
    b = gctx.builder
    k = gctx.node_index(node)
    ins = gctx.alloca(ir.ArrayType(I8P, max(len(node.inputs), 1)), name=f"node{k}.ins")
    outs = gctx.alloca(ir.ArrayType(I8P, max(len(node.outputs), 1)), name=f"node{k}.outs")
    for i, var in enumerate(node.inputs):
        ptr = ir.Constant(I8P, None) if isinstance(var, Constant) else b.bitcast(gctx.value(var), I8P)
        b.store(ptr, b.gep(ins, [I32(0), I32(i)], inbounds=True))
    results = []
    for i, var in enumerate(node.outputs):
        layout = L.array_struct(var.type.dtype, var.type.ndim) if is_native_tensor(var) else I8P
        slot = gctx.alloca(layout, name=f"node{k}.out{i}")
        results.append(slot)
        b.store(b.bitcast(slot, I8P), b.gep(outs, [I32(0), I32(i)], inbounds=True))
    fnty = ir.FunctionType(I8P, [I8P, I8P, I32, I8P.as_pointer(), I8P.as_pointer()])
    exc = gctx.call_external("gj_fallback", fnty, [b.bitcast(gctx.rt, I8P), b.load(table), I32(k),
                                                   b.gep(ins, [I32(0), I32(0)]), b.gep(outs, [I32(0), I32(0)])])
    with b.if_then(b.icmp_unsigned("!=", exc, ir.Constant(I8P, None)), likely=False):
        tp = b.load(b.bitcast(b.gep(exc, [I64(L.PYOBJECT_TYPE_OFFSET)]), I8P.as_pointer()))
        gctx.call_external("PyErr_SetObject", ir.FunctionType(ir.VoidType(), [I8P, I8P]), [tp, exc])
        gctx.return_error(GJ_ERR_PYTHON, node=k)
    view_like = bool(node.op.view_map or node.op.destroy_map)
    for var, slot in zip(node.outputs, results):
        gctx.values[var] = Value(slot, owns_parent=is_native_tensor(var) and not view_like)
