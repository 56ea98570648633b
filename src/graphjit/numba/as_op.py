"""numba -> graphjit: ``as_op`` turns a numba-compiled function into an Op that the LLVM backend calls natively.

``perform`` (PY mode, fallbacks) calls the njit dispatcher from Python. ``lower`` calls a numba ``cfunc``
compiled over the same function, whose address is published with ``llvmlite.binding.add_symbol`` under a
name derived from the function's code and signature (so the IR, and the cache key, stay deterministic):

* tensor ops: ``i32 cfunc(i8** inputs, i8** results)`` takes pointers to the inputs' array structs (numba's
  layout, passed as they are) and writes the structs of the arrays the function returned (NRT-owned); the IR
  copies them into graphjit-allocated outputs and releases the NRT memory. Status 1 = the function raised.
* ``elementwise=True`` (a scalar -> scalar function, as for ``@vectorize``): a ScalarOp whose
  ``lower_scalar`` calls ``T cfunc(T...)`` per element, so it fuses into the surrounding Elemwise loop.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Sequence

import numpy as np
from llvmlite import ir

import numba
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.numpy_support import from_dtype

from graphjit.link.llvm.jit import binding as _binding
from graphjit.graph.basic import Apply
from graphjit.graph.op import Op
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.loops.nest import copy_array
from graphjit.link.llvm.jit.symbols import provide
from graphjit.numba.overload import publish_nrt
from graphjit.scalar.basic import ScalarOp
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.elemwise import Elemwise
from graphjit.tensor.type import TensorType
from graphjit.graph import forksafe

_SYMBOLS: dict[str, Any] = {}        # symbol -> its cfunc (published)
_SYMBOLS_LOCK = forksafe.new_lock()


def _dispatcher(fn: Callable[..., Any]) -> Any:
    """The njit dispatcher of fn (plain Python functions are jitted)."""
    return fn if hasattr(fn, "py_func") else numba.njit(fn)


def symbol_name(fn: Any, kind: str, signature: Sequence[Any]) -> str:
    """A deterministic symbol for fn's cfunc: its module, qualified name, bytecode, constants, the values
    its closure and globals hold, and the signature (two functions of one code that capture different
    values are different ops)."""
    py = fn.py_func
    text = repr((py.__module__, py.__qualname__, _function_text(py, set()), kind, [str(s) for s in signature]))
    return f"gj_numba_{py.__name__}_{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _function_text(py: Any, seen: set) -> tuple:
    """A function's code text with the values of its closure cells and of the globals its code names."""
    if id(py) in seen:
        return ("recursive", py.__qualname__)
    seen.add(id(py))
    cells = tuple(_value_text(c.cell_contents, seen) if _cell_full(c) else "<empty>"
                  for c in (py.__closure__ or ()))
    names = sorted(_global_names(py.__code__) & set(py.__globals__))
    return (_code_text(py.__code__), cells, tuple((n, _value_text(py.__globals__[n], seen)) for n in names))


def _cell_full(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _global_names(code: Any) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            names |= _global_names(c)
    return names


def _value_text(v: Any, seen: set) -> Any:
    """A text naming v's value (numba freezes closure and global values into the compiled code).

    Values without a stable text (arbitrary objects) are named by their identity: never shared between
    two ops by mistake, at the cost of no cross-process cache hit for such functions."""
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes, np.generic, np.dtype)):
        return (type(v).__name__, repr(v))
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest())
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, tuple(_value_text(e, seen) for e in v))
    if isinstance(v, type(np)):
        return ("module", v.__name__)
    py = getattr(v, "py_func", v)
    if hasattr(py, "__code__") and hasattr(py, "__globals__"):
        return ("function", py.__module__, py.__qualname__, _function_text(py, seen))
    if callable(v) and getattr(v, "__module__", None) and getattr(v, "__qualname__", None):
        return ("callable", v.__module__, v.__qualname__)       # numpy ufuncs, builtins, classes
    return ("object", type(v).__qualname__, id(v))


