"""The GraphContext ops lower through: values, messages, allocation, views, errors and BLAS of one FunctionGraph's
native entry (built by driver/native_entry.py, which re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply, Constant, Variable

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.protocol import GJ_ERR_INDEX, GJ_ERR_LINALG, GJ_ERR_MEMORY, GJ_ERR_OVERFLOW, GJ_ERR_RUNTIME, GJ_ERR_VALUE, GJ_ERR_ZERO_DIVISION
from graphjit.link.llvm.ir.blas_shims import routine
from graphjit.link.llvm.ir.buffers import take_or_allocate
from graphjit.link.llvm.ir.context import LowerContext, at_block_end, glue_function
from graphjit.link.llvm.ir.layouts import I32, I64, I8P, PYOBJ_PP, is_native_tensor
from graphjit.link.llvm.ir.stack_temps import StackBudget
from graphjit.link.llvm.ir.arith import product
from graphjit.link.llvm.jit.runtime import BLAS_SIGNATURES, blas_source

_EXC_CODES = {"ValueError": GJ_ERR_VALUE, "IndexError": GJ_ERR_INDEX,
              "ZeroDivisionError": GJ_ERR_ZERO_DIVISION, "MemoryError": GJ_ERR_MEMORY,
              "RuntimeError": GJ_ERR_RUNTIME, "LinAlgError": GJ_ERR_LINALG,
              "OverflowError": GJ_ERR_OVERFLOW}
_ITEMSIZE = {str(L.llvm_scalar_type(d)): L.itemsize(d) for d in L.NATIVE_DTYPES}   # by LLVM memory type


@dataclass
class Value:
    """A lowered Variable: its IR pointer, and whether its struct describes exactly its parent ndarray."""

    ptr: ir.Value
    owns_parent: bool = False


class GraphContext(LowerContext):
    """LowerContext for one FunctionGraph: values, messages, allocation, views, errors, BLAS (docs/lowering.md)."""

    lengths: Any = None     # what the graph proves about lengths (a loops/lengths.py Lengths); None: nothing
    guard: int = 0          # NanGuardMode's checks (node_hooks.GUARD_* bits) fused loops make per element

    def __init__(self, builder: ir.IRBuilder, rt: ir.Value, fgraph: Any, order: Sequence[Apply],
                 out_args: Sequence[ir.Value], parallel: bool) -> None:
        super().__init__(builder, rt)
        self.fgraph, self.order = fgraph, list(order)
        self.index = {n: i for i, n in enumerate(order)}
        self.values: dict[Variable, Value] = {}
        self.messages: list[str] = []
        self.message_nodes: list[int] = []     # the node each message is about (-1: none)
        self.out_args = list(out_args)
        self.n_out = len(out_args)
        self.n_temp = 0
        self.parallel = parallel
        self.compact = False                   # elementwise groups through shared drivers (elementwise_driver)
        self.current_node: Apply | None = None
        self.table: ir.Value | None = None     # the callback table argument (ir/callbacks.py), if the entry has it
        self.in_slot: set[int] = set()
        self.scalar_inputs: set[Variable] = set()   # 0-d inputs fncall may give a parentless stack buffer
        self.uses_blas = False
        self.hot_glue = False                  # glue runs per loop iteration (a scan body): never the light pipeline
        self.releases_gil = False              # a lowering's work is long whatever the arguments (draws): always
        self.buffer_slots: list[int] = []      # temporaries whose buffers are cached across calls (ir/buffers.py)
        self.stack = StackBudget()             # small static temporaries on the stack (ir/stack_temps.py)
        self.kernels: dict[tuple, ir.Function] = {}   # kernels shared by identical groups (loops.build_kernel)
        self.adapters: dict[tuple, ir.Function] = {}  # and their adapters (loops/drivers.py)
        self.parallel_bodies: dict[tuple, ir.Function] = {}   # their outlined thread bodies (ir/threads.py)
        self._n_const = 0
        self._final: dict[int, ir.Block] = {}          # id(struct) -> block from which its fields are final
        self._fields: dict[tuple[int, str, int | None], ir.Value] = {}
        self._contiguous: set[int] = set()             # id(struct) of the C-contiguous arrays allocated here

    # ---------------------------------------------------------------- array fields, loaded once
    def finalize(self, struct: ir.Value) -> None:
        """Declare struct's fields final from the current block on (it dominates every later node).

        field() then loads each field once, in that block, and every later node reuses the load: a large
        graph's entry read the same shape and strides once per check and loop (a fifth of its instructions).
        """
        if isinstance(struct.type, ir.PointerType):
            self._final.setdefault(id(struct), self.builder.block)

    def field(self, arr: ir.Value, name: str, dim: int | None = None) -> ir.Value:
        """LowerContext.field; a finalized struct's field is loaded once where it became final."""
        block = self._final.get(id(arr))
        if block is None:
            return super().field(arr, name, dim)
        key = (id(arr), name, dim)
        value = self._fields.get(key)
        if value is None and name == "strides" and id(arr) in self._contiguous and dim is not None:
            value = self._fields[key] = self._c_stride(arr, dim, block)
        elif value is None:
            with at_block_end(self.builder, block):
                value = self._fields[key] = super().field(arr, name, dim)
        return value

    def _c_stride(self, arr: ir.Value, dim: int, block: ir.Block) -> ir.Value:
        """strides[dim] of a finalized C-contiguous array this entry allocated: the item size times the later
        lengths, a constant for the last (numpy's and buf.take's C strides, length-1 dimensions included; numpy
        gives a zero-size array strides 0, but no element of it is ever addressed)."""
        sty = arr.type.pointee
        lengths = [self.field(arr, "shape", d) for d in range(dim + 1, sty.elements[5].count)]
        with at_block_end(self.builder, block):
            return product(self.builder, lengths + [I64(_ITEMSIZE[str(sty.elements[4].pointee)])])

    def as_bytes(self, struct: ir.Value) -> ir.Value:
        """struct as an i8*, one bitcast per struct: in the function's entry block for a stack slot or an argument
        of the function being built (the pointer never changes), else where a finalized struct became final."""
        key = (id(struct), "i8*", None)
        value = self._fields.get(key)
        if value is not None:
            return value
        block = self._final.get(id(struct))
        fn = self.builder.function
        if (isinstance(struct, ir.AllocaInstr) and struct.parent.parent is fn) or \
                (isinstance(struct, ir.Argument) and struct.parent is fn):
            block = fn.entry_basic_block
        if block is None:
            return self.builder.bitcast(struct, I8P)
        with at_block_end(self.builder, block):
            value = self._fields[key] = self.builder.bitcast(struct, I8P)
        return value

    def data_bytes(self, arr: ir.Value) -> ir.Value:
        """LowerContext.data_bytes; a finalized struct's data pointer is cast once, where it became final."""
        block = self._final.get(id(arr))
        if block is None:
            return super().data_bytes(arr)
        key = (id(arr), "data.i8*", None)
        value = self._fields.get(key)
        if value is None:
            data = self.field(arr, "data")
            with at_block_end(self.builder, block):
                value = self._fields[key] = self.builder.bitcast(data, I8P)
        return value

    def know(self, struct: ir.Value, name: str, dim: int | None, value: ir.Value) -> None:
        """field(struct, name, dim) is value from here on (a finalized struct whose field is a compile-time constant:
        a declared static length, which the callers of the entry check, or a stack temporary's layout)."""
        self._fields[(id(struct), name, dim)] = value

    def know_shape(self, struct: ir.Value, shape: Sequence[ir.Value]) -> None:
        """struct was allocated with these lengths (values of the top level, dominating every later node): later
        reads of its shape are these very values, so a broadcast check against an operand of the same origin
        is skipped (loops.loop_shape.broadcast_shape compares by identity).  Constants already known stay."""
        for d, n in enumerate(shape):
            self._fields.setdefault((id(struct), "shape", d), n)

    def know_static_shape(self, struct: ir.Value, shape: Sequence[int | None]) -> None:
        """The declared static lengths of struct's dims as constants (and nitems when all are static)."""
        for d, n in enumerate(shape):
            if n is not None:
                self.know(struct, "shape", d, I64(n))
        if all(n is not None for n in shape):
            self.know(struct, "nitems", None, I64(int(np.prod(shape, dtype=np.int64))))

    def mark_contiguous(self, struct: ir.Value) -> None:
        """struct describes a fresh C-contiguous buffer for the rest of the entry (never re-pointed)."""
        self._contiguous.add(id(struct))

    def known_contiguous(self, arr: ir.Value) -> bool:
        """LowerContext.known_contiguous: arrays this entry allocated (allocate, allocate_temp)."""
        return id(arr) in self._contiguous

    # ---------------------------------------------------------------- naming and errors
    def node_index(self, node: Apply | None) -> int:
        """The toposort position of node (-1 for None)."""
        return self.index.get(node, -1) if node is not None else -1

    def name(self, node: Apply, what: str) -> str:
        """A deterministic IR name for something of node."""
        return f"node{self.node_index(node)}.{what}"

    def message(self, node: Apply | None, exc: str, text: str) -> int:
        """Register an error-message template (%lld fields, %% for %) of node; returns its index.

        The module never holds it: ir/errors.py words the error in Python, adding the node and its line.
        """
        self.messages.append(text)
        self.message_nodes.append(self.node_index(node))
        return len(self.messages) - 1

    def raise_if(self, cond: ir.Value, node: Apply, exc: str, text: str, args: Sequence[Any] = ()) -> None:
        """If cond (i1), raise exc(text % args) from the native entry (args: up to 3 i64)."""
        msg = self.message(node, exc, text)
        self.error_if(cond, _EXC_CODES[exc], msg=msg, node=self.node_index(node), args=list(args))

    def scalar_error_if(self, cond: ir.Value, exc: str, text: str) -> None:
        """Scalar lowerings report errors through this (a ValueError of the current node)."""
        self.raise_if(cond, self.current_node, exc, text)

    # ---------------------------------------------------------------- values
    def value(self, var: Variable) -> ir.Value:
        """The IR pointer of var (constants are materialised on first use)."""
        if var not in self.values:
            if not isinstance(var, Constant):
                raise KeyError(f"no value for {var}")
            self.values[var] = Value(self._constant(var))
        return self.values[var].ptr

    def _constant(self, var: Constant) -> ir.Value:
        if not is_native_tensor(var):
            return ir.Constant(PYOBJ_PP, None)
        data = np.ascontiguousarray(np.asarray(var.data, dtype=var.type.dtype))
        k = self._n_const
        self._n_const += 1
        raw = data.tobytes() or b"\x00"
        g = ir.GlobalVariable(self.module, ir.ArrayType(L.I8, len(raw)), f"const{k}.data")
        g.linkage, g.global_constant, g.align = "private", True, 64
        g.initializer = ir.Constant(g.type.pointee, bytearray(raw))
        elem = L.llvm_scalar_type(var.type.dtype).as_pointer()
        struct = self.view(None, var.type.dtype, [I64(s) for s in data.shape],
                           [I64(s) for s in data.strides], self.builder.bitcast(g, elem), name=f"const{k}")
        # its layout is known here: lengths are constants and it is C-contiguous (no layout checks on it)
        self.know_static_shape(struct, data.shape)
        for d, s in enumerate(data.strides):
            self.know(struct, "strides", d, I64(s))
        self.mark_contiguous(struct)
        return struct

    def view(self, base: ir.Value | None, dtype: str, shape: Sequence[ir.Value], strides: Sequence[ir.Value],
             data: ir.Value, name: str = "view") -> ir.Value:
        """A new array struct (on the stack) over existing memory; parent copied from base."""
        struct = self.alloca(L.array_struct(dtype, len(shape)), name=name)
        parent = self.field(base, "parent") if base is not None else ir.Constant(I8P, None)
        self.builder.call(_view_filler(self.module, dtype, len(shape)), [struct, parent, data, *shape, *strides])
        return struct

    def allocate(self, node: Apply, i: int, shape: Sequence[ir.Value]) -> ir.Value:
        """A fresh C-contiguous array for output i of node (a graph output's own slot, else a temporary)."""
        var = node.outputs[i]
        dtype = var.type.dtype
        for j, out in enumerate(self.fgraph.outputs):
            if out is var and j not in self.in_slot:
                self.in_slot.add(j)
                self.allocate_array(j, self.out_args[j], dtype, list(shape))
                self.settle(self.out_args[j])
                return self.out_args[j]
        struct = self.stack_temporary(var, self.name(node, f"out{i}"))
        if struct is not None:
            return struct
        struct, slot, spare = self.reserve_temp(dtype, len(shape), self.name(node, f"out{i}"))
        take_or_allocate(self, slot, spare, struct, L.dtype_name(dtype), list(shape))
        self.settle(struct)
        return struct

    def temp_array(self, node: Apply, dtype: str, shape: Sequence[ir.Value], what: str) -> ir.Value:
        """A C-contiguous scratch array of shape for node (never a graph output's slot): a cached temporary here;
        an inner graph's context (driver/inner_graph.py) gives a buffer reused across loop iterations instead."""
        struct, slot, spare = self.reserve_temp(dtype, len(shape), self.name(node, what))
        take_or_allocate(self, slot, spare, struct, L.dtype_name(dtype), list(shape))
        self.mark_contiguous(struct)
        return struct

    def temporary(self, node: Apply, i: int) -> tuple[ir.Value, int, int] | None:
        """(struct, slot, spare slot) reserved for output i of node when it is a cached temporary (not a graph
        output, nor small enough for the stack: allocate puts those there), as reserve_temp; else None."""
        var = node.outputs[i]
        if any(out is var for out in self.fgraph.outputs) or self.stack.fits(var):
            return None
        return self.reserve_temp(var.type.dtype, var.type.ndim, self.name(node, f"out{i}"))

    def stack_temporary(self, var: Variable, name: str) -> ir.Value | None:
        """A C-contiguous array struct over an alloca of the entry for the temporary var (ir/stack_temps.py), or None."""
        if not self.stack.fits(var):
            return None
        shape = [int(s) for s in var.type.shape]
        itemsize = L.itemsize(var.type.dtype)
        count = int(np.prod(shape, dtype=np.int64))
        self.stack.bytes += itemsize * count
        self.stack.count += 1
        self.stack.vars.add(var)
        elem = L.llvm_scalar_type(var.type.dtype)
        data = self.alloca(ir.ArrayType(elem, max(count, 1)), name=f"{name}.stack")
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
        data = self.builder.bitcast(data, elem.as_pointer())
        struct = self.view(None, var.type.dtype, [I64(n) for n in shape], [I64(st) for st in strides], data, name=name)
        self.settle(struct)
        self.know_static_shape(struct, shape)
        for d, st in enumerate(strides):
            self.know(struct, "strides", d, I64(st))
        self.know(struct, "data", None, data)
        self.know(struct, "parent", None, ir.Constant(I8P, None))
        return struct

    def reserve_temp(self, dtype: str, ndim: int, name: str) -> tuple[ir.Value, int, int]:
        """(struct, slot, spare slot) of a new cached temporary, filled by the caller (buffers.take_or_allocate,
        or one of the buffers' obtain helpers inside a glue function), then settle(struct)."""
        slot, spare = self.n_out + self.n_temp, self.n_out + self.n_temp + 1
        self.n_temp += 2
        self.buffer_slots.append(slot)
        return self.alloca(L.array_struct(dtype, ndim), name=name), slot, spare

    def settle(self, struct: ir.Value) -> None:
        """struct now holds a fresh C-contiguous array (fields final from here on)."""
        self.finalize(struct)
        self.mark_contiguous(struct)

    def blas(self, name: str) -> ir.Function:
        """BLAS routine `name` with the LP64 Fortran ABI (ir/blas_shims.routine); the linker publishes it."""
        self.uses_blas = True
        return routine(self.module, name, BLAS_SIGNATURES[name], blas_source())


