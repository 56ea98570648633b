"""The function-call wrapper: a Function's whole call in IR (arguments, defaults, keywords, state, locks, updates).

``<prefix>fncall(Function* self, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames)`` is a Function's
vectorcall (compile/vectorcall.py).  It reads the Function's call plan (link/call_plan.py) from the word at
``PLAN_OFFSET`` of ``self`` and does what ``Function.__call__`` did in Python around the native entry:

1. takes the plan's locks (the state containers', in the global order: a call with its updates is atomic with
   respect to other calls sharing the shared variables, compile/locking.py);
2. gathers the graph's inputs: positional arguments, keyword arguments matched by (interned) name, defaults,
   and the current values of the shared variables' cells (held by a reference until the call ends);
3. unboxes them as ``pywrap`` does (every check of DESIGN.md section 6; a 0-d input may also be given a
   Python float/int/bool when the plan allows it: the value goes on the stack, converted and range-checked
   by the rules of scalar/convert.py, anything else takes the slow path);
4. calls the native entry, stores each update into its cell, releases the locks and returns output 0 alone
   or a list of the first ``N_USER`` outputs.

Anything it does not take (a missing or unknown keyword, too many arguments, a value the checks refuse, a
plan whose counts differ from this graph's) goes to ``self._fallback(*args, **kwargs)`` with the original
arguments, after the locks are released: the Python call path, which words the errors.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from graphjit.link import call_plan as P
from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.ir.context import LIKELY, LowerContext, glue_function, set_weights
from graphjit.link.llvm.ir.layouts import I64, I64P, I8P, PYOBJ_PP
from graphjit.link.llvm.cpython.unbox import load_field, unbox_helper
from graphjit.link.llvm.cpython.wrapper import Unbox, Wrapper, cstring, emit_native_call, release_slots, int_fits
from graphjit.link.llvm.cpython.argspec import ArgSpec

__all__ = ["build_function_call", "PYTHON_SCALAR_DTYPES"]

I1 = ir.IntType(1)
PYTHON_SCALAR_DTYPES = ("float64", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                        "uint64", "bool")
_PYOBJ_SIZE_OFFSET = 16          # PyVarObject.ob_size (a tuple's length)
_VOID = ir.VoidType()


def _word(b: ir.IRBuilder, plan: ir.Value, index: ir.Value | int) -> ir.Value:
    idx = I64(index) if isinstance(index, int) else index
    return b.load(b.gep(plan, [idx], inbounds=True))


def _obj(b: ir.IRBuilder, word: ir.Value) -> ir.Value:
    return b.inttoptr(word, I8P)


def _plan_of(b: ir.IRBuilder, self_: ir.Value) -> ir.Value:
    """The i64* plan stored in the Function's plan word (NULL: none)."""
    slot = b.bitcast(b.gep(self_, [I64(P.PLAN_OFFSET)], inbounds=True), I64P.as_pointer())
    return b.load(slot, name="plan")


def _arg_helper(module: ir.Module) -> ir.Function:
    """``i8* glue.fncall.arg(plan, k, args, nargs, kwnames, nkw, i64* matched, i8** held)``: graph input k
    (NULL: not given and no default).  An implicit input's value gets a reference, kept in held[k]."""
    def build(fn: ir.Function) -> None:
        plan, k, args, nargs, kwnames, nkw, matched, held = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = LowerContext(b)
        n_in = _word(b, plan, P.N_IN)
        with b.if_then(b.icmp_signed(">=", k, _word(b, plan, P.N_EXPLICIT)), likely=False):
            cell = _obj(b, _word(b, plan, b.add(k, I64(P.HEADER))))
            value = ctx.call_external("PyList_GetItem", ir.FunctionType(I8P, [I8P, I64]), [cell, I64(0)])
            with b.if_then(b.icmp_unsigned("==", value, ir.Constant(I8P, None)), likely=False):
                ctx.call_external("PyErr_Clear", ir.FunctionType(_VOID, []), [])
                b.ret(value)
            ctx.call_external("Py_IncRef", ir.FunctionType(_VOID, [I8P]), [value])
            b.store(value, b.gep(held, [k], inbounds=True))
            b.ret(value)
        with b.if_then(b.icmp_signed("<", k, nargs), likely=True):
            b.ret(b.load(b.gep(args, [k], inbounds=True)))
        name = _word(b, plan, b.add(b.add(k, n_in), I64(P.HEADER)))
        with b.if_then(b.and_(b.icmp_signed(">", nkw, I64(0)), b.icmp_unsigned("!=", name, I64(0)))):
            items = b.bitcast(b.gep(kwnames, [I64(L.PYTUPLE_ITEMS_OFFSET)], inbounds=True), I64P)
            with ctx.for_range(nkw, name="kw") as i:
                with b.if_then(b.icmp_unsigned("==", b.load(b.gep(items, [i], inbounds=True)), name)):
                    b.store(b.add(b.load(matched), I64(1)), matched)
                    b.ret(b.load(b.gep(args, [b.add(nargs, i)], inbounds=True)))
        b.ret(_obj(b, _word(b, plan, b.add(k, I64(P.HEADER)))))

    fnty = ir.FunctionType(I8P, [I64P, I64, PYOBJ_PP, I64, I8P, I64, I64P, PYOBJ_PP])
    return glue_function(module, "fncall.arg", fnty, build)