def _code_text(code: Any) -> tuple:
    """Bytecode and constants of a code object, nested code objects included (their repr holds addresses)."""
    consts = tuple(_code_text(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts)
    return (code.co_code, consts, code.co_names)


def publish(symbol: str, cfunc_of: Callable[[], Any]) -> None:
    """Publish a cfunc's address under symbol once per process (llvmlite.binding.add_symbol); the cfunc is
    kept alive as long as the process, like the symbol."""
    with _SYMBOLS_LOCK:
        if symbol not in _SYMBOLS:
            cfunc = cfunc_of()
            _binding.add_symbol(symbol, cfunc.address)
            _SYMBOLS[symbol] = cfunc


def _publish_nrt() -> None:
    publish_nrt()


# the tensor ops' IR releases numba's results: a cache hit that skips lowering publishes it through this
provide("gj_NRT_MemInfo_release", _publish_nrt)


def _as_tensor_type(t: Any) -> TensorType:
    if isinstance(t, TensorType):
        return t
    raise TypeError(f"as_op: itypes/otypes must be TensorTypes (e.g. gt.dvector.type... or "
                    f"TensorType('float64', shape=(None,))), got {t!r}")


# ---------------------------------------------------------------- tensor ops

class NumbaOp(Op):
    """An Op computed by a numba-compiled function (see module doc); built by as_op."""

    __props__ = ("symbol", "itypes", "otypes")

    def __init__(self, fn: Any, itypes: Sequence[TensorType], otypes: Sequence[TensorType],
                 grad: Callable[..., Any] | None = None, infer_shape: Callable[..., Any] | None = None) -> None:
        self.fn = _dispatcher(fn)
        self.itypes = tuple(_as_tensor_type(t) for t in itypes)
        self.otypes = tuple(_as_tensor_type(t) for t in otypes)
        self.symbol = symbol_name(self.fn, "tensor", self.itypes + self.otypes)
        self._grad, self._infer_shape = grad, infer_shape
        if infer_shape is not None:
            self.infer_shape = lambda fgraph, node, shapes: infer_shape(fgraph, node, shapes)
        self._cfunc: Any = None
        provide(self.symbol, self.publish)       # a cache hit links code calling it without lowering

    def __str__(self) -> str:
        return f"numba:{self.fn.py_func.__name__}"

    def __reduce__(self) -> tuple:
        return (NumbaOp, (self.fn, self.itypes, self.otypes, self._grad, self._infer_shape))

    def make_node(self, *inputs: Any) -> Apply:
        """Inputs are converted to tensors and must have the declared types."""
        if len(inputs) != len(self.itypes):
            raise TypeError(f"{self} takes {len(self.itypes)} inputs, got {len(inputs)}")
        ins = [t.filter_variable(as_tensor_variable(v)) for v, t in zip(inputs, self.itypes)]
        return Apply(self, ins, [t() for t in self.otypes])

    def perform(self, node: Apply, inputs: Sequence[Any], output_storage: list) -> None:
        """Call the njit dispatcher from Python."""
        result = self.fn(*inputs)
        results = result if len(self.otypes) > 1 else (result,)
        for cell, value, t in zip(output_storage, results, self.otypes):
            cell[0] = np.asarray(value, dtype=t.dtype)

    def grad(self, inputs: Sequence[Any], output_grads: Sequence[Any]) -> list:
        """The user's grad(inputs, output_grads), if given."""
        if self._grad is None:
            raise NotImplementedError(f"{self}: as_op(..., grad=None) has no gradient")
        return self._grad(inputs, output_grads)

    def lower_version(self) -> tuple:
        return (1,)

    def lower(self, ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
        """Call the cfunc on the input structs; copy its NRT results into graphjit outputs, then release them."""
        self.publish()
        b = ctx.builder
        i8pp = L.I8P.as_pointer()
        ins = ctx.alloca(ir.ArrayType(L.I8P, max(len(inputs), 1)), name=ctx.name(node, "numba_ins"))
        for k, ptr in enumerate(inputs):
            b.store(b.bitcast(ptr, L.I8P), b.gep(ins, [L.I32(0), L.I32(k)], inbounds=True))
        results = [ctx.alloca(L.array_struct(t.dtype, t.ndim), name=ctx.name(node, f"numba_res{j}"))
                   for j, t in enumerate(self.otypes)]
        outs = ctx.alloca(ir.ArrayType(L.I8P, len(results)), name=ctx.name(node, "numba_outs"))
        for j, ptr in enumerate(results):
            b.store(b.bitcast(ptr, L.I8P), b.gep(outs, [L.I32(0), L.I32(j)], inbounds=True))
        fnty = ir.FunctionType(L.I32, [i8pp, i8pp])
        status = ctx.call_external(self.symbol, fnty, [b.bitcast(ins, i8pp), b.bitcast(outs, i8pp)])
        ctx.raise_if(b.icmp_signed("!=", status, L.I32(0)), node, "RuntimeError",
                     f"the numba function {self.fn.py_func.__name__} raised an exception")
        return [self._take_result(ctx, node, j, res) for j, res in enumerate(results)]

    def _take_result(self, ctx: GraphContext, node: Apply, j: int, res: ir.Value) -> ir.Value:
        """A graphjit output holding a copy of the NRT result j (checked against the declared ndim)."""
        t = self.otypes[j]
        shape = ctx.shapes(res, t.ndim)
        out = ctx.allocate(node, j, shape)
        copy_array(ctx, res, out, t.dtype, shape)
        release = ir.FunctionType(ir.VoidType(), [L.I8P])
        ctx.call_external("gj_NRT_MemInfo_release", release, [ctx.field(res, "meminfo")])
        return out

    def publish(self) -> None:
        """Publish the cfunc under self.symbol (compiling it on first use)."""
        publish(self.symbol, self.compiled_cfunc)

    def compiled_cfunc(self) -> Any:
        """The numba cfunc ``int32(void** inputs, void** results)`` over fn (compiled on first use)."""
        if self._cfunc is None:
            publish_nrt()
            self._cfunc = _tensor_cfunc(self.fn, self.itypes, self.otypes)
        return self._cfunc


def _tensor_cfunc(fn: Any, itypes: Sequence[TensorType], otypes: Sequence[TensorType]) -> Any:
    """Compile the C-ABI shim: load the argument structs, call fn, store (and keep) the result structs."""
    in_tys = [types.Array(from_dtype(np.dtype(t.dtype)), t.ndim, "A") for t in itypes]
    out_tys = [types.Array(from_dtype(np.dtype(t.dtype)), t.ndim, "C") for t in otypes]
    load, store = _loader(in_tys), _storer(out_tys)

    def shim(ins: Any, outs: Any) -> int:
        try:
            store(outs, fn(*load(ins)))
        except Exception:  # noqa: BLE001 - any exception becomes the status the IR checks
            return 1
        return 0

    sig = types.int32(types.CPointer(types.voidptr), types.CPointer(types.voidptr))
    return numba.cfunc(sig)(shim)


def _loader(in_tys: Sequence[types.Array]) -> Any:
    """An intrinsic: void** -> tuple of arrays read from the structs the pointers address."""

    @intrinsic
    def load(typingctx: Any, ptrs: Any) -> Any:
        tup = types.Tuple(list(in_tys))

        def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Sequence[ir.Value]) -> Any:
            values = []
            for k, aty in enumerate(in_tys):
                raw = builder.load(builder.gep(args[0], [ir.Constant(ir.IntType(64), k)]))
                struct_ty = context.get_value_type(aty)
                values.append(builder.load(builder.bitcast(raw, struct_ty.as_pointer())))
            return context.make_tuple(builder, tup, values)

        return tup(ptrs), codegen

    return load


def _storer(out_tys: Sequence[types.Array]) -> Any:
    """An intrinsic: (void**, result) -> None, writing each result array's struct (with a new reference)."""

    @intrinsic
    def store(typingctx: Any, ptrs: Any, result: Any) -> Any:
        got = list(result.types) if isinstance(result, types.BaseTuple) else [result]
        if len(got) != len(out_tys) or any(not isinstance(g, types.Array) or g.ndim != o.ndim or
                                           g.dtype != o.dtype for g, o in zip(got, out_tys)):
            raise numba.core.errors.TypingError(f"as_op: the function returns {result}, declared {out_tys}")

        def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Sequence[ir.Value]) -> Any:
            vals = ([builder.extract_value(args[1], j) for j in range(len(got))]
                    if isinstance(result, types.BaseTuple) else [args[1]])
            for j, (g, v) in enumerate(zip(got, vals)):
                context.nrt.incref(builder, g, v)
                raw = builder.load(builder.gep(args[0], [ir.Constant(ir.IntType(64), j)]))
                builder.store(v, builder.bitcast(raw, v.type.as_pointer()))
            return context.get_dummy_value()

        return types.none(ptrs, result), codegen

    return store


