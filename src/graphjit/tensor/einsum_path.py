"""einsum's subscripts parsed as numpy parses them, and the order of pairwise contractions (greedy or optimal).

A label is a letter, or an int for an ellipsis dimension: the ellipsis dimensions are numbered right-aligned
(0 is the outermost of the widest ellipsis), so operands with fewer of them broadcast against the others, as
numpy does.  Pure Python: the graph is built by tensor/einsum.py.
"""

from __future__ import annotations

import itertools
import string
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

Label = Union[str, int]
Term = Tuple[Label, ...]
Path = List[Tuple[int, ...]]

GUESSED_LENGTH = 16          # the length assumed for a dimension whose static length is unknown
OPTIMAL_MAX_OPERANDS = 8     # 'optimal' searches every order up to this many operands (3^n work), then greedy


def _split_term(term: str, which: str) -> Tuple[List[str], List[str], bool]:
    """The letters before and after a term's ellipsis, and whether it has one."""
    if term.count(".") not in (0, 3) or (term.count(".") == 3 and "..." not in term):
        raise ValueError(f"einsum: subscripts string contains a '.' that is not part of an ellipsis "
                         f"('...') in {which}")
    head, dots, tail = term.partition("...")
    for ch in head + tail:
        if ch not in string.ascii_letters:
            raise ValueError(f"einsum: invalid subscript {ch!r} in the subscripts string, subscripts must "
                             "be letters")
    return list(head), list(tail), bool(dots)


def parse_subscripts(subscripts: str, ndims: Sequence[int]) -> Tuple[List[Term], Term]:
    """numpy.einsum's subscripts for operands of these ranks: each operand's labels and the output's."""
    if not ndims:
        raise ValueError("einsum: no input operands")
    text = subscripts.replace(" ", "")
    if "->" in text:
        lhs, _, rhs = text.partition("->")
        if "-" in rhs or ">" in rhs:
            raise ValueError("einsum: subscripts string contains more than one '->'")
    elif "-" in text or ">" in text:
        raise ValueError("einsum: subscripts string does not contain a proper '->' output")
    else:
        lhs, rhs = text, None
    parts = lhs.split(",")
    if len(parts) != len(ndims):
        raise ValueError(f"einsum: the subscripts name {len(parts)} operand(s) but {len(ndims)} were given")
    terms, widths = _input_terms(parts, ndims)
    width = max(widths, default=0)
    return terms, _output_term(rhs, terms, width)


def _input_terms(parts: Sequence[str], ndims: Sequence[int]) -> Tuple[List[Term], List[int]]:
    terms, widths = [], []
    for k, (part, ndim) in enumerate(zip(parts, ndims)):
        head, tail, ell = _split_term(part, f"operand {k}")
        n_ell = ndim - len(head) - len(tail)
        if n_ell < 0:
            raise ValueError(f"einsum: the subscripts {part!r} of operand {k} name more dimensions than its "
                             f"{ndim}")
        if n_ell and not ell:
            raise ValueError(f"einsum: operand {k} has {ndim} dimension(s) but its subscripts {part!r} name "
                             f"{len(head) + len(tail)} and have no '...' for the rest")
        widths.append(n_ell)
        terms.append((head, n_ell, tail))
    width = max(widths, default=0)
    out = [tuple(head) + tuple(range(width - n, width)) + tuple(tail) for head, n, tail in terms]
    return out, widths


def _output_term(rhs: Optional[str], terms: Sequence[Term], width: int) -> Term:
    counts: Dict[Label, int] = {}
    for term in terms:
        for label in term:
            counts[label] = counts.get(label, 0) + 1
    if rhs is None:                      # implicit: the ellipsis, then the letters seen once, sorted
        once = sorted(lab for lab, c in counts.items() if isinstance(lab, str) and c == 1)
        return tuple(range(width)) + tuple(once)
    head, tail, ell = _split_term(rhs, "the output")
    if width and not ell:
        raise ValueError("einsum: the operands have more dimensions than the subscripts name, but the output "
                         "has no '...' to keep them")
    out = tuple(head) + (tuple(range(width)) if ell else ()) + tuple(tail)
    for label in head + tail:
        if out.count(label) > 1:
            raise ValueError(f"einsum: output subscript {label!r} appears more than once")
        if label not in counts:
            raise ValueError(f"einsum: output subscript {label!r} does not appear in any input")
    return out


def interleaved(args: Sequence[Any]) -> Tuple[str, List[Any]]:
    """numpy's other form, (op0, sublist0, op1, sublist1, ..., [sublist_out]), as subscripts and operands
    (the ints 0-25 of a sublist are 'A'-'Z', 26-51 'a'-'z', Ellipsis is '...')."""
    n = len(args) // 2
    terms = [_sublist(args[2 * k + 1]) for k in range(n)]
    text = ",".join(terms) + ("->" + _sublist(args[-1]) if len(args) % 2 else "")
    return text, [args[2 * k] for k in range(n)]


def _sublist(sub: Any) -> str:
    if isinstance(sub, (str, bytes)) or not hasattr(sub, "__iter__"):
        raise TypeError(f"einsum: a sublist must be a sequence of ints and Ellipsis, got {sub!r}")
    letters = string.ascii_uppercase + string.ascii_lowercase
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and not isinstance(s, bool) and 0 <= s < len(letters):
            out.append(letters[s])
        else:
            raise ValueError(f"einsum: subscript {s!r} of a sublist is not an int in [0, 52) or Ellipsis")
    return "".join(out)


