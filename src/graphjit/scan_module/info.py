"""ScanInfo: the static description of a Scan node's inputs and outputs (hashable, part of the op's props)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

KEEP_ALL = 0        # an output stores every step: shape (n_steps, ...)
KEEP_LAST = 1       # only the last state: shape (1, ...); the initial state's last row when no step ran
KEEP_LAST_OR_EMPTY = 2   # only the last state: shape (min(n_steps, 1), ...) (what out[-1] needs)


@dataclass(frozen=True)
class ScanInfo:
    """How a Scan's outer inputs and outputs are grouped.

    Outer inputs: ``n_steps``, the sequences (each read at tap 0: scan() slices taps apart), the initial states of
    the recurrent outputs (taps ``rec_taps[k]``, all negative), the initial values of the shared states (shared
    variables updated by the step, e.g. random generators), the non-sequences.
    Outer outputs: the recurrent outputs, the nit-sot outputs (not fed back), the shared states' final values.
    The inner graph's inputs follow the same order (one input per tap of a recurrent output), its outputs too,
    plus the ``until`` condition last when ``as_while``.
    """

    n_seqs: int
    rec_taps: Tuple[Tuple[int, ...], ...]
    n_nitsot: int
    n_shared: int
    n_nonseqs: int
    as_while: bool = False
    truncate_gradient: int = -1
    name: str = ""
    keep: Tuple[int, ...] = ()          # per recurrent + nit-sot output: KEEP_ALL / KEEP_LAST / KEEP_LAST_OR_EMPTY
    rewritten: bool = False             # the inner graph went through the fast_run rewrites (scan_module/rewriting)

    @property
    def n_rec(self) -> int:
        """Number of recurrent outputs (sit-sot and mit-sot)."""
        return len(self.rec_taps)

    @property
    def n_outs(self) -> int:
        """Number of tensor outputs stored per step (recurrent then nit-sot)."""
        return self.n_rec + self.n_nitsot

    def depth(self, k: int) -> int:
        """How many past states recurrent output k reads (-min(taps))."""
        return -min(self.rec_taps[k])

    def stacked_init(self, k: int) -> bool:
        """Whether recurrent output k's initial value stacks several past states (taps other than [-1])."""
        return tuple(self.rec_taps[k]) != (-1,)

    def keep_of(self, j: int) -> int:
        """The storage mode of output j (recurrent or nit-sot)."""
        return self.keep[j] if self.keep else KEEP_ALL

    # ---------------------------------------------------------------- positions
    def outer_seqs(self) -> range:
        """Outer input positions of the sequences."""
        return range(1, 1 + self.n_seqs)

    def outer_inits(self) -> range:
        """Outer input positions of the recurrent outputs' initial values."""
        return range(1 + self.n_seqs, 1 + self.n_seqs + self.n_rec)

    def outer_shared(self) -> range:
        """Outer input positions of the shared states."""
        start = 1 + self.n_seqs + self.n_rec
        return range(start, start + self.n_shared)

    def outer_nonseqs(self) -> range:
        """Outer input positions of the non-sequences."""
        start = 1 + self.n_seqs + self.n_rec + self.n_shared
        return range(start, start + self.n_nonseqs)

    def inner_tap_inputs(self, k: int) -> range:
        """Inner input positions of recurrent output k's taps."""
        start = self.n_seqs + sum(len(t) for t in self.rec_taps[:k])
        return range(start, start + len(self.rec_taps[k]))

    @property
    def n_inner_rec_inputs(self) -> int:
        """Inner inputs taken by the recurrent outputs' taps."""
        return sum(len(t) for t in self.rec_taps)

    def inner_shared(self) -> range:
        """Inner input positions of the shared states."""
        start = self.n_seqs + self.n_inner_rec_inputs
        return range(start, start + self.n_shared)

    def inner_nonseqs(self) -> range:
        """Inner input positions of the non-sequences."""
        start = self.n_seqs + self.n_inner_rec_inputs + self.n_shared
        return range(start, start + self.n_nonseqs)