# ---------------------------------------------------------------- elementwise (scalar) ops

class NumbaScalarOp(ScalarOp):
    """A scalar op computed per element by a numba cfunc; Elemwise of it fuses with its neighbours."""

    def __init__(self, fn: Any, in_dtypes: Sequence[str], out_dtype: str) -> None:
        self.fn = _dispatcher(fn)
        self.in_dtypes, self.out_dtype = tuple(in_dtypes), out_dtype
        self.symbol = symbol_name(self.fn, "scalar", [*self.in_dtypes, out_dtype])
        super().__init__(self.symbol, len(self.in_dtypes), self._numpy, dtype_rule=lambda *d: out_dtype,
                         allowed_kinds="biuf")
        self._cfunc: Any = None
        provide(self.symbol, self.publish)

    def __str__(self) -> str:
        return f"numba:{self.fn.py_func.__name__}"

    def __reduce__(self) -> tuple:
        return (NumbaScalarOp, (self.fn, self.in_dtypes, self.out_dtype))

    def _numpy(self, *values: Any) -> Any:
        """The Python reference: the njit function applied element by element."""
        arrays = np.broadcast_arrays(*[np.asarray(v, dtype=d) for v, d in zip(values, self.in_dtypes)])
        out = np.empty(arrays[0].shape if arrays else (), dtype=self.out_dtype)
        for idx in np.ndindex(out.shape):
            out[idx] = self.fn(*[a[idx] for a in arrays])
        return out

    def can_lower_scalar(self, in_dtypes: Sequence[str], out_dtype: str) -> bool:
        return True

    def lower_scalar(self, ctx: LowerContext, inputs: Sequence[Any], in_dtypes: Sequence[str], out_dtype: str) -> Any:
        """Cast to the declared dtypes, call the cfunc, cast the result to out_dtype."""
        self.publish()
        b = ctx.builder
        args = [cast_value(b, v, src, dst) for v, src, dst in zip(inputs, in_dtypes, self.in_dtypes)]
        args = [b.zext(a, L.I8) if d == "bool" else a for a, d in zip(args, self.in_dtypes)]
        ret_ty = L.llvm_scalar_type(self.out_dtype)
        fnty = ir.FunctionType(ret_ty, [L.llvm_scalar_type(d) for d in self.in_dtypes])
        result = ctx.call_external(self.symbol, fnty, args)
        if self.out_dtype == "bool":
            result = b.icmp_unsigned("!=", result, L.I8(0))
        return cast_value(b, result, self.out_dtype, out_dtype)

    def publish(self) -> None:
        """Publish the cfunc under self.symbol (compiling it on first use)."""
        publish(self.symbol, self.compiled_cfunc)

    def compiled_cfunc(self) -> Any:
        """The numba cfunc ``out(in...)`` over fn, compiled on first use."""
        if self._cfunc is None:
            sig = from_dtype(np.dtype(self.out_dtype))(*[from_dtype(np.dtype(d)) for d in self.in_dtypes])
            self._cfunc = numba.cfunc(sig)(self.fn.py_func)
        return self._cfunc


