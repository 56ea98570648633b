"""map, reduce, foldl, foldr: Theano's shorthands over scan."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from graphjit.scan_module.basic import scan


def map(fn: Callable[..., Any], sequences: Any, non_sequences: Any = None, truncate_gradient: int = -1,  # noqa: A001
        go_backwards: bool = False, mode: Any = None, name: Optional[str] = None) -> Tuple[Any, Dict]:
    """fn applied to each step of the sequences (no output fed back): (outputs, updates)."""
    return scan(fn, sequences=sequences, outputs_info=None, non_sequences=non_sequences,
                truncate_gradient=truncate_gradient, go_backwards=go_backwards, mode=mode, name=name)


def reduce(fn: Callable[..., Any], sequences: Any, outputs_info: Any, non_sequences: Any = None,  # noqa: A001
           go_backwards: bool = False, mode: Any = None, name: Optional[str] = None) -> Tuple[Any, Dict]:
    """Fold fn over the sequences from outputs_info; returns only the last state of each output."""
    outs, updates = scan(fn, sequences=sequences, outputs_info=outputs_info, non_sequences=non_sequences,
                         go_backwards=go_backwards, mode=mode, name=name, return_list=True)
    last = [o[-1] for o in outs]
    return (last[0] if len(last) == 1 else last), updates


def foldl(fn: Callable[..., Any], sequences: Any, outputs_info: Any, non_sequences: Any = None,
          mode: Any = None, name: Optional[str] = None) -> Tuple[Any, Dict]:
    """reduce from the first step to the last."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=False, mode=mode, name=name)


def foldr(fn: Callable[..., Any], sequences: Any, outputs_info: Any, non_sequences: Any = None,
          mode: Any = None, name: Optional[str] = None) -> Tuple[Any, Dict]:
    """reduce from the last step to the first."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=True, mode=mode, name=name)
