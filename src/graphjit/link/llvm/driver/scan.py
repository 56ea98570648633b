"""Scan lowered as a native loop: the inner graph is emitted inline (driver/inner_graph.py) once, inside a counted loop
of the fused function. Outputs go straight into preallocated buffers (the step writes row t); a recurrent output
kept as its last state only (ScanInfo.keep) lives in a ring of depth + 1 rows; a shared state (a shared variable
the step updates) is carried from step to step in two scratch buffers used in turn (the step may read the current
state while its new value is written); nothing is allocated per step.
"""

from __future__ import annotations

from typing import Any, Sequence

from llvmlite import ir

from graphjit.graph.basic import Apply
from graphjit.scan_module.info import KEEP_ALL, KEEP_LAST
from graphjit.scan_module.op import Scan
from graphjit.tensor.random import RandomGeneratorType, RandomVariable

from graphjit.link.llvm.ir import layouts as L
from graphjit.link.llvm.driver.inner_graph import InnerPlan, Scratch, copy_into, emit_inner, plan_inner
from graphjit.link.llvm.ir.layouts import I8P, I64
from graphjit.link.llvm.ir.graph_context import GraphContext, Value
from graphjit.link.llvm.driver.scan_empty import can_lower_empty, emit_empty_shape
from graphjit.link.llvm.ops.random_state import drop_copy, own_copy
from graphjit.link.llvm.ops.shape import input_int
from graphjit.link.llvm.registry import lowerings

_NO_PLAN = "no plan"


def inner_plan(op: Scan) -> InnerPlan | None:
    """The op's inner graph planned for inline emission (cached on the op), None when it cannot be."""
    plan = op.__dict__.get("_native_plan")
    if plan is None:
        plan = None
        if _generators_ok(op):
            # each draw of the step advances the loop's private generator copy in place, a chain of draws too
            # (ops/random_state.py: copy_is_native, generator_for)
            op.fgraph.generators_private = True
            plan = plan_inner(op.fgraph, generators=True)
        op.__dict__["_native_plan"] = plan if plan is not None else _NO_PLAN
    return None if plan is _NO_PLAN else plan


def _is_generator(var: Any) -> bool:
    return isinstance(var.type, RandomGeneratorType)


def _generators_ok(op: Scan) -> bool:
    """Generators in the step only as shared states, each read by at most one draw and then not returned
    (advancing the loop's copy in place, along a chain of draws too, then gives the numbers of perform's copies)."""
    info, fgraph = op.info, op.fgraph
    shared = {op.inner_inputs[i] for i in info.inner_shared()}
    for var in fgraph.variables:
        if not _is_generator(var):
            continue
        if var.owner is None and var not in shared:
            return False
        clients = [c for c, _ in fgraph.clients.get(var, [])]
        readers = [c for c in clients if c != "output"]
        if len(readers) > 1 or any(not isinstance(c.op, RandomVariable) or c.inputs[0] is not var for c in readers):
            return False
        if readers and "output" in clients:     # the step returns a state its own draw advances afterwards
            return False
    return True


def can_lower_scan(node: Apply) -> bool:
    """Lowered when every inner node can be emitted inline (else the Scan runs its perform: fallback).

    A new generator it returns may be read by the graph's outputs only (the loop's copy goes into its slot)."""
    if inner_plan(node.op) is None or not can_lower_empty(node):
        return False
    fgraph = getattr(node, "fgraph", None)
    return all(all(c == "output" for c, _ in (fgraph.clients.get(v, []) if fgraph is not None else [("?", 0)]))
               for v in node.outputs if _is_generator(v))


@lowerings.register(Scan, applies=can_lower_scan, complex=True, objects=True)
def lower_scan(ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value]) -> list:
    """The loop (see the module doc)."""
    return _ScanLowering(ctx, node, inputs, inner_plan(node.op)).emit()


