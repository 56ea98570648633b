"""The backend's lowerings and layouts load lazily (registry.load_builtins): builtin_table.py must list the
modules that register them, and a warm process keys its plans like a cold one without loading them (their
versions are in no key: graphjit's source digest covers their code, cache/keys.py)."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import graphjit.scan_module  # noqa: F401 - the trigger of builtin_table.DEFERRED's lowering: every entry registers
from graphjit.link.llvm import builtin_table, registry
from graphjit.link.llvm.registry import branch_lowerings, layouts, lowerings, scalar_lowerings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def _python(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")})
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("reg", [lowerings, layouts, branch_lowerings], ids=["lowerings", "layouts", "branch_lowerings"])
def test_the_backends_registrations_add_no_version(reg):
    """The backend's own registrations are in no key (no table repeats their versions): only registrations made
    outside graphjit have a user_version."""
    registry.load_builtins()
    own = [cls for cls, entry in reg._entries.items() if entry.impl.__module__.startswith("graphjit.link.llvm.")]
    assert own and all(reg.user_version(cls) is None for cls in own)
    assert not any(scalar_lowerings._entries[k].impl.__module__.startswith("graphjit.") for k in scalar_lowerings._user)


_LOADED_BY_LOAD_BUILTINS = """
import importlib, json, sys
from graphjit.link.llvm import builtin_table, registry
for trigger in builtin_table.DEFERRED.values():
    importlib.import_module(trigger)
registry.load_builtins()
print(json.dumps(sorted(m for m in sys.modules if m.startswith("graphjit.link.llvm."))))
"""


def test_every_registering_module_is_loaded():
    """Every backend module that registers a lowering or layout is loaded by load_builtins in a fresh process:
    a new lowering module must be listed in builtin_table.MODULES (or be imported by one listed), else its
    registrations would be missing whenever nothing else imports it."""
    backend = os.path.join(ROOT, "src", "graphjit", "link", "llvm")
    pattern = re.compile(r"\b(lowerings|layouts|scalar_lowerings|branch_lowerings)\.register\(")
    registering = set()
    for base, _, files in os.walk(backend):
        for name in files:
            path = os.path.join(base, name)
            if name.endswith(".py") and name != "registry.py" and pattern.search(pathlib.Path(path).read_text()):
                registering.add(os.path.relpath(path[:-3], os.path.join(ROOT, "src")).replace(os.sep, "."))
    loaded = set(json.loads(_python(_LOADED_BY_LOAD_BUILTINS)))
    assert {"graphjit.link.llvm.driver.elemwise", "graphjit.link.llvm.cpython.boxing"} <= registering
    assert registering <= loaded, f"not loaded by load_builtins: {sorted(registering - loaded)}"


_DEFERRED_LOADING = """
import json, sys, warnings
import numpy as np
import graphjit as gj, graphjit.tensor as gt
from graphjit.link.llvm import builtin_table, registry
warnings.simplefilter("error")
x = gt.dvector("x")
gj.function([x], x * 2.0, mode="FAST_RUN")(np.arange(3.0))   # loads the backend's modules, not the deferred ones
before = sorted(m for m in builtin_table.DEFERRED if m in sys.modules)
from graphjit.scan_module import scan
ys, _ = scan(lambda v: v + 1.0, sequences=[x])
f = gj.function([x], ys.sum(), mode="FAST_RUN")        # a FallbackWarning (an error here) if Scan had no lowering
print(json.dumps([before, sorted(m for m in builtin_table.DEFERRED if m in sys.modules), float(f(np.arange(3.0)))]))
"""


def test_a_deferred_lowering_loads_with_its_trigger(tmp_path):
    """builtin_table.DEFERRED: a process that compiled without the scan package has not imported the Scan
    lowering; building a Scan (which imports its trigger) makes the next compile load it, and lower natively."""
    code = f"import os; os.environ['GRAPHJIT_CACHE_DIR'] = {str(tmp_path)!r}\n" + _DEFERRED_LOADING
    before, after, value = json.loads(_python(code).strip().splitlines()[-1])
    assert before == [] and after == sorted(builtin_table.DEFERRED)
    assert value == 6.0


_KEY_PARTS_BEFORE_LOADING = """
import json
import graphjit, graphjit.tensor, graphjit.scan_module.op, graphjit.ifelse, graphjit.tensor.linalg  # the op classes
from graphjit.graph.op import Op
from graphjit.graph.type import Type
from graphjit.link.llvm import registry
from graphjit.link.llvm.cache import keys