def _lock_helper(module: ir.Module) -> ir.Function:
    """``i1 glue.fncall.lock(plan, first, n)``: call acquire of locks 0..n-1 (words first + 2i); on a failure
    release those taken, false (the exception set)."""
    def build(fn: ir.Function) -> None:
        plan, first, n = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = LowerContext(b)
        call = ir.FunctionType(I8P, [I8P])
        with ctx.for_range(n, name="lock") as i:
            acquire = _obj(b, _word(b, plan, b.add(first, b.mul(i, I64(2)))))
            got = ctx.call_external("PyObject_CallNoArgs", call, [acquire])
            with b.if_then(b.icmp_unsigned("==", got, ir.Constant(I8P, None)), likely=False):
                b.call(_unlock_helper(module), [plan, first, i])
                b.ret(ir.Constant(I1, 0))
            ctx.call_external("Py_DecRef", ir.FunctionType(_VOID, [I8P]), [got])
        b.ret(ir.Constant(I1, 1))

    return glue_function(module, "fncall.lock", ir.FunctionType(I1, [I64P, I64, I64]), build)


def _unlock_helper(module: ir.Module) -> ir.Function:
    """``void glue.fncall.unlock(plan, first, n)``: call release of locks n-1..0 (an exception being raised
    is kept)."""
    def build(fn: ir.Function) -> None:
        plan, first, n = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = LowerContext(b)
        state = [ctx.alloca(I8P, name=f"exc{i}") for i in range(3)]
        ptrs = ir.FunctionType(_VOID, [PYOBJ_PP] * 3)
        ctx.call_external("PyErr_Fetch", ptrs, state)
        with ctx.for_range(n, name="unlock") as i:
            at = b.add(first, b.add(b.mul(b.sub(b.sub(n, I64(1)), i), I64(2)), I64(1)))
            got = ctx.call_external("PyObject_CallNoArgs", ir.FunctionType(I8P, [I8P]), [_obj(b, _word(b, plan, at))])
            ctx.call_external("Py_DecRef", ir.FunctionType(_VOID, [I8P]), [got])
        ctx.call_external("PyErr_Clear", ir.FunctionType(_VOID, []), [])
        ctx.call_external("PyErr_Restore", ir.FunctionType(_VOID, [I8P] * 3), [b.load(p) for p in state])
        b.ret_void()

    return glue_function(module, "fncall.unlock", ir.FunctionType(_VOID, [I64P, I64, I64]), build)


# ---------------------------------------------------------------- Python scalars for 0-d inputs