def _byte_ptr(ctx: GraphContext, arr: ir.Value) -> ir.Value:
    return ctx.builder.bitcast(ctx.data(arr), I8P)


class _ScanLowering:
    def __init__(self, ctx: GraphContext, node: Apply, inputs: Sequence[ir.Value], plan: InnerPlan):
        self.ctx, self.b, self.node, self.inputs, self.plan = ctx, ctx.builder, node, list(inputs), plan
        self.op, self.info = node.op, node.op.info

    def name(self, what: str) -> str:
        return self.ctx.name(self.node, what)

    def fail_if(self, cond: ir.Value, text: str, args: Sequence[ir.Value] = ()) -> None:
        self.ctx.raise_if(cond, self.node, "ValueError", text, list(args))

    # ---------------------------------------------------------------- before the loop
    def emit(self) -> list:
        ctx, b, info = self.ctx, self.b, self.info
        self.n = input_int(ctx, self.node, self.inputs, 0)
        self.fail_if(b.icmp_signed("<", self.n, I64(0)), "scan: n_steps is negative (%lld)", [self.n])
        for k, p in enumerate(info.outer_seqs()):
            length = ctx.shape(self.inputs[p], 0)
            self.fail_if(b.icmp_signed("<", length, self.n),
                         "scan: sequence %lld has %lld steps, fewer than n_steps = %lld", [I64(k), length, self.n])
        self.states = [self._state(k) for k in range(info.n_rec)]
        self.nitsot = [self._nitsot_site(j) for j in range(info.n_rec, info.n_outs)]
        self.shared = [self._shared_site(k) for k in range(info.n_shared)]
        self.steps = ctx.alloca(I64, name=self.name("steps"))
        b.store(self.n, self.steps)
        self._loop()
        return self._results()

    def _state(self, k: int) -> dict:
        ctx, b, info = self.ctx, self.b, self.info
        init = self.inputs[info.outer_inits()[k]]
        var = self.node.outputs[k]
        dtype, nd = var.type.dtype, var.type.ndim - 1
        d = info.depth(k)
        if info.stacked_init(k):
            rows = ctx.shape(init, 0)
            self.fail_if(b.icmp_signed("<", rows, I64(d)),
                         "scan: the initial value of output %lld has %lld rows; its taps need %lld",
                         [I64(k), rows, I64(d)])
            shape = [ctx.shape(init, 1 + i) for i in range(nd)]
            strides = [ctx.stride(init, 1 + i) for i in range(nd)]
            row_stride = ctx.stride(init, 0)
        else:
            shape = [ctx.shape(init, i) for i in range(nd)]
            strides = [ctx.stride(init, i) for i in range(nd)]
            row_stride = I64(0)
        st = {"k": k, "init": init, "dtype": dtype, "nd": nd, "d": d, "shape": shape, "strides": strides,
              "row_stride": row_stride, "keep": info.keep_of(k), "slot": None}
        if nd == 0 and tuple(info.rec_taps[k]) == (-1,):
            # a scalar state read at tap -1 only: carried in a stack slot LLVM promotes to a register, so the
            # recurrence's critical path has no store-to-load round trip through the output buffer
            elem = L.llvm_scalar_type(dtype)
            st["slot"] = ctx.alloca(elem, name=self.name(f"carry{k}"))
            b.store(b.load(b.bitcast(ctx.data(init), elem.as_pointer())), st["slot"])
        if st["keep"] == KEEP_ALL and info.as_while:   # the first `steps` rows are copied out after the loop
            st["buf"] = Scratch(ctx, self.name(f"rows{k}"), dtype, nd + 1).obtain([self.n] + shape)
            st["rows"] = None
        elif st["keep"] == KEEP_ALL:
            st["buf"] = ctx.allocate(self.node, k, [self.n] + shape)
            st["rows"] = None
        else:
            st["rows"] = I64(d + 1)
            st["buf"] = Scratch(ctx, self.name(f"ring{k}"), dtype, nd + 1).obtain([I64(d + 1)] + shape)
        return st

    def _shared_site(self, k: int) -> dict:
        """A shared state: ``cur`` describes its value at the current step (the initial value, then one of the
        two scratch buffers the steps write in turn)."""
        ctx, b = self.ctx, self.b
        init = self.inputs[self.info.outer_shared()[k]]
        var = self.node.outputs[self.info.n_outs + k]
        if _is_generator(var):          # a private copy the steps' draws advance in place (random_state.py)
            held, copy = own_copy(ctx, self.node, init)
            return {"k": k, "cur": held, "copy": copy, "generator": True}
        dtype, nd = var.type.dtype, var.type.ndim
        cur = ctx.alloca(init.type.pointee, name=self.name(f"shared{k}.cur"))
        b.store(b.load(init), cur)
        bufs = [Scratch(ctx, self.name(f"shared{k}.buf{i}"), dtype, nd) for i in (0, 1)]
        nxt = ctx.alloca(init.type.pointee, name=self.name(f"shared{k}.next"))
        return {"k": k, "cur": cur, "next": nxt, "bufs": bufs, "dtype": dtype, "nd": nd}

    def _nitsot_site(self, j: int) -> dict:
        var = self.node.outputs[j]
        scratch = Scratch(self.ctx, self.name(f"out{j}"), var.type.dtype, var.type.ndim)
        flag = self.ctx.alloca(ir.IntType(1), name=self.name(f"out{j}.ready"))
        self.b.store(ir.Constant(ir.IntType(1), 0), flag)
        return {"j": j, "scratch": scratch, "flag": flag, "dtype": var.type.dtype, "nd": var.type.ndim - 1,
                "last": self.info.keep_of(j) != KEEP_ALL}      # only the last step is read: one row, rewritten

    # ---------------------------------------------------------------- the loop
    def _loop(self) -> None:
        b, info = self.b, self.info
        pre = b.block
        head = b.append_basic_block(self.name("loop.cond"))
        body = b.append_basic_block(self.name("loop.body"))
        end = b.append_basic_block(self.name("loop.end"))
        b.branch(head)
        b.position_at_end(head)
        t = b.phi(I64, name=self.name("t"))
        t.add_incoming(I64(0), pre)
        ring = b.phi(I64, name=self.name("w"))       # t mod (ring rows), for the states kept in rings
        ring.add_incoming(I64(0), pre)
        b.cbranch(b.icmp_signed("<", t, self.n), body, end)
        b.position_at_end(body)
        self.t, self.w = t, ring
        private = [self.op.inner_inputs[i] for i in info.inner_shared() if _is_generator(self.op.inner_inputs[i])]
        result = emit_inner(self.ctx, self.node, self.plan, self._inner_inputs(), self._sink, scope="body",
                            private=private)
        for j in range(info.n_outs):
            if not result.written[j]:
                self._copy_output(j, result.values[j])
        self._update_carries()
        if info.as_while:       # read before the shared states move on (the condition may be a view of one)
            stop = self.ctx.builder.icmp_unsigned("!=", b.load(b.bitcast(self.ctx.data(result.values[-1]),
                                                                         ir.IntType(8).as_pointer())),
                                                  ir.Constant(ir.IntType(8), 0))
        self._update_shared(result.values[info.n_outs:info.n_outs + info.n_shared])
        nxt = b.add(t, I64(1), flags=["nsw"])
        if info.as_while:
            done = b.append_basic_block(self.name("loop.until"))
            go = b.append_basic_block(self.name("loop.next"))
            b.cbranch(stop, done, go)
            b.position_at_end(done)
            b.store(nxt, self.steps)
            b.branch(end)
            b.position_at_end(go)
        w_next = b.add(ring, I64(1))
        w_next = b.select(b.icmp_signed("==", w_next, self._ring_rows()), I64(0), w_next)
        t.add_incoming(nxt, b.block)
        ring.add_incoming(w_next, b.block)
        b.branch(head)
        b.position_at_end(end)

    def _update_carries(self) -> None:
        """Copy this step's value of each register-carried state from its output row into its slot."""
        for st in self.states:
            if st["slot"] is not None:
                row = self.b.bitcast(self._row(st, self._write_row(st)), st["slot"].type)
                self.b.store(self.b.load(row), st["slot"])

    def _update_shared(self, values: Sequence[ir.Value]) -> None:
        """Copy each shared state's new value into the buffer of this step's parity (not the one ``cur`` may
        describe), then point ``cur`` at it: every new value is read before any state moves on."""
        b, ctx = self.b, self.ctx
        odd = b.trunc(self.t, ir.IntType(1))
        for site, value in zip(self.shared, values):
            if value is site["cur"] or site.get("generator"):
                continue                            # unchanged, or a generator advanced in place
            shape = [ctx.shape(value, i) for i in range(site["nd"])]
            with b.if_else(odd) as (then, otherwise):
                for buf, block in zip(reversed(site["bufs"]), (then, otherwise)):
                    with block:
                        struct = buf.obtain(shape)
                        copy_into(ctx, value, struct, site["dtype"], shape)
                        b.store(b.load(struct), site["next"])
        for site, value in zip(self.shared, values):
            if value is not site["cur"] and not site.get("generator"):
                b.store(b.load(site["next"]), site["cur"])

    def _ring_rows(self) -> ir.Value:
        rows = [st["rows"] for st in self.states if st["rows"] is not None]
        return rows[0] if len(rows) == 1 else I64(max([st["d"] + 1 for st in self.states] + [1]))

    def _row(self, st: dict, index: ir.Value) -> ir.Value:
        """Byte pointer of row index of a state's buffer (or ring)."""
        b, ctx = self.b, self.ctx
        return b.gep(_byte_ptr(ctx, st["buf"]), [b.mul(index, ctx.stride(st["buf"], 0))])

    def _write_row(self, st: dict) -> ir.Value:
        if st["rows"] is None:
            return self.t
        return self._ring_index(st, self.w if self._uniform_ring() else self._mod(self.t, st["rows"]))

    def _uniform_ring(self) -> bool:
        rows = {st["d"] for st in self.states if st["rows"] is not None}
        return len(rows) <= 1

    def _ring_index(self, st: dict, w: ir.Value) -> ir.Value:
        return w

    def _mod(self, value: ir.Value, rows: ir.Value) -> ir.Value:
        return self.b.srem(value, rows)

    def _inner_inputs(self) -> list:
        ctx, b, info = self.ctx, self.b, self.info
        values = []
        for k, p in enumerate(info.outer_seqs()):
            seq = self.inputs[p]
            var = self.node.inputs[p]
            nd = var.type.ndim - 1
            data = b.gep(_byte_ptr(ctx, seq), [b.mul(self.t, ctx.stride(seq, 0))])
            values.append(self._view(var.type.dtype, [ctx.shape(seq, 1 + i) for i in range(nd)],
                                     [ctx.stride(seq, 1 + i) for i in range(nd)], data, f"seq{k}"))
        for st in self.states:
            for tap in info.rec_taps[st["k"]]:
                values.append(self._tap_view(st, -tap))
        values += [site["cur"] for site in self.shared]
        values += [self.inputs[p] for p in info.outer_nonseqs()]
        return values

    def _view(self, dtype: str, shape: list, strides: list, data: ir.Value, what: str,
              contiguous: bool = False) -> ir.Value:
        elem = L.llvm_scalar_type(dtype).as_pointer()
        view = self.ctx.view(None, dtype, shape, strides, self.b.bitcast(data, elem), name=self.name(what))
        if contiguous:
            self.ctx.mark_contiguous(view)
        return view

    def _tap_view(self, st: dict, j: int) -> ir.Value:
        """State tap -j at step t: the output of step t - j, or a row of the initial value."""
        b, ctx = self.b, self.ctx
        if st["slot"] is not None:
            return self._view(st["dtype"], [], [], st["slot"], f"state{st['k']}.carry")
        from_buf = b.icmp_signed(">=", self.t, I64(j))
        back = b.sub(self.t, I64(j))
        if st["rows"] is None:
            buf_row = back
        else:
            w = b.sub(self._write_row(st), I64(j))
            buf_row = b.select(b.icmp_signed("<", w, I64(0)), b.add(w, st["rows"]), w)
        buf_ptr = self._row(st, buf_row)
        init_row = b.add(back, I64(st["d"]))           # d - j + t
        init_ptr = b.gep(_byte_ptr(ctx, st["init"]), [b.mul(init_row, st["row_stride"])])
        data = b.select(from_buf, buf_ptr, init_ptr)
        buf_strides = [ctx.stride(st["buf"], 1 + i) for i in range(st["nd"])]
        strides = [b.select(from_buf, s_buf, s_init) for s_buf, s_init in zip(buf_strides, st["strides"])]
        return self._view(st["dtype"], st["shape"], strides, data, f"state{st['k']}.tap{j}")

    # ---------------------------------------------------------------- where step outputs go
    def _sink(self, j: int, shape: Sequence[ir.Value]) -> ir.Value:
        if j >= self.info.n_outs:
            return None                      # the until condition: a scratch value
        if j < self.info.n_rec:
            return self._rec_sink(self.states[j], shape)
        return self._nitsot_sink(self.nitsot[j - self.info.n_rec], shape)

    def _rec_sink(self, st: dict, shape: Sequence[ir.Value]) -> ir.Value:
        b = self.b
        for d, (got, want) in enumerate(zip(shape, st["shape"])):
            self.fail_if(b.icmp_signed("!=", got, want),
                         "scan: step %lld returned output %lld with length %lld in a dimension where its "
                         "state differs (a recurrent output keeps its shape)", [self.t, I64(st["k"]), got])
        data = self._row(st, self._write_row(st))
        strides = [self.ctx.stride(st["buf"], 1 + i) for i in range(st["nd"])]
        return self._view(st["dtype"], st["shape"], strides, data, f"out{st['k']}.row", contiguous=True)

    def _nitsot_sink(self, site: dict, shape: Sequence[ir.Value]) -> ir.Value:
        b, ctx = self.b, self.ctx
        buf = site["scratch"].struct
        with b.if_then(b.not_(b.load(site["flag"])), likely=False):
            site["scratch"].obtain([I64(1) if site["last"] else self.n] + list(shape))
            b.store(ir.Constant(ir.IntType(1), 1), site["flag"])
        for d, got in enumerate(shape):
            self.fail_if(b.icmp_signed("!=", got, ctx.shape(buf, 1 + d)),
                         "scan: step %lld returned output %lld with length %lld in a dimension where step 0 "
                         "gave another", [self.t, I64(site["j"]), got])
        row = I64(0) if site["last"] else self.t
        data = b.gep(_byte_ptr(ctx, buf), [b.mul(row, ctx.stride(buf, 0))])
        strides = [ctx.stride(buf, 1 + i) for i in range(site["nd"])]
        return self._view(site["dtype"], list(shape), strides, data, f"out{site['j']}.row", contiguous=True)

    def _copy_output(self, j: int, value: ir.Value) -> None:
        var = self.node.outputs[j]
        nd = var.type.ndim - 1
        shape = [self.ctx.shape(value, i) for i in range(nd)]
        dst = self._sink(j, shape)
        copy_into(self.ctx, value, dst, var.type.dtype, shape)

    # ---------------------------------------------------------------- after the loop
    def _results(self) -> list:
        ctx, b, info = self.ctx, self.b, self.info
        steps = b.load(self.steps)
        out: list[Any] = []
        for st in self.states:
            if st["keep"] == KEEP_ALL:
                out.append(self._first_rows(st["buf"], st["dtype"], st["nd"], steps, f"out{st['k']}")
                           if info.as_while else Value(st["buf"], owns_parent=True))
            else:
                out.append(Value(self._last_state(st, steps), owns_parent=True))
        for site in self.nitsot:
            with b.if_then(b.not_(b.load(site["flag"])), likely=False):
                site["scratch"].obtain([I64(0)] + emit_empty_shape(self, site["j"]))
            buf = site["scratch"].struct
            ctx.finalize(buf)
            out.append(self._first_rows(buf, site["dtype"], site["nd"], steps, f"out{site['j']}")
                       if info.as_while else Value(buf, owns_parent=True))
        for site in self.shared:
            cur = site["cur"]
            if site.get("generator"):
                out.append(Value(self._hand_over(site), owns_parent=False))
                continue
            shape = [ctx.shape(cur, i) for i in range(site["nd"])]
            final = ctx.allocate(self.node, info.n_outs + site["k"], shape)
            copy_into(ctx, cur, final, site["dtype"], shape)
            out.append(Value(final, owns_parent=True))
        return out

    def _hand_over(self, site: dict) -> ir.Value:
        """The loop's generator copy: into its graph output's slot (owned there), else released."""
        ctx, b = self.ctx, self.b
        var = self.node.outputs[self.info.n_outs + site["k"]]
        for j, out in enumerate(ctx.fgraph.outputs):
            if out is var and j not in ctx.in_slot:
                ctx.in_slot.add(j)
                slots = b.load(b.gep(ctx.rt, [ir.Constant(ir.IntType(32), 0),
                                              ir.Constant(ir.IntType(32), L.RT_SLOTS)], inbounds=True))
                b.store(site["copy"], b.gep(slots, [ir.Constant(ir.IntType(32), j)], inbounds=True))
                return site["cur"]
        drop_copy(ctx, site["copy"])
        return site["cur"]

    def _first_rows(self, buf: ir.Value, dtype: str, nd: int, steps: ir.Value, what: str) -> Value:
        ctx = self.ctx
        shape = [steps] + [ctx.shape(buf, 1 + i) for i in range(nd)]
        strides = [ctx.stride(buf, i) for i in range(nd + 1)]
        view = ctx.view(buf, dtype, shape, strides, ctx.data(buf), name=self.name(f"{what}.done"))
        return Value(view, owns_parent=False)

    def _last_state(self, st: dict, steps: ir.Value) -> ir.Value:
        """Output (1 or min(steps, 1), ...) holding the last state (the initial one when no step ran)."""
        ctx, b = self.ctx, self.b
        k = st["k"]
        rows = I64(1) if st["keep"] == KEEP_LAST else b.select(b.icmp_signed(">", steps, I64(0)), I64(1), I64(0))
        out = ctx.allocate(self.node, k, [rows] + st["shape"])
        last = b.sub(steps, I64(1))
        w = self._mod(last, st["rows"])
        ran = b.icmp_signed(">", steps, I64(0))
        init_ptr = b.gep(_byte_ptr(ctx, st["init"]), [b.mul(I64(st["d"] - 1), st["row_stride"])])
        data = b.select(ran, self._row(st, b.select(ran, w, I64(0))), init_ptr)
        buf_strides = [ctx.stride(st["buf"], 1 + i) for i in range(st["nd"])]
        strides = [b.select(ran, s_buf, s_init) for s_buf, s_init in zip(buf_strides, st["strides"])]
        src = self._view(st["dtype"], st["shape"], strides, data, f"out{k}.last")
        dst = self._view(st["dtype"], st["shape"], [ctx.stride(out, 1 + i) for i in range(st["nd"])],
                         _byte_ptr(ctx, out), f"out{k}.last.dst")
        with b.if_then(b.icmp_signed(">", rows, I64(0))):
            copy_into(ctx, src, dst, st["dtype"], st["shape"])
        return out
