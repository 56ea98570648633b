"""Native draws: a RandomVariable lowered to numpy's own C distributions (libnpyrandom.a), bit-identical to perform.

One generic lowering serves every class that declares ``c_draw`` (numpy draws it with one call of a
libnpyrandom function per element, the parameters broadcast in C order and passed unchanged) and its
``param_checks``: numpy's checks of the parameters (``random_loops.check_param``), the sample's shape, the
bit generator's lock taken (``random_state``), one call per element into the sample, cast to the op's dtype.
``uniform`` transforms its parameters first (numpy passes ``low, high - low``) and is lowered here by hand;
``integers`` has its own module (random_integers.py).

An inplace draw (FAST_RUN's ``random_inplace`` rewrite makes a RandomStream's draws so) advances the generator
it reads; another draws from a copy made by a callback (random_state.generator_for), as perform does.  When
numpy's archive or the Generator's layout cannot be used, the draw keeps perform and the FallbackWarning says
why.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence

import numpy as np
from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.link.fallback_warning import register_reason
from graphjit.tensor.random import NormalRV, RandomVariable, UniformRV

from graphjit.link.llvm.ir.casts import cast_value
from graphjit.link.llvm.ir.graph_context import GraphContext
from graphjit.link.llvm.ir.layouts import I64, I8P, NATIVE_DTYPES
from graphjit.link.llvm.jit import npyrandom
from graphjit.link.llvm.jit.generator_abi import layout
from graphjit.link.llvm.loops.rows import load_as, store_as
from graphjit.link.llvm.ops import random_pcg64 as pcg64
from graphjit.link.llvm.ops.random_loops import (broadcast_param_shape, check_broadcast, check_param, each_element,
                                                 sample_shape)
from graphjit.link.llvm.ops.random_state import (acquire, bitgen_pointer, copy_is_native, drop_copy, generator_for,
                                                 release)
from graphjit.link.llvm.registry import lowerings

_C_TYPES = {"double": (ir.DoubleType(), "float64"), "float": (ir.FloatType(), "float32"), "int64": (I64, "int64")}
_REAL = tuple(d for d in NATIVE_DTYPES if not d.startswith("complex"))
LONG_DRAW = 1 << 14      # a sample this large (or of unknown size) releases the GIL: ~0.1 us against ~50 us of draws


def draw_spec(op: RandomVariable) -> Optional[tuple[tuple[str, str, tuple[str, ...]], tuple[Optional[str], ...]]]:
    """(c_draw, param_checks) of a draw lowered by the generic lowering, or None."""
    c_draw = getattr(op, "c_draw", None)
    if c_draw is not None:
        checks = tuple(getattr(op, "param_checks", ()) or ())
        return c_draw, checks + (None,) * (len(c_draw[2]) - len(checks))
    if isinstance(op, NormalRV):
        return ("random_normal", "double", ("double", "double")), (None, "non_negative")
    return None


def native_unavailable() -> Optional[str]:
    """Why no draw can be native in this process (None: they can)."""
    why = npyrandom.unavailable()
    if why is not None:
        return why
    found = layout()
    return found if isinstance(found, str) else None


def param_names(op: RandomVariable) -> list[str]:
    """The parameters' names in numpy's Generator method (for the messages of the checks)."""
    names: list[str] = []
    method = getattr(np.random.Generator, op.name, None)
    if method is not None:
        try:
            names = [p for p in inspect.signature(method).parameters if p not in ("self", "size")]
        except (TypeError, ValueError):
            names = []
    return [names[i] if i < len(names) else f"parameter {i + 1}" for i in range(op.n_params)]


def split_inputs(node: Apply, inputs: Sequence[ir.Value]) -> tuple[Optional[ir.Value], list[ir.Value], list[Any]]:
    """(size struct or None, parameter structs, parameter variables)."""
    k = 2 if node.op.has_size else 1
    return (inputs[1] if node.op.has_size else None), list(inputs[k:]), list(node.inputs[k:])


def can_lower_draw(node: Apply) -> bool:
    """Real dtypes, numpy's libnpyrandom.a loaded, the new generator read by graph outputs only (or inplace).

    Parameters have at most the sample's dimensions; numpy's archive and the Generator's layout are usable."""
    op = node.op
    k = 2 if op.has_size else 1
    sample = node.outputs[1]
    return ((op.inplace or copy_is_native(node)) and native_unavailable() is None and sample.type.dtype in _REAL
            and all(p.type.dtype in _REAL and p.ndim <= sample.ndim for p in node.inputs[k:]))


