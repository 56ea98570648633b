"""Make the local helper modules importable (the run's object cache is tests/conftest.py's)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
