"""debugprint options: print_op_info (fused loops, fallbacks), destroy/view maps, ids, depth, file."""

import io

import numpy as np
import pytest

import graphjit as gj
import graphjit.tensor as gt
from graphjit.printing import debugprint
from tests.perform_only import PlusOne

pytestmark = pytest.mark.filterwarnings("ignore::graphjit.link.llvm.ir.fallback.FallbackWarning")


def compiled():
    x = gt.dvector("x")
    u = PlusOne()(x)
    return gj.function([x], (gt.exp(-x) * 2).sum() + u.sum())


def test_print_op_info_marks_fused_loops_and_fallbacks():
    f = compiled()
    text = debugprint(f, file="str", print_op_info=True)
    lines = text.splitlines()
    fused = [ln for ln in lines if "fused loop" in ln]
    loops = {ln.split("fused loop ")[1].split()[0] for ln in fused}
    assert len(loops) == f.native.n_loop_groups
    assert sum("Elemwise{neg}" in ln or "Elemwise{exp" in ln for ln in fused) == 2
    assert [ln for ln in lines if "(python perform)" in ln][0].lstrip(" |").startswith("PlusOne")
    plain = debugprint(f, file="str")
    assert "fused loop" not in plain and "python perform" not in plain


def test_destroy_and_view_maps():
    x = gt.dvector("x")
    e = gt.inc_subtensor(x[0:2], 1.0, inplace=True)
    text = debugprint(e, file="str", print_destroy_map=True)
    assert text.splitlines()[0].endswith("d={0: [0]}")
    v = x[1:]
    assert debugprint(v, file="str", print_view_map=True).splitlines()[0].endswith("v={0: [0]}")
    assert "d=" not in debugprint(e, file="str") and "v=" not in debugprint(v, file="str")


def test_ids_depth_type_and_file():
    x = gt.dvector("x")
    e = gt.exp(-x) * 2
    assert debugprint(e, file="str", depth=1).count("\n") == 3
    assert debugprint(e, file="str", ids="int").splitlines()[1].startswith(" |Elemwise{exp} [@1]")
    assert "[@" not in debugprint(e, file="str", ids="")
    assert "<TensorType(float64, vector)>" in debugprint(e, file="str", print_type=True)
    buf = io.StringIO()
    assert debugprint(e, file=buf) is buf and buf.getvalue() == debugprint(e, file="str")
    with pytest.raises(ValueError, match="ids"):
        debugprint(e, ids="hex")


def test_print_test_value_in_compiled_function_graph():
    x = gt.dvector("x")
    with gj.change_flags(compute_test_value="raise"):
        x.tag.test_value = np.zeros(2)
        e = gt.exp(x)
    assert "test_value=array([1., 1.])" in debugprint(e, file="str", print_test_value=True)
