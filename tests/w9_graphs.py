"""The W9 benchmark's random graph family (benchmarks/w9_graph.py), loaded for the tests from its file."""

import importlib.util
import pathlib

_PATH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "w9_graph.py"
_spec = importlib.util.spec_from_file_location("w9_graph_for_tests", _PATH)
w9 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(w9)
