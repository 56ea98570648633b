"""pydotprint takes Theano's keyword arguments: each one changes the picture (or the files) as documented."""

import re

import numpy as np
import pytest

import graphjit as theano
import graphjit.tensor as T
from graphjit.ifelse import ifelse
from graphjit.printing import pydotprint
from graphjit.printing.dot import BRANCH_COLOURS, COLOURS


def _graph():
    x = T.dvector("x")
    y = T.exp(x) * 2
    z = T.tanh(y) + x
    return x, y, z


def _label_lines(dot):
    return [ln for ln in dot.splitlines() if "label=" in ln]


def test_outfile_print_output_file_and_return_image(tmp_path, capsys):
    x, _, z = _graph()
    f = theano.function([x], z)
    path = str(tmp_path / "pic.dot")
    assert pydotprint(f, outfile=path, format="dot") == path
    assert capsys.readouterr().out == f"The output file is available at {path}\n"
    with open(path) as fh:
        text = fh.read()
    assert pydotprint(f, outfile=str(tmp_path / "quiet.dot"), format="dot", print_output_file=False) is not None
    assert capsys.readouterr().out == ""
    image = pydotprint(f, outfile=str(tmp_path / "never.dot"), format="dot", return_image=True)
    assert image == text and not (tmp_path / "never.dot").exists()
    assert pydotprint(f, format="dot") == text                  # no outfile: the image, nothing written


def test_compact():
    x, y, z = _graph()
    compact = pydotprint(z, format="dot")
    full = pydotprint(z, compact=False, format="dot")
    ellipses = lambda dot: sum("shape=ellipse" in ln for ln in dot.splitlines())  # noqa: E731
    # exp(x), the constant 2 broadcast by DimShuffle{x}, exp(x) * 2 and tanh(...) drawn too
    assert ellipses(full) == ellipses(compact) + 4
    y.name = "y"
    named = pydotprint(z, format="dot")
    assert ellipses(named) == ellipses(compact) + 1 and 'label="y\\nTensorType(float64, vector)"' in named


def test_with_ids():
    x, _, z = _graph()
    f = theano.function([x], z, mode="PY")
    dot = pydotprint(f, with_ids=True, format="dot")
    ids = sorted(int(k) for k in re.findall(r"Elemwise\{[^}]*\}[^\"]*  id=(\d+)", dot))
    assert ids == list(range(len(f.maker.fgraph.toposort())))
    assert re.search(r'label="x\\nTensorType\(float64, vector\)  id=\d+"', dot)
    assert "id=" not in pydotprint(f, format="dot")


def test_high_contrast():
    x, _, z = _graph()
    filled = pydotprint(z, format="dot")
    bordered = pydotprint(z, high_contrast=False, format="dot")
    assert f"fillcolor={COLOURS['input']}" in filled and "style=filled" in filled
    assert "fillcolor" not in bordered and f"color={COLOURS['input']}" in bordered


def test_cond_highlight():
    c, a, b = T.dscalar("c"), T.dvector("a"), T.dvector("b")
    out = ifelse(T.gt(T.sqrt(c), 1), T.exp(a) * 2, T.log(b))
    f = theano.function([c, a, b], out, mode="PY")
    plain = pydotprint(f, format="dot")
    dot = pydotprint(f, cond_highlight=True, format="dot")
    assert "penwidth" not in plain
    border = {colour: [ln for ln in _label_lines(dot) if f"color={colour}, penwidth=3" in ln]
              for colour in BRANCH_COLOURS}
    cond, then, other = BRANCH_COLOURS
    assert any("sqrt" in ln for ln in border[cond]) and any("gt" in ln for ln in border[cond])
    assert any("exp" in ln for ln in border[then]) and any("mul" in ln for ln in border[then])
    assert [("log" in ln) for ln in border[other]] == [True]
    assert not any("IfElse" in ln for ln in sum(border.values(), []))


def test_color_codes():
    x, _, z = _graph()
    dot = pydotprint(z, colorCodes={"Elemwise": "#FFAABB"}, format="dot")
    boxes = [ln for ln in dot.splitlines() if "shape=box" in ln]
    elemwise = [ln for ln in boxes if "Elemwise" in ln]
    assert len(elemwise) == 4 and all("fillcolor=#FFAABB" in ln for ln in elemwise)     # exp, mul, tanh, add
    assert all("#FFAABB" not in ln for ln in boxes if "DimShuffle" in ln)     # other classes keep theirs


def test_max_label_size():
    x, _, z = _graph()
    dot = pydotprint(z, max_label_size=8, format="dot")
    assert 'label="Elemw..."' in dot and "Elemwise{exp}" not in dot
    assert "Elemwise{exp}" in pydotprint(z, format="dot")


def test_var_with_name_simple():
    x, _, z = _graph()
    assert 'label="x\\nTensorType(float64, vector)"' in pydotprint(z, format="dot")
    simple = pydotprint(z, var_with_name_simple=True, format="dot")
    assert 'label="x"' in simple and 'label="x\\n' not in simple
    constant = next(ln for ln in _label_lines(simple) if "TensorConstant" in ln)
    assert "\\nTensorType" in constant                          # no name: the Type stays


def test_scan_graphs(tmp_path, capsys):
    x = T.dvector("x")
    h, _ = theano.scan(lambda xt, acc: T.tanh(acc + xt), sequences=x, outputs_info=T.constant(0.0), name="rnn")
    f = theano.function([x], h[-1])
    assert np.isclose(f(np.ones(3)), np.tanh(1 + np.tanh(1 + np.tanh(1.0))))
    path = tmp_path / "loop.dot"
    pydotprint(f, outfile=str(path), scan_graphs=True, format="dot")
    index = next(k for k, n in enumerate(f.maker.fgraph.toposort()) if type(n.op).__name__ == "Scan")
    inner = tmp_path / f"loop_rnn_{index}.dot"
    assert inner.exists() and "tanh" in inner.read_text() and "Scan" in path.read_text()
    assert str(inner) in capsys.readouterr().out
    pydotprint(f, outfile=str(tmp_path / "alone.dot"), format="dot")
    assert not list(tmp_path.glob("alone_*"))


def test_format_and_arguments_in_theanos_order(tmp_path):
    x, _, z = _graph()
    path = str(tmp_path / "pos.dot")
    # Theano's positional order: fct, outfile, compact, format
    assert pydotprint(z, path, True, "dot", print_output_file=False) == path
    with pytest.raises(ValueError, match="format"):
        pydotprint(z, format="jpeg")
