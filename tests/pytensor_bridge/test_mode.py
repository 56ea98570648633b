"""The "GRAPHJIT" PyTensor mode: registration, the rewrites it runs, the thin call path, the errors."""

import pickle

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pymc.logprob.utils import CheckParameterValue, ParameterValueError
from pytensor.compile.mode import get_mode
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.slinalg import Cholesky, SolveTriangular

import graphjit.pytensor as gjp
from graphjit.pytensor.linker import GraphjitLinker


def compiled(inputs, outputs, **kwargs):
    """A PyTensor function in the GRAPHJIT mode and the graphjit Function inside it."""
    f = pytensor.function(inputs, outputs, mode="GRAPHJIT", **kwargs)
    return f, f.vm.jit_fn


def test_import_registers_the_mode():
    assert get_mode("GRAPHJIT") is gjp.mode() and get_mode("graphjit") is gjp.mode()
    assert isinstance(gjp.mode().linker, GraphjitLinker)


def test_elementwise_reductions_and_products_in_one_native_function():
    x, a = pt.dvector("x"), pt.dmatrix("a")
    y = pt.sum(pt.exp(x) * pt.gammaln(x + 2.0)) + pt.dot(a, x).max() + pt.special.log_softmax(x).sum()
    f, g = compiled([x, a], [y, pytensor.grad(y, x)])
    xv, av = np.array([0.1, 0.5, 1.5]), np.arange(9.0).reshape(3, 3) / 10
    ref = pytensor.function([x, a], [y, pytensor.grad(y, x)], mode=pytensor.compile.mode.Mode("py", "fast_run"))
    for got, want in zip(f(xv, av), ref(xv, av)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert g.native.fallback_nodes == []


def test_the_rewrites_stop_before_fusion_and_inplace():
    x = pt.dvector("x")
    f, _ = compiled([x], pt.exp(x) * 2.0 + pt.log(x))
    names = {type(n.op.scalar_op).__name__ for n in f.maker.fgraph.apply_nodes if hasattr(n.op, "scalar_op")}
    assert "Composite" not in names
    assert all(not getattr(n.op, "destroy_map", None) for n in f.maker.fgraph.apply_nodes)


def test_the_rewrites_leave_out_the_sparse_usmm_pattern(monkeypatch):
    # its constraint reads config.blas__ldflags, whose first read runs g++ probes inside the compile
    from pytensor.sparse.rewriting import local_usmm
    seen = []
    monkeypatch.setattr(local_usmm, "transform", lambda fgraph, node, **kw: seen.append(node) and None)
    x, z = pt.dvector("x"), pt.dvector("z")
    y = z - pt.exp(x) * x
    compiled([x, z], y)
    assert seen == []
    pytensor.function([x, z], y, mode=pytensor.compile.mode.Mode("py", "fast_run"))
    assert seen                     # PyTensor's own fast_run tries it on the same graph


def test_the_thunk_hands_its_outputs_to_the_function():
    x = pt.dvector("x")
    f, g = compiled([x], [pt.sum(x ** 2), 2.0 * x])
    f.trust_input = True
    value, grad = f(np.array([1.0, 2.0]))
    assert float(value) == 5.0 and grad.tolist() == [2.0, 4.0]
    f.vm.inputs[0][0] = np.array([3.0])
    assert [np.asarray(v).tolist() for v in f.vm()] == [9.0, [6.0]]


def test_an_op_without_translation_names_the_op_and_the_variable():
    x = pt.dvector("x")
    y = pt.sort(x)
    y.name = "sorted_x"
    with pytest.raises(gjp.UntranslatedOpError, match=r"SortOp.*sorted_x.*model variables x"):
        pytensor.function([x], y, mode="GRAPHJIT")


def test_blockwise_with_batch_dimensions_is_vectorized_by_graphjit():
    a, b = pt.tensor3("a"), pt.tensor3("b")
    chol = Blockwise(Cholesky(lower=True))(a)
    f, g = compiled([a, b], [chol, Blockwise(SolveTriangular(lower=True, b_ndim=2))(chol, b)])
    rng = np.random.default_rng(0)
    m = rng.normal(size=(3, 4, 4))
    spd, rhs = m @ m.transpose(0, 2, 1) + 4 * np.eye(4), rng.normal(size=(3, 4, 2))
    lower, x = f(spd, rhs)
    np.testing.assert_allclose(lower, np.linalg.cholesky(spd), rtol=1e-12)
    np.testing.assert_allclose(np.einsum("bij,bjk->bik", lower, x), rhs, rtol=1e-10, atol=1e-12)
    assert g.native.fallback_nodes == []


def test_solve_inverse_and_determinants():
    a, b = pt.dmatrix("a"), pt.dvector("b")
    outs = [pt.linalg.solve(a, b), pt.linalg.solve(a @ a.T, b, assume_a="pos"), pt.linalg.inv(a),
            pt.linalg.det(a), *pt.linalg.slogdet(a)]
    f, g = compiled([a, b], outs)
    av, bv = np.array([[3.0, 1.0], [-1.0, 2.0]]), np.array([1.0, 2.0])
    want = [np.linalg.solve(av, bv), np.linalg.solve(av @ av.T, bv), np.linalg.inv(av), np.linalg.det(av),
            *np.linalg.slogdet(av)]
    for got, ref in zip(f(av, bv), want):
        np.testing.assert_allclose(got, ref, rtol=1e-12)
    assert g.native.fallback_nodes == []


def test_check_parameter_value_as_minus_inf_or_a_raise():
    x = pt.dscalar("x")
    ninf = CheckParameterValue("x > 0", can_be_replaced_by_ninf=True)(pt.log(x), pt.gt(x, 0))
    strict = CheckParameterValue("x > 0")(pt.log(x), pt.gt(x, 0))
    mode = gjp.mode().excluding("local_check_parameter_to_ninf_switch")
    f = pytensor.function([x], ninf, mode=mode)
    assert f(1.0) == 0.0 and f(-1.0) == -np.inf
    g = pytensor.function([x], strict, mode=mode)
    assert g(1.0) == 0.0
    with pytest.raises(ParameterValueError, match="x > 0"):
        g(-1.0)


def test_boolean_arithmetic_and_scalar_index_arithmetic():
    x, i = pt.dvector("x"), pt.lscalar("i")
    y = 1.0 - pt.eq(x, 0.0)
    f, _ = compiled([x, i], [y, x[i + 1:], x[i - 1]])
    out = f(np.array([0.0, 1.0, 2.0]), 1)
    assert [np.asarray(o).tolist() for o in out] == [[0.0, 1.0, 1.0], [2.0], 0.0]


def test_a_function_pickles_and_recompiles_with_graphjit():
    """PyMC's multiprocess sampling pickles the compiled logp+dlogp to its workers."""
    x = pt.dvector("x")
    f, g = compiled([x], [pt.sum(pt.exp(x)), pt.exp(x)])
    assert g.call_path == "native"
    clone = pickle.loads(pickle.dumps(f))
    assert isinstance(clone.maker.linker, GraphjitLinker)
    np.testing.assert_allclose(clone(np.array([0.0, 1.0]))[0], 1.0 + np.e)
