"""Every python block of docs/control_flow.md runs, in order, in one namespace (the docs convention)."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.soak
def test_control_flow_doc_runs():
    text = (ROOT / "docs" / "control_flow.md").read_text()
    blocks = re.findall(r"(<!-- no-run -->\n)?```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 10
    namespace: dict = {}
    for skip, code in blocks:
        if not skip:
            exec(compile(code, "docs/control_flow.md", "exec"), namespace)
