"""Every lock of the library goes through the fork handler: no module makes a lock, a condition, a semaphore or
an event but graph/forksafe.py, whose factories register what they make (issue 37)."""

import ast
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "graphjit"
FACTORY = SRC / "graph" / "forksafe.py"
# what holds a lock inside: made only by the factory (Condition, Semaphore, Event, Barrier and Queue take
# locks of their own, which the fork handler would not know about)
LOCK_MAKERS = {"Lock", "RLock", "Condition", "Semaphore", "BoundedSemaphore", "Event", "Barrier",
               "allocate_lock", "Queue", "SimpleQueue", "LifoQueue", "PriorityQueue", "ThreadPoolExecutor"}
LOCK_MODULES = {"threading", "_thread", "queue", "multiprocessing", "concurrent.futures"}


def _bare_locks(path: pathlib.Path, root: pathlib.Path = SRC.parent) -> list:
    """Lines of path calling a lock maker of LOCK_MODULES (as module.Maker() or an imported Maker())."""
    tree = ast.parse(path.read_text(), str(path))
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] in {m.split(".")[0] for m in LOCK_MODULES}
                for alias in node.names if alias.name in LOCK_MAKERS}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Attribute) and fn.attr in LOCK_MAKERS:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(fn)}()")
        elif isinstance(fn, ast.Name) and fn.id in imported:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {fn.id}()")
    return found


def test_no_module_makes_a_lock_the_fork_handler_does_not_know():
    bare = [hit for path in sorted(SRC.rglob("*.py")) if path != FACTORY for hit in _bare_locks(path)]
    assert bare == [], "make locks with graphjit.graph.forksafe.new_lock()/new_rlock():\n" + "\n".join(bare)


def test_the_scan_finds_bare_locks(tmp_path):
    path = tmp_path / "sample.py"
    path.write_text("import threading\nfrom queue import Queue\nfrom threading import RLock as R\n"
                    "a = threading.Lock()\nb = R()\nc = Queue()\nd = threading.Condition()\ne = dict()\n")
    hits = sorted(_bare_locks(path, tmp_path), key=lambda h: int(h.split(":")[1]))
    assert [h.split(": ", 1)[1] for h in hits] == ["threading.Lock()", "R()", "Queue()", "threading.Condition()"]


def test_the_factory_is_the_one_exception():
    assert len(_bare_locks(FACTORY)) == 3           # the registry's guard and the two factories
