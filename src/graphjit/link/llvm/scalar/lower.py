"""The one generic LLVM lowering of scalar ops: an op's declared math (Opcode/Intrinsic/Libm), or its body.

Values are in their *compute* representation (ir/casts.py).  ``lower_scalar`` casts the inputs to the
dtypes numpy's loop would use, emits the op and returns a value of ``out_dtype``; ``can_lower_scalar`` says
beforehand whether an op/dtype combination is supported (else the Elemwise takes the perform fallback).
Where the math comes from, first match wins: a body registered for the op object (scalar/bodies.py), a Cast,
the op's declared ``llvm`` data, and last a user's own ScalarOp subclass defining ``lower_scalar`` (with an
optional ``can_lower_scalar``), the documented hook for scalar ops graphjit does not know.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from llvmlite import ir

from graphjit.scalar.basic import Intrinsic, Libm, Opcode, ScalarOp, as_ufunc
from graphjit.scalar.math import Cast

from graphjit.link.llvm.scalar.bodies import cast_body
from graphjit.link.llvm.scalar.complex_bodies import complex_body
from graphjit.link.llvm.ir.context import LowerContext
from graphjit.link.llvm.registry import Entry, scalar_lowerings
from graphjit.link.llvm.ir.casts import cast_value, kind

_KIND_FIELD = {"f": "float", "i": "int", "u": "uint", "b": "bool"}
_NATIVE = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "float32", "float64", "complex64", "complex128"})
_MATH_INTRINSICS = ("sqrt", "fabs", "exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos", "pow",
                    "floor", "ceil", "trunc", "rint", "round")


def _user_hook(op: Any, entry: Optional[Entry]) -> Any:
    """A user's ScalarOp subclass's own lower_scalar (registered bodies and a Cast win over it)."""
    if entry is not None or isinstance(op, Cast):
        return None
    return getattr(op, "lower_scalar", None)


def can_lower_scalar(op: Any, in_dtypes: Sequence[str], out_dtype: str) -> bool:
    """Whether lower_scalar supports op on these dtypes (complex and unknown ops take the fallback)."""
    if not isinstance(op, ScalarOp):
        return False
    entry = scalar_lowerings.lookup(op)
    hook = _user_hook(op, entry)
    if hook is not None:
        can = getattr(op, "can_lower_scalar", None)
        return True if can is None else bool(can(in_dtypes, out_dtype))
    if out_dtype not in _NATIVE or any(d not in _NATIVE for d in in_dtypes):
        return False
    if isinstance(op, Cast):
        return True
    if any(kind(d) == "c" for d in (*in_dtypes, out_dtype)):
        body = complex_body(op, in_dtypes, out_dtype)
        return body is not None and all(d in _NATIVE for d in _complex_loop(op, body, in_dtypes, out_dtype))
    loop = _loop_dtypes(op, entry, in_dtypes, out_dtype)
    if any(d not in _NATIVE for d in loop):
        return False
    if entry is not None:
        return True
    spec = op.llvm
    if isinstance(spec, Opcode):
        return getattr(spec, _KIND_FIELD[kind(loop[0])]) is not None
    if isinstance(spec, Intrinsic) and spec.identity_on_ints and all(kind(d) in "iub" for d in loop):
        return True
    if isinstance(spec, (Intrinsic, Libm)):
        return all(kind(d) == "f" for d in loop)
    return False


def lower_scalar(op: ScalarOp, ctx: LowerContext, inputs: Sequence[ir.Value], in_dtypes: Sequence[str],
                 out_dtype: str) -> ir.Value:
    """Emit op on compute values inputs (of in_dtypes) and return the result as out_dtype."""
    entry = scalar_lowerings.lookup(op)
    hook = _user_hook(op, entry)
    if hook is not None:
        return hook(ctx, inputs, in_dtypes, out_dtype)
    b = ctx.builder
    cbody = None if isinstance(op, Cast) else complex_body(op, in_dtypes, out_dtype)
    if cbody is not None:
        loop = _complex_loop(op, cbody, in_dtypes, out_dtype)
        args = [cast_value(b, v, s, d) for v, s, d in zip(inputs, in_dtypes, loop)]
        result, res_dtype = cbody.impl(ctx, args, loop, out_dtype)
        return cast_value(b, result, res_dtype, out_dtype)
    loop = _loop_dtypes(op, entry, in_dtypes, out_dtype)
    args = [cast_value(b, v, s, d) for v, s, d in zip(inputs, in_dtypes, loop)]
    if entry is not None:
        result, res_dtype = entry.impl(ctx, args, loop, out_dtype)
    elif isinstance(op, Cast):
        result, res_dtype = cast_body(ctx, args, loop, out_dtype)
    else:
        result, res_dtype = _declared(op, ctx, args, loop[0]), _declared_dtype(op, loop[0])
    return cast_value(b, result, res_dtype, out_dtype)


def must_run_serially(op: Any) -> bool:
    """Whether op's body can raise (integer pow of a negative exponent): its loop never runs in threads."""
    entry = scalar_lowerings.lookup(op) if isinstance(op, ScalarOp) else None
    return bool(entry is not None and entry.options.get("serial"))


def _loop_dtypes(op: ScalarOp, entry: Optional[Entry], in_dtypes: Sequence[str],
                 out_dtype: str) -> tuple[str, ...]:
    """The dtypes numpy's loop computes the op in (float16 -> float32 as graphjit does)."""
    rule = entry.options.get("loop_dtypes") if entry is not None else None
    if rule is not None:
        return tuple(rule(in_dtypes, out_dtype))
    ufunc = as_ufunc(op.numpy)
    if ufunc is None:
        return tuple(out_dtype for _ in in_dtypes)
    try:
        resolved = ufunc.resolve_dtypes(tuple(np.dtype(d) for d in in_dtypes) + (None,))
    except Exception:
        return tuple(out_dtype for _ in in_dtypes)
    return tuple("float32" if d == np.float16 else str(d) for d in resolved[:op.nin])


def _complex_loop(op: ScalarOp, body: Any, in_dtypes: Sequence[str], out_dtype: str) -> tuple[str, ...]:
    """The dtypes a complex body computes in: its own rule, else numpy's ufunc loop."""
    if body.loop is not None:
        return tuple(body.loop(in_dtypes, out_dtype))
    return _loop_dtypes(op, None, in_dtypes, out_dtype)


def _declared_dtype(op: ScalarOp, loop_dtype: str) -> str:
    spec = op.llvm
    if isinstance(spec, Opcode) and "cmp" in getattr(spec, _KIND_FIELD[kind(loop_dtype)]):
        return "bool"
    return loop_dtype


def _declared(op: ScalarOp, ctx: LowerContext, args: list, loop_dtype: str) -> ir.Value:
    """The math declared as data: an Opcode (IRBuilder method), an Intrinsic or a Libm function."""
    b = ctx.builder
    spec = op.llvm
    if isinstance(spec, Opcode):
        method = getattr(spec, _KIND_FIELD[kind(loop_dtype)])
        if " " in method:
            name, pred = method.split(" ", 1)
            return getattr(b, name)(pred, *args)
        return getattr(b, method)(*args)
    if isinstance(spec, Intrinsic) and spec.identity_on_ints and kind(loop_dtype) in "iub":
        return args[0]
    name = spec.name[5:] if isinstance(spec, Intrinsic) else spec.name
    if isinstance(spec, Intrinsic) and name not in _MATH_INTRINSICS:
        return ctx.call_intrinsic(name, args)
    return ctx.call_math(name, args)