# ---------------------------------------------------------------- the public face

def as_op(fn: Callable[..., Any], itypes: Sequence[Any] | None = None, otypes: Sequence[Any] | None = None,
          grad: Callable[..., Any] | None = None, infer_shape: Callable[..., Any] | None = None,
          elementwise: bool = False) -> Any:
    """An Op computing fn (an njit function or a plain one, jitted): tensors in/out, or elementwise scalars.

    Tensor ops: ``itypes``/``otypes`` are TensorTypes; fn returns an array or a tuple of arrays.
    ``elementwise=True``: itypes/otypes are dtypes (``["float64", "float64"]``, ``["float64"]``) and the
    result is an Elemwise over a scalar op (broadcasting, fusion with neighbouring elementwise ops).
    """
    if itypes is None or otypes is None:
        raise TypeError("as_op needs itypes and otypes")
    if elementwise:
        if len(otypes) != 1:
            raise TypeError("as_op(elementwise=True): exactly one output dtype")
        names = [_dtype_name(t) for t in itypes]
        return Elemwise(NumbaScalarOp(fn, names, _dtype_name(otypes[0])))
    return NumbaOp(fn, itypes, otypes, grad=grad, infer_shape=infer_shape)


def _dtype_name(t: Any) -> str:
    """A dtype name from a dtype-like or a Type with a dtype."""
    return np.dtype(getattr(t, "dtype", t)).name


__all__ = ["as_op", "NumbaOp", "NumbaScalarOp", "symbol_name"]