def _why_not(node: Apply) -> Optional[str]:
    if not isinstance(node.op, RandomVariable):
        return None
    why = native_unavailable()
    if why is not None:
        return why
    if not node.op.inplace and not copy_is_native(node):
        return "the new generator is read by another node"
    return None


register_reason(_why_not)


def npr_function(ctx: GraphContext, name: str, result: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
    """numpy's C function `name` (bitgen_t* first), published for this process."""
    npyrandom.publish(name)
    return ctx.declare(npyrandom.symbol(name), ir.FunctionType(result, [I8P, *args]))


# numpy's C functions drawn inline on PCG64 (random_pcg64.py): name -> (whether it can be here, the inline
# standard draw); with two parameters the result is p0 + p1 * draw (random_normal: loc + scale * z;
# random_uniform: low + range * u), as numpy computes it
_INLINE: dict = {
    "random_normal": (pcg64.available, pcg64.normal_function),
    "random_standard_normal": (pcg64.available, pcg64.normal_function),
    "random_uniform": (lambda: pcg64.uniform_available(False), lambda ctx: pcg64.uniform_function(ctx, False)),
    "random_standard_uniform": (lambda: pcg64.uniform_available(False),
                                lambda ctx: pcg64.uniform_function(ctx, False)),
    "random_standard_uniform_f": (lambda: pcg64.uniform_available(True),
                                  lambda ctx: pcg64.uniform_function(ctx, True)),
}


def _inline_draw(ctx: GraphContext, fn_name: str, pcg: ir.Value, fn: ir.Function, bitgen: ir.Value,
                 values: list) -> ir.Value:
    """numpy's draw `fn_name` inline when the generator is PCG64 (random_pcg64.py), else numpy's call."""
    b = ctx.builder
    with b.if_else(pcg, likely=True) as (inline, call):
        with inline:
            z = b.call(_INLINE[fn_name][1](ctx), [bitgen])
            fast = b.fadd(values[0], b.fmul(values[1], z)) if values else z
            fast_block = b.block
        with call:
            slow = b.call(fn, [bitgen, *values])
            slow_block = b.block
    drawn = b.phi(fast.type)
    drawn.add_incoming(fast, fast_block)
    drawn.add_incoming(slow, slow_block)
    return drawn


def note_long_draw(ctx: GraphContext, node: Apply) -> None:
    """A sample not statically small: the entry releases the GIL whatever its arguments (they may be none)."""
    shape = node.outputs[1].type.shape
    if any(s is None for s in shape) or int(np.prod(shape)) >= LONG_DRAW:
        ctx.releases_gil = True
    ctx.hot_glue = True     # the draw loop is in the glue: the full pipeline


# make_draw(bitgen) -> draw(values): the per-element draw, set up once before the loop
MakeDraw = Callable[[ir.Value], Callable[[list], ir.Value]]


def emit_element_draws(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], load_types: Sequence[str],
                       make_draw: MakeDraw, result_dtype: str) -> list:
    """The draw loop after the checks: shape, allocation, lock, one draw per element in C order (the parameters
    loaded as load_types, broadcast), cast from result_dtype to the sample's dtype, unlock."""
    size, params, pvars = split_inputs(node, inputs)
    ndims = [p.ndim for p in pvars]
    shape = sample_shape(ctx, node, size, params, ndims)
    check_broadcast(ctx, node, shape, params, ndims)
    note_long_draw(ctx, node)
    out = ctx.allocate(node, 1, shape)
    out_dtype = node.outputs[1].type.dtype
    new_slot, gen, copy = generator_for(ctx, node, inputs[0])
    draw = make_draw(bitgen_pointer(ctx, gen))
    taken = acquire(ctx, gen)
    with each_element(ctx, shape, [*params, out], [*ndims, len(shape)]) as ptrs:
        values = [load_as(ctx, p, v.type.dtype, t) for p, v, t in zip(ptrs, pvars, load_types)]
        store_as(ctx, ptrs[-1], cast_value(ctx.builder, draw(values), result_dtype, out_dtype), out_dtype)
    release(ctx, gen, taken)
    drop_copy(ctx, copy)
    return [new_slot, out]


