"""einsum against numpy.einsum in every mode (every layout, zero-size inputs), its contraction paths, gradients,
native lowering (the batched product is one Matmul) and numpy's errors for bad subscripts and lengths."""

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.gradient import verify_grad
from graphjit.tensor.blas import Matmul
from graphjit.tensor.einsum_path import contraction_path, parse_subscripts
from op_check import OP_TEST_MODES, Case, arr, check_case

E = gt.einsum


def _outs(*specs):
    """A build and a numpy reference computing several einsums of the same inputs: (subscripts, operand indices)."""
    return (lambda *xs: [E(s, *[xs[i] for i in idx]) for s, idx in specs],
            lambda *xs: [np.einsum(s, *[xs[i] for i in idx]) for s, idx in specs])


CASES = [
    Case("matrix_products", *_outs(("ij,jk->ik", (0, 1)), ("ij,jk", (0, 1)), ("ji,jk->ik", (2, 1)),
                                   ("ij,kj->ki", (0, 3))),
         [arr((3, 4)), arr((4, 5)), arr((4, 3)), arr((6, 4))]),
    Case("batched", *_outs(("bij,bjk->bik", (0, 1)), ("bij,bjk->kbi", (0, 1)), ("bij,bjk->ik", (0, 1)),
                           ("bij,bj->bi", (0, 2)), ("bi,bi->b", (2, 2))),
         [arr((2, 3, 4)), arr((2, 4, 5)), arr((2, 4))], dtypes=("float64",)),
    Case("one_operand", *_outs(("ij->ji", (0,)), ("ii->i", (0,)), ("ii", (0,)), ("ij->", (0,)), ("ji", (0,))),
         [arr((3, 3))], dtypes=("float64", "int8")),
    Case("vectors", *_outs(("i,i", (0, 1)), ("i,j->ij", (0, 1)), ("i,i->i", (0, 1)), ("i", (0,))),
         [arr((5,)), arr((5,))]),
    Case("ellipsis_broadcast", *_outs(("...ij,...jk->...ik", (0, 1)), ("...ij,...jk", (0, 1)),
                                      ("...ii->...i", (2,))),
         [arr((2, 1, 3, 4)), arr((5, 4, 2)), arr((2, 3, 3))], dtypes=("float64",)),
    Case("static_length_one_broadcasts", *_outs(("ij,jk", (0, 1)), ("ij,ij->ij", (0, 2)), ("ij,ij->", (0, 0))),
         [arr((2, 1), static=True), arr((3, 4)), arr((2, 3))], dtypes=("float64",), zero_len=3),
    Case("run_time_length_one_broadcasts", *_outs(("ij,jk", (0, 1)), ("ijk,jkl->il", (2, 3)), ("ij,jk", (4, 5))),
         [arr((2, 1)), arr((3, 4)), arr((2, 1, 3)), arr((4, 3, 5)), arr((2, 3)), arr((1, 4))],
         dtypes=("float64",), zero_len=3),
    Case("several_summed", *_outs(("ijk,jil->kl", (0, 1)), ("ijk,jik->", (0, 2)), ("iij->j", (3,)),
                                  ("iii", (4,))),
         [arr((2, 3, 4)), arr((3, 2, 5)), arr((3, 2, 4)), arr((3, 3, 4)), arr((3, 3, 3))], dtypes=("float64",)),
    Case("three_operands", lambda a, b, c: [E("ij,jk,kl->il", a, b, c, optimize=o)
                                            for o in ("greedy", "optimal", False, ["einsum_path", (1, 2), (0, 1)])]
         + [E("ij,jk,kl,ij", a, b, c, a)],
         lambda a, b, c: [np.einsum("ij,jk,kl->il", a, b, c)] * 4 + [np.einsum("ij,jk,kl,ij", a, b, c, a)],
         [arr((2, 3)), arr((3, 4)), arr((4, 5))], dtypes=("float64",)),
    Case("scalar_operands", *_outs((",ij->ij", (0, 1)), ("", (0,)), (",ij", (0, 1)), ("ij,->", (1, 0))),
         [arr(()), arr((2, 3))], dtypes=("float64",)),
    Case("interleaved_sublists", lambda a, b: [E(a, [0, 1], b, [1, 2], [0, 2]), E(a, [Ellipsis, 27]),
                                              E(a, [26, 0], b, [0, 26])],
         lambda a, b: [np.einsum(a, [0, 1], b, [1, 2], [0, 2]), np.einsum(a, [Ellipsis, 27]),
                       np.einsum(a, [26, 0], b, [0, 26])],
         [arr((3, 3)), arr((3, 3))], dtypes=("float64",)),
    Case("mixed_dtypes", *_outs(("ij,jk", (0, 1)), ("ij,jk", (0, 2)), ("i,i", (3, 3)), ("ij->", (0,))),
         [arr((3, 4), "int8"), arr((4, 5), "float32"), arr((4, 5), "int32"), arr((3,), "bool")],
         dtypes=("float64",), rtol=1e-5, atol=1e-5),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_against_numpy(case):
    check_case(case)


def test_native_and_one_blas_product():
    a, b = gt.dtensor3("a"), gt.dtensor3("b")
    m, i8 = gt.dmatrix("m"), gt.TensorType("int8", (None, None, None))("i8")
    out = E("bij,bjk->bik", a, b)
    outs = [out, E("ijk,jil->kl", a, b), E("...ii->...i", i8), E("ii,ij,jk", m, m, m),
            gj.grad(E("bij,bjk,bkk", a, b, a).sum(), a)]
    f = gj.function([a, b, m, i8], outs, mode="FAST_RUN")
    assert f.native.fallback_nodes == []
    # the summed length may be 1 at run time: each operand passes a SumToShape (a view unless it is)
    g = gj.function([a, b], out, mode="FAST_RUN")
    assert [type(n.op).__name__ for n in g.maker.fgraph.toposort() if n.outputs[0].ndim == 3] == \
        ["SumToShape", "SumToShape", "Matmul"]
    sa, sb = gt.TensorType("float64", (2, 3, 4))("sa"), gt.TensorType("float64", (2, 4, 5))("sb")
    h = gj.function([sa, sb], E("bij,bjk->bik", sa, sb), mode="FAST_RUN")
    assert [type(n.op) for n in h.maker.fgraph.toposort()] == [Matmul]
    x, y = np.ones((2, 3, 4)), np.ones((2, 4, 5))
    np.testing.assert_allclose(h(x, y), np.einsum("bij,bjk->bik", x, y))


@pytest.mark.parametrize("mode", ["PY", "FAST_RUN"])
def test_gradients(mode):
    rng = np.random.default_rng(0)
    for sub, shapes in [("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
                        ("ii,jik,ijl->kl", [(2, 2), (3, 2, 4), (2, 3, 5)]),
                        ("...ij,...jk->...ik", [(2, 1, 3, 1), (5, 4, 2)])]:   # j: 1 against 4
        verify_grad(lambda *xs: E(sub, *xs), [rng.normal(size=s) for s in shapes], n_tests=1, rng=rng, mode=mode)


@pytest.mark.parametrize("mode", OP_TEST_MODES)
def test_run_time_length_errors(mode):
    a, b = gt.dtensor3("a"), gt.dtensor3("b")
    m, n = gt.dmatrix("m"), gt.dmatrix("n")
    for sub, ins, vals in [("ij,jk", [m, n], [np.ones((2, 3)), np.ones((4, 5))]),
                           ("ii", [m], [np.ones((2, 3))]),
                           ("ijk,jil->kl", [a, b], [np.ones((2, 3, 4)), np.ones((2, 3, 5))])]:
        with pytest.raises(ValueError):
            np.einsum(sub, *vals)
        f = gj.function(ins, E(sub, *ins), mode=mode)
        with pytest.raises(ValueError):
            f(*vals)


@pytest.mark.parametrize("sub, shapes", [
    ("ij", [(3,)]), ("i", [(2, 3)]), ("i1", [(3,)]), ("i->j", [(3,)]), ("i->ii", [(3,)]), ("..i", [(3,)]),
    ("...i...", [(3,)]), ("i,i", [(3,)]), ("i", [(3,), (3,)]), ("i->->i", [(3,)]), ("i-", [(3,)]),
    ("...i->i", [(2, 3)]), ("ii", [(2, 3)]), ("ij,jk", [(2, 3), (4, 5)]), ("i,i", [(2,), (3,)]),
])
def test_bad_subscripts_and_static_lengths(sub, shapes):
    vals = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError):
        np.einsum(sub, *vals)
    with pytest.raises(ValueError):
        E(sub, *[gt.TensorType("float64", s)() for s in shapes])


def test_bad_arguments():
    with pytest.raises(ValueError):
        E("")
    with pytest.raises(TypeError):
        E(gt.dvector(), "i")                           # a sublist is not a string
    with pytest.raises(ValueError):
        E(gt.dvector(), [52])
    with pytest.raises(TypeError):
        E("i,i", gt.dvector(), gt.dvector(), optimize="fastest")
    with pytest.raises(ValueError):
        E("i,i,i", gt.dvector(), gt.dvector(), gt.dvector(), optimize=["einsum_path", (0, 1)])


def test_parse_and_paths():
    assert parse_subscripts("aB", [2]) == ([("a", "B")], ("B", "a"))            # implicit: ASCII order
    assert parse_subscripts("...i,i...", [3, 2]) == ([(0, 1, "i"), ("i", 1)], (0, 1))
    terms, out = parse_subscripts("ab,cd,bc->ad", [2] * 3)
    sizes = dict(a=2, b=100, c=100, d=2)             # not the outer product of the two small ones first
    assert contraction_path(terms, out, sizes, "greedy") == [(0, 2), (0, 1)]
    assert contraction_path(terms, out, sizes, "optimal") == [(0, 2), (0, 1)]
    assert contraction_path(terms, out, sizes, False) == [(0, 1), (0, 1)]