def _python_scalar_helper(module: ir.Module, dtype: str) -> ir.Function:
    """``i1 glue.pyscalar.<dtype>(PyObject* obj, T* slot)``: obj converted into slot, when it is an exact
    Python float/int/bool that scalar/convert.py would take without a warning, else false (no error set)."""
    def build(fn: ir.Function) -> None:
        obj, slot = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = LowerContext(b)
        no, yes = ir.Constant(I1, 0), ir.Constant(I1, 1)
        ty = L.llvm_scalar_type(dtype)

        def sym(name: str) -> ir.Value:
            return b.bitcast(ctx.declare_global(name), I8P)

        if dtype == "bool":
            is_true = b.icmp_unsigned("==", obj, sym("_Py_TrueStruct"))
            with b.if_then(b.not_(b.or_(is_true, b.icmp_unsigned("==", obj, sym("_Py_FalseStruct"))))):
                b.ret(no)
            b.store(b.zext(is_true, ty), slot)
            b.ret(yes)
            return
        tp = load_field(b, obj, L.PYOBJECT_TYPE_OFFSET, I8P)
        dbl = ir.DoubleType()
        if L.is_float(dtype):
            with b.if_then(b.icmp_unsigned("==", tp, sym("PyFloat_Type")), likely=True):
                x = load_field(b, obj, L.PYFLOAT_VALUE_OFFSET, dbl)
                if dtype == "float64":
                    b.store(x, slot)
                    b.ret(yes)
                else:
                    y = b.fptrunc(x, ty)
                    # Python floats may be rounded to float32, but not overflow to inf (convert.py)
                    inf = ir.Constant(dbl, float("inf"))
                    fin_x = b.fcmp_ordered("<", ctx.call_intrinsic("fabs", [x]), inf)
                    fin_y = b.fcmp_ordered("<", ctx.call_intrinsic("fabs", [b.fpext(y, dbl)]), inf)
                    b.store(y, slot)
                    b.ret(b.icmp_unsigned("==", fin_x, fin_y))
            if dtype != "float64":
                b.ret(no)               # an int to float32 is not a safe cast: the slow path decides
                return
        with b.if_then(b.icmp_unsigned("!=", tp, sym("PyLong_Type"))):
            b.ret(no)
        value = ctx.call_external("PyLong_AsLongLong", ir.FunctionType(I64, [I8P]), [obj])
        with b.if_then(b.icmp_signed("==", value, I64(-1)), likely=False):
            err = ctx.call_external("PyErr_Occurred", ir.FunctionType(I8P, []), [])
            with b.if_then(b.icmp_unsigned("!=", err, ir.Constant(I8P, None))):
                ctx.call_external("PyErr_Clear", ir.FunctionType(_VOID, []), [])
                b.ret(no)
        if dtype == "float64":
            b.store(b.sitofp(value, dbl), slot)
            b.ret(yes)
            return
        b.store(b.trunc(value, ty) if ty.width < 64 else value, slot)
        b.ret(int_fits(b, value, ty, L.is_signed(dtype)))

    fnty = ir.FunctionType(I1, [I8P, L.llvm_scalar_type(dtype).as_pointer()])
    return glue_function(module, f"pyscalar.{dtype}", fnty, build)


def _scalar_unbox(plan: ir.Value, n_in: int) -> Unbox:
    """Unbox a 0-d array argument, or (when the plan allows it) a Python scalar into a stack slot."""
    def unbox(w: Wrapper, obj: ir.Value, spec: ArgSpec, index: int) -> ir.Value:
        b = w.b
        struct = w.ctx.alloca(spec.layout(), name=f"arg{index}")
        slot = w.ctx.alloca(L.llvm_scalar_type(spec.dtype), name=f"arg{index}.scalar")
        ok = b.call(unbox_helper(w.fn.module, spec), [obj, struct])
        done = b.append_basic_block(f"arg{index}.ok")
        convert = b.append_basic_block(f"arg{index}.pyscalar")
        try_scalar = b.append_basic_block(f"arg{index}.notarray")
        slow = b.append_basic_block(f"arg{index}.slow")
        set_weights(b.cbranch(ok, done, try_scalar), LIKELY)
        b.position_at_end(try_scalar)
        b.cbranch(b.icmp_unsigned("!=", _word(b, plan, P.scalar(n_in, index)), I64(0)), convert, slow)
        b.position_at_end(convert)
        converted = b.call(_python_scalar_helper(w.fn.module, spec.dtype), [obj, slot])
        _fill_scalar_struct(b, struct, slot, spec.dtype)
        b.cbranch(converted, done, slow)
        b.position_at_end(slow)
        w.slow(index)
        b.position_at_end(done)
        return struct

    return unbox


def _fill_scalar_struct(b: ir.IRBuilder, struct: ir.Value, slot: ir.Value, dtype: str) -> None:
    """A 0-d array struct over slot, with no parent (nothing may return or keep it: see build_function_call)."""
    values = [ir.Constant(I8P, None), ir.Constant(I8P, None), I64(1), I64(L.itemsize(dtype)), slot]
    for i, v in enumerate(values):
        b.store(v, b.gep(struct, [ir.IntType(32)(0), ir.IntType(32)(i)], inbounds=True))