def _view_filler(module: ir.Module, dtype: str, ndim: int) -> ir.Function:
    """``void glue.view.<dtype>.<ndim>(struct*, i8* parent, T* data, i64 length..., i64 stride...)``: fills a
    view's array struct (one call at each view instead of a store per field: views are many in a large graph)."""
    sty = L.array_struct(dtype, ndim)

    def build(fn: ir.Function) -> None:
        struct, parent, data, *dims = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        fields = [ir.Constant(I8P, None), parent, product(b, dims[:ndim]), I64(L.itemsize(dtype)), data]
        for i, v in enumerate(fields):
            b.store(v, b.gep(struct, [I32(0), I32(i)], inbounds=True))
        for d in range(ndim):
            b.store(dims[d], b.gep(struct, [I32(0), I32(5), I32(d)], inbounds=True))
            b.store(dims[ndim + d], b.gep(struct, [I32(0), I32(6), I32(d)], inbounds=True))
        b.ret_void()

    fnty = ir.FunctionType(ir.VoidType(), [sty.as_pointer(), I8P, L.llvm_scalar_type(dtype).as_pointer()]
                           + [I64] * (2 * ndim))
    return glue_function(module, f"view.{L.dtype_name(dtype)}.{ndim}", fnty, build)


# ---------------------------------------------------------------- fused groups
