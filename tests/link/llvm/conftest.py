"""Keep the object cache of these tests out of the user's home; make the local helper modules importable."""

import os
import sys
import tempfile

os.environ.setdefault("GRAPHJIT_CACHE_DIR", tempfile.mkdtemp(prefix="graphjit-test-cache-"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
