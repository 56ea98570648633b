"""Old name of limits.py (the size limits): ``graphjit.link.llvm.variant`` is that module itself, so setting a
limit through either name changes the one the IR builders read.  The key parts it held are in cache/keys.py."""

import sys

from graphjit.link.llvm import limits

sys.modules[__name__] = limits
