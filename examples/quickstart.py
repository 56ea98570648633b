"""graphjit in one page: build a graph, look at it, compile it, run it.

Run: python examples/quickstart.py
"""

import numpy as np

import graphjit as gj
import graphjit.tensor as gt


def main() -> None:
    x = gt.dmatrix("x")
    y = gt.dvector("y")
    z = gt.dmatrix("z")

    # A graph: each operator call builds an Apply node; Python numbers become constants.
    e = gt.exp(-x * x) * gt.sin(y) + x * y / (1 + z * z)
    total = e.sum(axis=1)
    print("The graph we built:")
    gj.dprint(total)

    f = gj.function([x, y, z], [e, total])
    print("\nThe compiled function's graph (after rewrites), in execution order:")
    gj.dprint(f)

    rng = np.random.default_rng(0)
    xv, yv, zv = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(3, 4))
    ev, tv = f(xv, yv, zv)
    expected = np.exp(-xv * xv) * np.sin(yv) + xv * yv / (1 + zv * zv)
    assert np.allclose(ev, expected) and np.allclose(tv, expected.sum(axis=1))
    print("\nrow sums:", tv)

    # Shared variables keep state between calls; updates run after each call.
    count = gj.shared(np.zeros(()), name="count")
    step = gj.function([], count, updates=[(count, count + 1)])
    for _ in range(3):
        step()
    print("counter after three calls:", count.get_value())


if __name__ == "__main__":
    main()