def classes(base):
    found, todo = [], [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found and sub.__module__.startswith("graphjit."):
                found.append(sub)
                todo.append(sub)
    return found

def blank(cls):
    try:
        return object.__new__(cls)
    except TypeError:           # a dict or tuple subclass
        return cls.__new__(cls)

def parts():
    ops = {f"{c.__module__}.{c.__qualname__}": keys.lowering_version(blank(c)) for c in classes(Op)}
    types = {f"{c.__module__}.{c.__qualname__}": keys.layout_version(blank(c)) for c in classes(Type)}
    return ops, types

before = parts()
loaded_before = registry.builtins_loaded()
registry.load_builtins()
after = parts()
same = all(after[k][name] == v for k in (0, 1) for name, v in before[k].items())   # loading adds classes
print(json.dumps([same, loaded_before, registry.builtins_loaded(), len(before[0]), len(before[1]),
                  sorted(k for k, v in {**after[0], **after[1]}.items() if v is not None)]))
"""


def test_key_parts_are_the_same_before_and_after_loading():
    """Every graphjit op and Type class adds the same to the keys whether or not the backend's lowerings are
    loaded (a warm process keys its plan like a cold one, with no table of their versions): nothing."""
    same, loaded_before, loaded_after, n_ops, n_types, versioned = json.loads(_python(_KEY_PARTS_BEFORE_LOADING))
    assert same and not loaded_before and loaded_after
    assert n_ops > 50 and n_types > 5 and versioned == []


_USER_REGISTRATION = """
import json
import graphjit.tensor as gt
from graphjit.link.llvm import registry
from graphjit.link.llvm.cache import keys
from graphjit.link.llvm.registry import lowerings
from graphjit.tensor.shape import Reshape
class Mine(Reshape):
    pass
assert keys.lowering_version(Mine(2)) is None and not registry.builtins_loaded()   # Reshape's: in no key
try:
    lowerings.register(Reshape)(lambda ctx, node, inputs: inputs)
    refused = False
except ValueError:
    refused = True
lowerings.register(Mine, version=(5,))(lambda ctx, node, inputs: inputs)
print(json.dumps([refused, registry.builtins_loaded(), lowerings.version(Mine), keys.lowering_version(Mine(2))]))
"""


def test_a_user_registration_loads_the_builtins_first():
    """Registering from outside the backend loads its own registrations first: a duplicate is refused at once;
    the user's version is then in the keys."""
    assert json.loads(_python(_USER_REGISTRATION)) == [True, True, [5], [5]]


@pytest.mark.parametrize("module", ["driver.native_entry", "ir.fallback", "ir.callbacks", "ir.graph_context",
                                    "loops.fusion", "scalar.lower", "ops.debug", "cpython.boxing", "limits",
                                    "native_view", "cache.keys", "linker"])
def test_any_backend_module_imports_first(module):
    """The lowerings' modules import each other; without the package loading them all, each must still be
    importable as the first backend module of a process (the cycles are broken with module aliases)."""
    _python(f"import graphjit.link.llvm.{module}")


_LAPACK_CHILD = """
import json
import numpy as np
import graphjit as gj, graphjit.tensor as gt
from graphjit.link.llvm import registry
from graphjit.tensor import linalg
a = gt.dmatrix("a")
f = gj.function([a], linalg.cholesky(a).sum() + gt.gammaln(a).sum())
m = np.array([[4.0, 1.0], [1.0, 3.0]])
ok = bool(np.isclose(f(m), np.linalg.cholesky(m).sum() + __import__("scipy.special").special.gammaln(m).sum()))
print(json.dumps([ok, bool(f.native.timings.get("plan_hit")), registry.builtins_loaded(),
                  len(f.native.fallback_nodes)]))
"""


@pytest.mark.soak
def test_a_warm_process_republishes_lapack_and_scipy_symbols(tmp_path):
    """A cached object calling LAPACK and scipy's special functions links in a warm process that loads no
    lowering (the providers of their symbols are on the load side: DESIGN.md section 6)."""
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "src"), "GRAPHJIT_CACHE_DIR": str(tmp_path)}

    def run():
        out = subprocess.run([sys.executable, "-c", _LAPACK_CHILD], capture_output=True, text=True, timeout=300,
                             env=env)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold = run()
    assert cold[0] and not cold[1] and cold[2] and cold[3] == 0
    assert run() == [True, True, False, 0]
