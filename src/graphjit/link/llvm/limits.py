"""The size limits the IR builders obey (read at call time, ``limits.COMPACT_MIN_GROUPS``: a test may change them).

They shape the generated code besides the graph, so the cache keys include them (cache/keys.py's ``sizes``);
they live apart from the builders so that a warm process keys its plan without loading any of them.
"""

from __future__ import annotations

COMPACT_MIN_GROUPS = 8               # graphs with this many fused groups drive their elementwise groups (loops/drivers.py)
STACK_TEMP_MAX_BYTES = 1024          # a temporary this small lives on the entry's stack (ir/stack_temps.py) ...
STACK_TEMPS_MAX_TOTAL = 32 * 1024    # ... up to this much per entry
SMALL_GRAPH_MAX_NODES = 200          # a larger graph of small static arrays keeps the light glue pipeline
# fused loops skip the broadcast checks the graph proves needless, and take proven constant lengths as trip counts
# (loops/lengths.py); False: every check at run time (the measurement's "before")
PROVE_LENGTHS = True