# ---------------------------------------------------------------- the wrapper

def build_function_call(module: ir.Module, native_entry: ir.Function, arg_specs: Sequence[ArgSpec],
                        out_specs: Sequence[ArgSpec], n_graph_inputs: int, *, release_gil: bool = False,
                        n_temp_slots: int = 0, gil_min_items: int = 0, distinct: Sequence[tuple[int, int]] = (),
                        scalar_inputs: Sequence[int] = (), name: str = "fncall", share_exit: bool = False
                        ) -> ir.Function:
    """Emit ``PyObject* <prefix><name>(self, args, nargsf, kwnames)`` (the module doc) around native_entry.

    arg_specs: the graph's inputs (n_graph_inputs), then the fallback table if any; scalar_inputs: the 0-d
    inputs a Python scalar may stand for where the plan allows it (nothing keeps or returns their buffer);
    share_exit: the slow paths share one exit block (Wrapper.slow; a large graph's light glue: less IR).
    """
    n_in, n_out = n_graph_inputs, len(out_specs)
    w = Wrapper(module, name, n_out + n_temp_slots)
    w.share_exit = share_exit
    b, ctx = w.b, w.ctx
    self_, kwnames = w.fn.args[0], w.fn.args[3]
    plan = _plan_of(b, self_)
    w.check(b.icmp_unsigned("!=", plan, ir.Constant(I64P, None)), -1)
    counts = b.and_(b.icmp_signed("==", _word(b, plan, P.N_IN), I64(n_in)),
                    b.icmp_signed("==", _word(b, plan, P.N_OUT), I64(n_out)))
    counts = b.and_(counts, b.icmp_signed("<=", _word(b, plan, P.N_USER), I64(n_out)))
    w.check(b.and_(counts, b.icmp_signed("<=", w.nargs, _word(b, plan, P.N_EXPLICIT))), -1)
    kw = b.bitcast(kwnames, I8P)
    nkw = ctx.alloca(I64, name="nkw")
    b.store(I64(0), nkw)
    with b.if_then(b.icmp_unsigned("!=", kw, ir.Constant(I8P, None)), likely=False):
        b.store(load_field(b, kw, _PYOBJ_SIZE_OFFSET, I64), nkw)
    held = ctx.alloca(ir.ArrayType(I8P, max(n_in, 1)), name="held")
    held_ptr = b.gep(held, [I64(0), I64(0)], inbounds=True)
    for k in range(n_in):
        b.store(ir.Constant(I8P, None), b.gep(held, [I64(0), I64(k)], inbounds=True))
    matched = ctx.alloca(I64, name="matched")
    b.store(I64(0), matched)
    first, n_locks = I64(P.lock(n_in, n_out, 0)), _word(b, plan, P.N_LOCKS)
    locking = b.icmp_unsigned("!=", n_locks, I64(0))
    with b.if_then(locking, likely=False):
        with b.if_then(b.not_(b.call(_lock_helper(module), [plan, first, n_locks])), likely=False):
            b.ret(ir.Constant(I8P, None))
    holding = b.icmp_signed("<", _word(b, plan, P.N_EXPLICIT), I64(n_in))     # some input is a cell's value

    def on_exit() -> None:
        with b.if_then(locking, likely=False):
            b.call(_unlock_helper(module), [plan, first, n_locks])
        with b.if_then(holding, likely=False):
            release_slots(w, held, 0, n_in)

    w.on_exit = on_exit
    n_kw = b.load(nkw)
    objs = _gather(w, plan, n_in, len(arg_specs), kw, n_kw, matched, held_ptr)
    w.check(b.icmp_signed("==", b.load(matched), n_kw), -1)
    unbox = {i: _scalar_unbox(plan, n_in) for i in scalar_inputs}
    slots = emit_native_call(w, native_entry, objs, arg_specs, out_specs, release_gil=release_gil,
                             gil_min_items=gil_min_items, distinct=distinct, unbox=unbox)
    _finish(w, plan, slots, n_in, n_out)
    return w.fn


