"""Run a contiguous kernel on all cores with libgomp's ``GOMP_parallel`` and an outlined body.

The body receives a struct ``{i64 total, i32 status, args...}``; thread t of n takes the t-th chunk of
[0, total) (chunks aligned to 64 elements so threads do not share cache lines, or to 1 row for row kernels)
and calls the kernel on it.
``OMP_NUM_THREADS`` sets the thread count (libgomp reads it), so a pinned single-thread run stays serial.
"""

from __future__ import annotations


from llvmlite import ir

from graphjit.link.llvm.ir.context import GLUE_PREFIX
from graphjit.link.llvm.ir.layouts import I8P, I32, I64
from graphjit.link.llvm.jit.runtime import ensure_runtime

from graphjit.link.llvm.ir.graph_context import GraphContext

_ALIGN = 64


def gomp_available() -> bool:
    """True if libgomp was loaded and its symbols published (runtime.ensure_runtime)."""
    return ensure_runtime().gomp_available


def _outlined_body(gctx: GraphContext, name: str, kernel: ir.Function | None, data_ty: ir.LiteralStructType,
                   align: int) -> ir.Function:
    # glue, not a kernel: it runs once per thread per call, so the light glue passes and fast
    # instruction selection cost nothing at run time and save the full pipeline's per-function cost
    fn = ir.Function(gctx.module, ir.FunctionType(ir.VoidType(), [I8P]), f"{GLUE_PREFIX}{name}.omp")
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    data = b.bitcast(fn.args[0], data_ty.as_pointer())
    get = lambda k: b.load(b.gep(data, [I32(0), I32(k)], inbounds=True))  # noqa: E731
    omp_ty = ir.FunctionType(I32, [])
    decl = lambda n: gctx.module.globals.get(n) or ir.Function(gctx.module, omp_ty, n)  # noqa: E731
    t = b.sext(b.call(decl("gj_omp_get_thread_num"), []), I64)
    n = b.sext(b.call(decl("gj_omp_get_num_threads"), []), I64)
    total = get(0)
    chunk = b.sdiv(b.add(total, b.sub(n, I64(1))), n)
    if align > 1:
        chunk = b.mul(b.sdiv(b.add(chunk, I64(align - 1)), I64(align)), I64(align))
    start = b.mul(t, chunk)
    start = b.select(b.icmp_signed("<", start, total), start, total)
    end = b.add(start, chunk)
    end = b.select(b.icmp_signed("<", end, total), end, total)
    args = [get(k) for k in range(2, len(data_ty.elements))]
    callee = kernel if kernel is not None else args.pop(0)      # None: a function pointer, the first argument
    status = b.call(callee, [start, end] + args)
    with b.if_then(b.icmp_signed("!=", status, I32(0)), likely=False):
        b.store(status, b.gep(data, [I32(0), I32(1)], inbounds=True))
    b.ret_void()
    return fn


def call_parallel(gctx: GraphContext, name: str, kernel: ir.Function | None, args: list, total: ir.Value,
                  align: int = _ALIGN) -> ir.Value:
    """Emit GOMP_parallel(body, &data, 0, 0) running kernel over [0, total); returns the i32 status.

    kernel None: args[0] is a pointer to the function to run (the body then serves any such function).

    Chunks are multiples of align units (elements: 64 keeps threads off each other's cache lines; rows: 1).
    """
    b = gctx.builder
    data_ty = ir.LiteralStructType([I64, I32] + [a.type for a in args])
    bodies = getattr(gctx, "parallel_bodies", None)
    key = (kernel.name if kernel is not None else None, str(data_ty), align)
    body = bodies.get(key) if bodies is not None else None
    if body is None:
        body = _outlined_body(gctx, name, kernel, data_ty, align)
        if bodies is not None:
            bodies[key] = body
    data = gctx.alloca(data_ty, name=f"{name}.omp_data")
    for k, v in enumerate([total, I32(0)] + list(args)):
        b.store(v, b.gep(data, [I32(0), I32(k)], inbounds=True))
    gomp_ty = ir.FunctionType(ir.VoidType(), [body.type, I8P, I32, I32])
    gctx.call_external("gj_GOMP_parallel", gomp_ty, [body, b.bitcast(data, I8P), I32(0), I32(0)])
    return b.load(b.gep(data, [I32(0), I32(1)], inbounds=True))
