"""The bridge tests need PyTensor and PyMC (the ``pytensor`` extra); without them nothing here is collected."""

import importlib

collect_ignore_glob = []
try:
    for _name in ("pytensor", "pymc"):
        importlib.import_module(_name)
except ImportError:
    collect_ignore_glob = ["*.py"]