def emit_draws(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], fn_name: str, result: str,
               arg_types: Sequence[str], prepare: Any = None) -> list:
    """numpy's C function fn_name once per element (inline on PCG64 where random_pcg64.py has it).

    prepare(ctx, values) -> values transforms the loaded parameters (uniform's high - low)."""
    b = ctx.builder
    res_ty, res_dtype = _C_TYPES[result]
    fn = npr_function(ctx, fn_name, res_ty, [_C_TYPES[a][0] for a in arg_types])
    inline = fn_name in _INLINE and _INLINE[fn_name][0]()

    def make_draw(bitgen: ir.Value) -> Callable[[list], ir.Value]:
        pcg = pcg64.is_pcg64(ctx, bitgen) if inline else None

        def draw(values: list) -> ir.Value:
            if prepare is not None:
                values = prepare(ctx, values)
            if inline:
                return _inline_draw(ctx, fn_name, pcg, fn, bitgen, values)
            return b.call(fn, [bitgen, *values])
        return draw
    return emit_element_draws(ctx, node, inputs, [_C_TYPES[a][1] for a in arg_types], make_draw, res_dtype)


def can_lower_c_draw(node: Apply) -> bool:
    """A distribution declaring numpy's per-element C draw (``c_draw``; normal), as can_lower_draw says."""
    return draw_spec(node.op) is not None and can_lower_draw(node)


@lowerings.register(RandomVariable, applies=can_lower_c_draw, objects=True)
def lower_draw(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """A c_draw distribution: numpy's checks, then one libnpyrandom call per element."""
    (fn_name, result, arg_types), checks = draw_spec(node.op)       # type: ignore[misc]
    _, params, pvars = split_inputs(node, inputs)
    scalar = all(v.ndim == 0 for v in pvars)
    for p, v, name, cons in zip(params, pvars, param_names(node.op), checks):
        check_param(ctx, node, p, v.type.dtype, v.ndim, name, cons, scalar)
    return emit_draws(ctx, node, inputs, fn_name, result, arg_types)


def _check_uniform_range(ctx: GraphContext, node: Apply, params: Sequence[ir.Value], pvars: Sequence[Any]) -> None:
    """numpy's uniform: high - low finite (OverflowError), then not negative (ValueError), over their broadcast."""
    b = ctx.builder
    ndims = [v.ndim for v in pvars]
    nd = max(ndims)
    shape = broadcast_param_shape(ctx, params, ndims, nd)
    scalar = nd == 0
    state = [ctx.alloca(ir.IntType(1), name=ctx.name(node, w)) for w in ("inf", "neg")]
    for s in state:
        b.store(ir.IntType(1)(0), s)
    with each_element(ctx, shape, params, ndims, name="rng") as (lo, hi):
        width = b.fsub(load_as(ctx, hi, pvars[1].type.dtype, "float64"), load_as(ctx, lo, pvars[0].type.dtype,
                                                                                   "float64"))
        absolute = ctx.call_intrinsic("fabs", [width])
        b.store(b.or_(b.load(state[0]), b.fcmp_unordered("==", absolute, ir.DoubleType()(float("inf")))), state[0])
        negative = b.icmp_signed("<", b.bitcast(width, I64), I64(0))
        b.store(b.or_(b.load(state[1]), negative), state[1])
    text = "high - low range exceeds valid bounds" if scalar else "Range exceeds valid bounds"
    ctx.raise_if(b.load(state[0]), node, "OverflowError", f"{node.op}: {text}")
    ctx.raise_if(b.load(state[1]), node, "ValueError", f"{node.op}: high - low < 0")



@lowerings.register(UniformRV, applies=can_lower_draw, objects=True)
def lower_uniform(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """numpy's uniform: random_uniform(low, high - low) per element after its range checks."""
    _, params, pvars = split_inputs(node, inputs)
    _check_uniform_range(ctx, node, params, pvars)

    def prepare(c: GraphContext, values: list) -> list:
        return [values[0], c.builder.fsub(values[1], values[0])]
    return emit_draws(ctx, node, inputs, "random_uniform", "double", ("double", "double"), prepare)
