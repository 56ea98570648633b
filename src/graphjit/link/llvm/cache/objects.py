"""On-disk cache of compiled object code, keyed by the sha256 of the IR and of everything that shapes the code
(cache/keys.py object_key).

Layout: ``<dir>/<key[:2]>/<key>.gjo`` (entry) and ``<key>.lock`` beside it; plans (cache/plans.py, keyed by
graph structure rather than IR) are ``<key>.gjp`` and rewritten graphs ``<key>.gjr`` in the same layout.
An entry is ``MAGIC | u64 payload length | HMAC-SHA256 | payload``, the HMAC keyed by the directory's
per-user secret (cache/guard.py) over the entry's name, kind, header and payload; anything else is
deleted and rebuilt.  Writers publish with ``os.replace`` of a temp file from the same directory, under an
``fcntl.flock`` lock per key, so concurrent processes compile a key once and never read a half-written
entry.  A directory that cannot be created or written, or that cache_guard refuses (another owner,
writable by others), turns the cache off (one warning per directory), it never fails a compile.
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import os
import stat
import struct
import tempfile
import warnings
from collections.abc import Iterator

from graphjit.link.llvm.cache.guard import KEY_NAME, CacheRefused, check_dir, load_key, mac, make_private_dir, unsafe_reason

ENV_VAR = "GRAPHJIT_CACHE_DIR"
ENTRY_SUFFIX = ".gjo"
PLAN_SUFFIX = ".gjp"          # plans (cache/plans.py) and other maps to an object key
GRAPH_SUFFIX = ".gjr"         # rewritten graphs (compile/rewrite_cache.py)
HOST_SUFFIX = ".gjh"          # the host facts of the keys (jit/hostfacts.py)
LOCK_SUFFIX = ".lock"
_MAGIC = b"GJOBJ\x002\n"     # 2: the digest is an HMAC (cache/guard.py)
_HEADER = struct.Struct("<8sQ32s")


class CacheWarning(UserWarning):
    """The compile cache could not be used, or was refused as unsafe (it is then off; compiles still work)."""


_WARNED: set[str] = set()       # directories warned about (once per process)


def default_cache_dir() -> str:
    """``$GRAPHJIT_CACHE_DIR`` if set, else ``~/.cache/graphjit``."""
    env = os.environ.get(ENV_VAR)
    return os.path.abspath(os.path.expanduser(env or os.path.join("~", ".cache", "graphjit")))


class ObjectCache:
    """The entries of one cache directory (objects, plans, rewritten graphs), guarded by cache/guard.py."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = os.path.abspath(directory) if directory else default_cache_dir()
        self.enabled = True
        self.corrupt_removed = 0
        self._key: bytes | None = None
        self._subdirs: set[str] = set()
        try:
            make_private_dir(self.directory)
        except (OSError, CacheRefused) as exc:
            self._disable(exc)

    def _disable(self, exc: BaseException) -> None:
        """Turn the cache off; one warning per directory and process."""
        if self.enabled and self.directory not in _WARNED:
            _WARNED.add(self.directory)
            warnings.warn(f"graphjit: compile cache disabled, {self.directory!r} is not usable: {exc}",
                          CacheWarning, stacklevel=3)
        self.enabled = False

    def _ready(self, key: str) -> str | None:
        """The entry's directory, created and checked (once per process), with the secret key loaded; None
        (and the cache off) if either is unsafe or unusable."""
        sub = os.path.join(self.directory, key[:2])
        if self.enabled and (sub not in self._subdirs or self._key is None):
            try:
                self._key = self._key or load_key(self.directory)
                make_private_dir(sub)
                self._subdirs.add(sub)
            except (OSError, CacheRefused) as exc:
                self._disable(exc)
        return sub if self.enabled else None

    def path(self, key: str, suffix: str = ENTRY_SUFFIX) -> str:
        """The file of one entry (object code; suffix PLAN_SUFFIX: a plan, see cache/plans.py)."""
        return os.path.join(self.directory, key[:2], key + suffix)

    def _pack(self, key: str, suffix: str, payload: bytes) -> bytes:
        length = struct.pack("<Q", len(payload))
        assert self._key is not None
        return _MAGIC + length + mac(self._key, key + suffix, _MAGIC + length, payload) + payload

    def _unpack(self, key: str, suffix: str, blob: bytes) -> bytes | None:
        if len(blob) < _HEADER.size or self._key is None:
            return None
        magic, length, digest = _HEADER.unpack_from(blob)
        payload = memoryview(blob)[_HEADER.size:]
        if magic != _MAGIC or length != len(payload):
            return None
        if not hmac.compare_digest(mac(self._key, key + suffix, blob[:16], payload), digest):
            return None
        return bytes(payload)

    def _read(self, path: str) -> bytes | None:
        """The file's bytes; b"" if it is not this user's private regular file (then it is not trusted)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError:
            return b""
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or unsafe_reason(path, st, "entry"):
                return b""
            return f.read()

    def load(self, key: str, remove_corrupt: bool = False, suffix: str = ENTRY_SUFFIX) -> bytes | None:
        """The payload stored under key, or None (missing, or damaged, tampered or foreign: removed if
        remove_corrupt)."""
        if self._ready(key) is None:
            return None
        path = self.path(key, suffix)
        blob = self._read(path)
        if blob is None:
            return None
        payload = self._unpack(key, suffix, blob)
        if payload is None and remove_corrupt:
            self.discard(key, suffix)
        return payload

    def discard(self, key: str, suffix: str = ENTRY_SUFFIX) -> None:
        """Remove an entry found unusable (it is rebuilt by whoever needs it)."""
        self.corrupt_removed += 1
        with contextlib.suppress(OSError):
            os.unlink(self.path(key, suffix))

    def store(self, key: str, payload: bytes, suffix: str = ENTRY_SUFFIX) -> bool:
        """Publish an entry atomically; False (and the cache off) if the directory is not writable."""
        sub = self._ready(key)
        if sub is None:
            return False
        try:
            fd, tmp = tempfile.mkstemp(dir=sub, prefix=key[:16], suffix=".tmp")    # mode 0600
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(self._pack(key, suffix, payload))
                os.replace(tmp, self.path(key, suffix))
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
        if self._ready(key) is not None:
            path = os.path.join(self.directory, key[:2], key + LOCK_SUFFIX)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
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
    """{'dir', 'entries' (object files), 'plans', 'graphs' (rewritten graphs), 'bytes' (all of them),
    'refused' (why the directory would not be used, or None)}."""
    d = cache_path(directory)
    counts = {ENTRY_SUFFIX: 0, PLAN_SUFFIX: 0, GRAPH_SUFFIX: 0}
    total = 0
    for e in _walk(d):
        suffix = os.path.splitext(e.name)[1]
        if suffix in counts:
            counts[suffix] += 1
            with contextlib.suppress(OSError):
                total += e.stat().st_size
    refused = None
    try:
        check_dir(d)
    except FileNotFoundError:
        pass
    except (OSError, CacheRefused) as exc:
        refused = str(exc)
    return {"dir": d, "entries": counts[ENTRY_SUFFIX], "plans": counts[PLAN_SUFFIX],
            "graphs": counts[GRAPH_SUFFIX], "bytes": total, "refused": refused}


def cache_clear(directory: str | None = None) -> int:
    """Remove every entry, lock and temp file, and the secret key; returns the number of object entries removed."""
    removed = 0
    d = cache_path(directory)
    for e in list(_walk(d)):
        if e.name.endswith((ENTRY_SUFFIX, PLAN_SUFFIX, GRAPH_SUFFIX, HOST_SUFFIX, LOCK_SUFFIX, ".tmp")):
            with contextlib.suppress(OSError):
                os.unlink(e.path)
                removed += e.name.endswith(ENTRY_SUFFIX)
    for sub in os.listdir(d) if os.path.isdir(d) else ():
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(d, sub))
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(d, KEY_NAME))    # it authenticated the entries just removed; a new one comes
    return removed
