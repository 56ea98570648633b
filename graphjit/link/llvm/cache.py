"""On-disk cache of compiled object code, keyed by the sha256 of the IR and of everything that shapes the code.

Layout: ``<dir>/<key[:2]>/<key>.gjo`` (entry) and ``<key>.lock`` beside it; plans (plan_cache.py, keyed by
graph structure rather than IR) are ``<key>.gjp`` in the same layout.  An entry is
``MAGIC | u64 payload length | sha256(payload) | payload``; anything else is deleted and recompiled.
Writers publish with ``os.replace`` of a temp file from the same directory, under an ``fcntl.flock`` lock
per key, so concurrent processes compile a key once and never read a half-written entry.  A directory that
cannot be created or written turns the cache off (one warning), it never fails a compile.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import struct
import sys
import tempfile
import warnings
from collections.abc import Iterator

import llvmlite
import llvmlite.binding as llvm

ENV_VAR = "GRAPHJIT_CACHE_DIR"
ENTRY_SUFFIX = ".gjo"
PLAN_SUFFIX = ".gjp"          # plans (plan_cache.py) and other maps to an object key
GRAPH_SUFFIX = ".gjr"         # rewritten graphs (compile/rewrite_cache.py)
LOCK_SUFFIX = ".lock"
FORMAT_VERSION = "gjo2"     # gjo2: a payload is one or more object files (jit.pack_objects)
_MAGIC = b"GJOBJ\x001\n"
_HEADER = struct.Struct("<8sQ32s")


class CacheWarning(UserWarning):
    """The object cache could not be used (it is then off; compiles still work)."""


def default_cache_dir() -> str:
    """``$GRAPHJIT_CACHE_DIR`` if set, else ``~/.cache/graphjit``."""
    env = os.environ.get(ENV_VAR)
    return os.path.abspath(os.path.expanduser(env or os.path.join("~", ".cache", "graphjit")))


def _graphjit_version() -> str:
    mod = sys.modules.get("graphjit")
    return str(getattr(mod, "__version__", "0"))


def cache_key(ir_text: str, *, opt_level: int, triple: str, cpu: str, features: str,
              vector_library: str, pipeline: str = "") -> str:
    """sha256 hex of the IR text and of target, vector library, versions, opt level and pass pipeline."""
    h = hashlib.sha256()
    parts = (FORMAT_VERSION, triple, cpu, features, vector_library, llvmlite.__version__,
             ".".join(map(str, llvm.llvm_version_info)), _graphjit_version(), f"O{opt_level}", pipeline)
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    h.update(ir_text.encode())
    return h.hexdigest()


def _pack(payload: bytes) -> bytes:
    return _HEADER.pack(_MAGIC, len(payload), hashlib.sha256(payload).digest()) + payload


def _unpack(blob: bytes) -> bytes | None:
    if len(blob) < _HEADER.size:
        return None
    magic, length, digest = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size:]
    if magic != _MAGIC or length != len(payload) or hashlib.sha256(payload).digest() != digest:
        return None
    return payload


class ObjectCache:
    """The object files of one cache directory."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = os.path.abspath(directory) if directory else default_cache_dir()
        self.enabled = True
        self.corrupt_removed = 0
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as exc:
            self._disable(exc)

    def _disable(self, exc: BaseException) -> None:
        if self.enabled:
            warnings.warn(f"graphjit: object cache disabled, {self.directory!r} is not usable: {exc}",
                          CacheWarning, stacklevel=3)
        self.enabled = False

    def path(self, key: str, suffix: str = ENTRY_SUFFIX) -> str:
        """The file of one entry (object code; suffix PLAN_SUFFIX: a plan, see plan_cache.py)."""
        return os.path.join(self.directory, key[:2], key + suffix)

    def load(self, key: str, remove_corrupt: bool = False, suffix: str = ENTRY_SUFFIX) -> bytes | None:
        """The payload stored under key, or None (missing, or corrupt: removed if remove_corrupt)."""
        if not self.enabled:
            return None
        path = self.path(key, suffix)
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            return None
        except OSError:
            blob = b""
        payload = _unpack(blob)
        if payload is None and remove_corrupt:
            self.corrupt_removed += 1
            with contextlib.suppress(OSError):
                os.unlink(path)
        return payload

    def store(self, key: str, payload: bytes, suffix: str = ENTRY_SUFFIX) -> bool:
        """Publish an entry atomically; False (and the cache off) if the directory is not writable."""
        if not self.enabled:
            return False
        path = self.path(key, suffix)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=key[:16], suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_pack(payload))
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            self._disable(exc)
            return False
        return True

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[bool]:
        """Hold the per-key file lock (blocking); yields False if no lock could be taken."""
        fd = None
        if self.enabled:
            path = os.path.join(self.directory, key[:2], key + LOCK_SUFFIX)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                if fd is not None:
                    os.close(fd)
                    fd = None
                self._disable(exc)
        try:
            yield fd is not None
        finally:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)


def _walk(directory: str) -> Iterator[os.DirEntry]:
    try:
        subdirs = [e for e in os.scandir(directory) if e.is_dir(follow_symlinks=False) and len(e.name) == 2]
    except OSError:
        return
    for sub in subdirs:
        with contextlib.suppress(OSError):
            yield from (e for e in os.scandir(sub.path) if e.is_file(follow_symlinks=False))


def cache_path(directory: str | None = None) -> str:
    """The cache directory in use."""
    return os.path.abspath(directory) if directory else default_cache_dir()


def cache_info(directory: str | None = None) -> dict[str, object]:
    """{'dir', 'entries' (object files), 'plans', 'graphs' (rewritten graphs), 'bytes' (all of them)}."""
    d = cache_path(directory)
    counts = {ENTRY_SUFFIX: 0, PLAN_SUFFIX: 0, GRAPH_SUFFIX: 0}
    total = 0
    for e in _walk(d):
        suffix = os.path.splitext(e.name)[1]
        if suffix in counts:
            counts[suffix] += 1
            with contextlib.suppress(OSError):
                total += e.stat().st_size
    return {"dir": d, "entries": counts[ENTRY_SUFFIX], "plans": counts[PLAN_SUFFIX],
            "graphs": counts[GRAPH_SUFFIX], "bytes": total}


def cache_clear(directory: str | None = None) -> int:
    """Remove every entry, lock and temp file; returns the number of entries removed."""
    removed = 0
    d = cache_path(directory)
    for e in list(_walk(d)):
        if e.name.endswith((ENTRY_SUFFIX, PLAN_SUFFIX, GRAPH_SUFFIX, LOCK_SUFFIX, ".tmp")):
            with contextlib.suppress(OSError):
                os.unlink(e.path)
                removed += e.name.endswith(ENTRY_SUFFIX)
    for sub in os.listdir(d) if os.path.isdir(d) else ():
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(d, sub))
    return removed
