"""The cache holds code, so it is guarded like code: private directories, ownership checks, authenticated entries.

* Directories are created 0700 whatever the umask (parents included).
* A directory (or entry, or the key file) not owned by the effective user, or writable by group or
  others, is refused (``unsafe_reason``): the caller turns the cache off with one warning.
* Every entry carries an HMAC-SHA256 keyed by a per-user secret: ``<dir>/hmac.key``, 32 random bytes,
  0600, created atomically (written to an O_EXCL temp file, then hard-linked into place, so no reader sees a
  partial key).  Nothing is deserialised, and no object code is loaded, before its MAC verifies: whoever
  cannot read the key cannot make an entry this process accepts.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat

KEY_NAME = "hmac.key"
KEY_BYTES = 32
MAC_BYTES = hashlib.sha256().digest_size


class CacheRefused(Exception):
    """The cache directory, an entry or the key file fails a safety check (the message says which)."""


def unsafe_reason(path: str, st: os.stat_result, what: str = "directory") -> str | None:
    """Why a file or directory with this stat must not be trusted (None if it may)."""
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"the cache {what} {path!r} is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"the cache {what} {path!r} is writable by group or others (mode "
                f"{stat.S_IMODE(st.st_mode):04o}; chmod go-w it to use it)")
    return None


def make_private_dir(path: str) -> None:
    """Create path (and missing parents) with mode 0700 whatever the umask; check it (CacheRefused) if it exists."""
    missing = []
    head = os.path.abspath(path)
    while not os.path.isdir(head):
        missing.append(head)
        parent = os.path.dirname(head)
        if parent == head:
            break
        head = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue                             # another process made it: checked below like any other
        os.chmod(d, 0o700)                       # the umask may have removed bits the owner needs
    check_dir(path)


def check_dir(path: str) -> None:
    """CacheRefused if path is not a directory this user owns and only this user can write."""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise CacheRefused(f"the cache path {path!r} is not a directory")
    reason = unsafe_reason(path, st)
    if reason:
        raise CacheRefused(reason)


def load_key(directory: str) -> bytes:
    """The directory's secret key, created on first use (CacheRefused if the key file is not private)."""
    path = os.path.join(directory, KEY_NAME)
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(KEY_BYTES))
        with contextlib.suppress(FileExistsError):      # another process won the race: use its key
            os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return _read_key(path)


def _read_key(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise CacheRefused(f"the cache key {path!r} is not a regular file")
        reason = unsafe_reason(path, st, "key file")
        if reason is None and stat.S_IMODE(st.st_mode) & 0o077:
            reason = f"the cache key file {path!r} is readable by group or others (it must be 0600)"
        if reason:
            raise CacheRefused(reason)
        key = f.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise CacheRefused(f"the cache key file {path!r} is damaged (remove it; the cache is rebuilt)")
    return key


def mac(key: bytes, label: str, header: bytes, payload: bytes | memoryview) -> bytes:
    """HMAC-SHA256 of an entry: its label (name and kind), its header fields and its payload."""
    h = hmac.new(key, label.encode(), hashlib.sha256)
    h.update(b"\0")
    h.update(header)
    h.update(payload)
    return h.digest()
