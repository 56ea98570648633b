"""Import paths users know keep working after the backend's modules moved (docs/extending.md, examples/)."""

import warnings


def test_graph_context_keeps_its_old_path():
    """GraphContext and Value, defined in ir/graph_context.py, still import from ir/native_entry.py."""
    from graphjit.link.llvm.ir.graph_context import GraphContext, Value
    from graphjit.link.llvm.ir.native_entry import GraphContext as OldGraphContext, Value as OldValue
    assert OldGraphContext is GraphContext and OldValue is Value


def test_fallback_warning_keeps_its_path():
    """FallbackWarning imports from ir/fallback.py, where users filter it from."""
    from graphjit.link.llvm.ir.fallback import FallbackWarning
    assert issubclass(FallbackWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