# ------------------------------------------------------------------------------------------------
# Contraction order
# ------------------------------------------------------------------------------------------------

def _size(labels: FrozenSet[Label], sizes: Dict[Label, int]) -> int:
    total = 1
    for label in labels:
        total *= sizes.get(label, GUESSED_LENGTH)
    return total


def _kept(a: FrozenSet[Label], b: FrozenSet[Label], others: Sequence[FrozenSet[Label]],
          output: FrozenSet[Label]) -> FrozenSet[Label]:
    """The labels of a and b's contraction: those the output or another operand still needs."""
    needed = set(output).union(*others) if others else set(output)
    return frozenset(lab for lab in a | b if lab in needed)


def _greedy(terms: List[FrozenSet[Label]], output: FrozenSet[Label], sizes: Dict[Label, int]) -> Path:
    """opt_einsum's greedy: contract the pair that shrinks the total size most (pairs sharing a label first)."""
    terms, path = list(terms), []
    while len(terms) > 1:
        pairs = list(itertools.combinations(range(len(terms)), 2))
        sharing = [(i, j) for i, j in pairs if terms[i] & terms[j]]
        best, best_key = None, None
        for i, j in sharing or pairs:
            others = [t for k, t in enumerate(terms) if k not in (i, j)]
            kept = _kept(terms[i], terms[j], others, output)
            key = (_size(kept, sizes) - _size(terms[i], sizes) - _size(terms[j], sizes),
                   _size(terms[i] | terms[j], sizes))
            if best_key is None or key < best_key:
                best, best_key = (i, j, kept), key
        i, j, kept = best
        path.append((i, j))
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [kept]
    return path


def _optimal(terms: List[FrozenSet[Label]], output: FrozenSet[Label], sizes: Dict[Label, int]) -> Path:
    """The order of least total multiply-adds, over every binary contraction tree (dynamic programming)."""
    n = len(terms)
    labels_of = {1 << k: t for k, t in enumerate(terms)}

    def result(mask: int) -> FrozenSet[Label]:
        inside = frozenset().union(*(terms[k] for k in range(n) if mask >> k & 1))
        outside = [terms[k] for k in range(n) if not mask >> k & 1]
        return _kept(inside, frozenset(), outside, output)

    best: Dict[int, Tuple[int, Any]] = {1 << k: (0, k) for k in range(n)}
    for mask in sorted(range(1, 1 << n), key=lambda m: bin(m).count("1")):
        if mask in best:
            continue
        labels_of[mask] = result(mask)
        sub = (mask - 1) & mask
        while sub:
            rest = mask ^ sub
            if sub < rest:
                flops = _size(labels_of[sub] | labels_of[rest], sizes)
                cost = best[sub][0] + best[rest][0] + flops
                if mask not in best or cost < best[mask][0]:
                    best[mask] = (cost, (sub, rest))
            sub = (sub - 1) & mask
    return _tree_to_path(best, (1 << n) - 1, n)


def _tree_to_path(best: Dict[int, Tuple[int, Any]], full: int, n: int) -> Path:
    """A contraction tree as numpy's path: pairs of positions in the shrinking operand list."""
    order = [1 << k for k in range(n)]      # the operand list, as masks
    path: Path = []

    def walk(mask: int) -> None:
        node = best[mask][1]
        if isinstance(node, int):
            return
        walk(node[0])
        walk(node[1])
        i, j = sorted((order.index(node[0]), order.index(node[1])))
        path.append((i, j))
        del order[j], order[i]
        order.append(mask)

    walk(full)
    return path


def contraction_path(terms: Sequence[Term], output: Term, sizes: Dict[Label, int], optimize: Any) -> Path:
    """The steps (positions contracted together), in numpy's path format, for optimize: False (left to right),
    True/'greedy', 'optimal', or a path given."""
    sets = [frozenset(t) for t in terms]
    out = frozenset(output)
    if len(sets) < 2:
        return []
    if isinstance(optimize, (list, tuple)):
        return _given_path(optimize, len(sets))
    if optimize is False:
        return [(0, 1)] * (len(sets) - 1)
    if optimize is True or optimize == "greedy" or (optimize == "optimal" and len(sets) > OPTIMAL_MAX_OPERANDS):
        return _greedy(sets, out, sizes)
    if optimize == "optimal":
        return _optimal(sets, out, sizes)
    raise TypeError(f"einsum: optimize must be False, True, 'greedy', 'optimal' or a path, got {optimize!r}")


def _given_path(path: Sequence[Any], n: int) -> Path:
    """numpy's explicit path (['einsum_path', (0, 1), ...]), checked: each step's operands leave the list and
    their contraction is appended to it."""
    steps = list(path[1:]) if path and path[0] == "einsum_path" else list(path)
    out: Path = []
    for step in steps:
        if (not isinstance(step, (list, tuple)) or not step or len(set(step)) != len(step)
                or any(not isinstance(k, int) or not 0 <= k < n for k in step)):
            raise ValueError(f"einsum: invalid path step {step!r} for {n} operand(s)")
        out.append(tuple(step))
        n -= len(step) - 1
    if n != 1:
        raise ValueError(f"einsum: the path leaves {n} operands uncontracted")
    return out