def _gather(w: Wrapper, plan: ir.Value, n_in: int, n_args: int, kw: ir.Value, n_kw: ir.Value, matched: ir.Value,
            held_ptr: ir.Value) -> list[ir.Value]:
    """The objects of the entry's arguments: graph input k from args[k] inline when given positionally (nargs <=
    N_EXPLICIT is checked), else through glue.fncall.arg (keywords, defaults, cells); then the fallback table."""
    b = w.b
    args = w.fn.args[1]
    arg = _arg_helper(w.fn.module)
    objs = []
    for k in range(n_in):
        pos_bb, other_bb = b.append_basic_block(f"arg{k}.pos"), b.append_basic_block(f"arg{k}.other")
        join = b.append_basic_block(f"arg{k}.join")
        set_weights(b.cbranch(b.icmp_signed("<", I64(k), w.nargs), pos_bb, other_bb), LIKELY)
        b.position_at_end(pos_bb)
        pos = b.load(b.gep(args, [I64(k)], inbounds=True), name=f"arg{k}.pos")
        b.branch(join)
        b.position_at_end(other_bb)
        other = b.call(arg, [plan, I64(k), args, w.nargs, kw, n_kw, matched, held_ptr], name=f"arg{k}.other")
        w.check(b.icmp_unsigned("!=", other, ir.Constant(I8P, None)), k)
        other_end = b.block
        b.branch(join)
        b.position_at_end(join)
        obj = b.phi(I8P, name=f"arg{k}.obj")
        obj.add_incoming(pos, pos_bb)
        obj.add_incoming(other, other_end)
        objs.append(obj)
    for k in range(n_in, n_args):
        objs.append(_obj(b, _word(b, plan, P.EXTRA)))
        w.check(b.icmp_unsigned("!=", objs[-1], ir.Constant(I8P, None)), k)
    return objs


def _finish(w: Wrapper, plan: ir.Value, slots: ir.Value, n_in: int, n_out: int) -> None:
    """Store the updates, release the locks and return output 0 or a list of the first N_USER outputs."""
    b, ctx = w.b, w.ctx
    null = ir.Constant(I8P, None)
    decref = ir.FunctionType(_VOID, [I8P])
    set_item = ir.FunctionType(ir.IntType(32), [I8P, I64, I8P])
    outs = [b.load(b.gep(slots, [ir.IntType(32)(0), ir.IntType(32)(j)], inbounds=True)) for j in range(n_out)]
    if n_out:
        missing = b.icmp_unsigned("==", outs[0], null)
        for o in outs[1:]:
            missing = b.or_(missing, b.icmp_unsigned("==", o, null))
        with b.if_then(missing, likely=False):
            release_slots(w, slots, 0, n_out)
            w.on_exit()
            msg = cstring(w.fn.module, f"{w.name}.unallocated", b"graphjit: native entry left an output unset\x00")
            exc = b.load(b.bitcast(ctx.declare_global("gj_PyExc_RuntimeError"), PYOBJ_PP))
            w.py("PyErr_SetString", _VOID, [exc, msg])
            b.ret(null)
    for j, out in enumerate(outs):
        cell = _word(b, plan, P.update(n_in, j))
        with b.if_then(b.icmp_unsigned("!=", cell, I64(0))):
            w.py("Py_IncRef", _VOID, [out])
            ctx.call_external("PyList_SetItem", set_item, [_obj(b, cell), I64(0), out])
    result = ctx.alloca(I8P, name="result")
    unpack = b.icmp_unsigned("!=", _word(b, plan, P.UNPACK), I64(0))
    with b.if_else(b.and_(unpack, ir.Constant(I1, int(n_out > 0)))) as (single, many):
        with single:
            if n_out:
                b.store(outs[0], result)
                for out in outs[1:]:
                    ctx.call_external("Py_DecRef", decref, [out])
        with many:
            n_user = _word(b, plan, P.N_USER)
            lst = ctx.call_external("PyList_New", ir.FunctionType(I8P, [I64]), [n_user])
            b.store(lst, result)
            with b.if_then(b.icmp_unsigned("==", lst, null), likely=False):
                release_slots(w, slots, 0, n_out)
                w.on_exit()
                b.ret(null)
            for j, out in enumerate(outs):
                with b.if_else(b.icmp_signed("<", I64(j), n_user)) as (keep, drop):
                    with keep:
                        ctx.call_external("PyList_SetItem", set_item, [lst, I64(j), out])
                    with drop:
                        ctx.call_external("Py_DecRef", decref, [out])
    w.on_exit()
    b.ret(b.load(result))
