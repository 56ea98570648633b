"""``vectorize(fn_or_op, signature)``: numpy.vectorize for graphs. An Op becomes a Blockwise over its signature;
a Python function building a graph on core-shaped inputs is built once on dummies and vectorized over the loop
dimensions of the actual inputs (tensor/blockwise.py's ``vectorize_graph``)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from graphjit.graph.op import Op
from graphjit.tensor.basic import as_tensor_variable
from graphjit.tensor.blockwise import Blockwise, vectorize_graph
from graphjit.tensor.gufunc_signature import parse_signature
from graphjit.tensor.type import TensorType


def vectorize(fn_or_op: Any, signature: Optional[str] = None) -> Callable[..., Any]:
    """numpy.vectorize with a gufunc signature: returns a callable building the batched graph (an Op's signature
    defaults to its ``gufunc_signature`` attribute; a function needs one)."""
    if isinstance(fn_or_op, Op):
        signature = signature if signature is not None else getattr(fn_or_op, "gufunc_signature", None)
        if signature is None:
            raise ValueError(f"vectorize({fn_or_op}): pass a signature such as '(m,n),(n)->(m)'")
        op = Blockwise(fn_or_op, signature)
        return op
    if not callable(fn_or_op):
        raise TypeError(f"vectorize: expected an Op or a function, got {fn_or_op!r}")
    if signature is None:
        raise ValueError("vectorize(function) needs a signature such as '(n),(n)->()' (the function's graph is "
                         "built once on core-shaped inputs)")
    ins, outs = parse_signature(signature)
    fn = fn_or_op

    def vectorized(*inputs: Any) -> Any:
        if len(inputs) != len(ins):
            raise TypeError(f"vectorize({getattr(fn, '__name__', fn)}): the signature {signature!r} takes "
                            f"{len(ins)} input(s), got {len(inputs)}")
        inputs = [as_tensor_variable(x) for x in inputs]
        dummies = []
        for i, (x, core) in enumerate(zip(inputs, ins)):
            if x.type.ndim < len(core):
                raise TypeError(f"vectorize: input {i} ({x.describe()}) has fewer dimensions than its core "
                                f"operand ({','.join(core)})")
            dummies.append(TensorType(x.type.dtype, x.type.shape[x.type.ndim - len(core):])())
        result = fn(*dummies)
        many = isinstance(result, (list, tuple))
        results = [as_tensor_variable(r) for r in (result if many else [result])]
        if len(results) != len(outs):
            raise ValueError(f"vectorize: the function returned {len(results)} output(s), the signature "
                             f"{signature!r} has {len(outs)}")
        for j, (r, core) in enumerate(zip(results, outs)):
            if r.type.ndim != len(core):
                raise ValueError(f"vectorize: output {j} of the function has {r.type.ndim} dimension(s), the "
                                 f"signature gives it {len(core)}")
        batched = vectorize_graph(results, dict(zip(dummies, inputs)))
        return type(result)(batched) if many else batched[0]

    vectorized.__name__ = getattr(fn, "__name__", "vectorized")
    vectorized.__doc__ = getattr(fn, "__doc__", None)
    return vectorized


__all__ = ["vectorize", "Blockwise", "vectorize_graph"]
