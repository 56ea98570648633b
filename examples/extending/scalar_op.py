"""Adding an elementwise op: one declaration (numpy function, dtype rule, LLVM math as data, gradient).

Run: python examples/extending/scalar_op.py
"""

import numpy as np

import graphjit as gj
import graphjit.tensor as gt
from graphjit.scalar.basic import Libm, ScalarOp, register_scalar_op, upcast_to_float
from graphjit.tensor.elemwise import Elemwise

# --- the declaration: everything graphjit needs to know about hypot(x, y) = sqrt(x**2 + y**2) ---------------
scalar_hypot = register_scalar_op(ScalarOp(
    "example_hypot", 2, np.hypot,               # name (unique: ops pickle by it), arity, numpy implementation
    dtype_rule=upcast_to_float,                 # int8 -> float32, int64 -> float64, float32 stays float32
    llvm=Libm("hypot"),                         # the LLVM backend calls libm's hypot / hypotf
    allowed_kinds="iuf",                        # no bool, no complex
    grad=lambda m, i, o, gz: [m.mul(gz, m.true_div(i[0], o)),     # d/dx = x / hypot(x, y)
                              m.mul(gz, m.true_div(i[1], o))]))   # d/dy = y / hypot(x, y)

hypot = Elemwise(scalar_hypot)                  # the tensor function: broadcasting, fusion, reductions


def run(mode: str) -> tuple:
    """hypot(x, y) * 2 and the gradient of its sum, compiled in mode, on fixed inputs."""
    x, y = gt.dvector("x"), gt.dvector("y")
    z = hypot(x, y) * 2
    gx, gy = gj.grad(z.sum(), [x, y])
    f = gj.function([x, y], [z, gx, gy], mode=mode)
    a, b = np.array([3.0, -1.0, 0.5]), np.array([4.0, 2.0, -7.0])
    return f, f(a, b)


def main() -> None:
    for mode in ("PY", "FAST_RUN"):
        f, (z, gx, gy) = run(mode)
        fallbacks = f.native.fallback_nodes if mode != "PY" else "n/a"
        print(f"{mode:8s} hypot*2 = {z}  d/dx = {gx}  fallback nodes: {fallbacks}")
    gj.verify_grad(hypot, [np.array([3.0, -1.0, 0.5]), np.array([4.0, 2.0, -7.0])], mode="FAST_RUN")
    print("verify_grad: the declared gradient matches finite differences")
    i8 = gt.vector("i", dtype="int8")
    print("dtype of hypot(int8, int8):", hypot(i8, i8).dtype)


if __name__ == "__main__":
    main()
