"""dump/load of parameters (shared variables, arrays) to a zip of .npy files: data only, no pickle.

Theano's path for these, ``graphjit.misc.pkl_utils``, re-exports them.

``dump(obj, file)`` takes a shared variable, an ndarray, or a list, tuple or dict (string keys) of them, nested;
it writes ``manifest.json`` (the structure, names and dtypes) and one ``<k>.npy`` per value.  ``load(file)``
rebuilds the structure with new shared variables (same names) and ndarrays, read with
``numpy.load(allow_pickle=False)``: loading a file never runs code.  ``load_into(file, params)`` sets the values
of existing shared variables instead (same structure).
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import IO, Any, List, Union

import numpy as np

from graphjit.compile.sharedvalue import SharedVariable, shared

FORMAT = "graphjit.pkl_utils/1"
FileLike = Union[str, IO[bytes]]


def dump(obj: Any, file: FileLike) -> None:
    """Write obj (shared variables and arrays in lists, tuples and dicts) to file, a path or a binary file."""
    arrays: List[np.ndarray] = []
    tree = _encode(obj, arrays, "obj")
    with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("manifest.json", json.dumps({"format": FORMAT, "tree": tree}, indent=1))
        for k, value in enumerate(arrays):
            buf = io.BytesIO()
            np.save(buf, value, allow_pickle=False)
            zf.writestr(f"{k}.npy", buf.getvalue())


def load(file: FileLike) -> Any:
    """The structure dump wrote, with new shared variables (of the dumped names) and ndarrays."""
    with zipfile.ZipFile(file, "r") as zf:
        tree = _manifest(zf)
        return _decode(tree, zf)


def load_into(file: FileLike, params: Any) -> None:
    """Set the values of the shared variables in params (the structure given to dump) from file."""
    with zipfile.ZipFile(file, "r") as zf:
        _assign(_manifest(zf), zf, params, "params")


def _encode(obj: Any, arrays: List[np.ndarray], where: str) -> Any:
    if isinstance(obj, SharedVariable):
        value = obj.get_value(borrow=True)
        if not isinstance(value, (np.ndarray, np.generic, float, int, bool)):
            raise TypeError(f"dump: {where} is a shared variable holding a {type(value).__name__}; only "
                            "numeric values are saved (a random generator's state is not)")
        arrays.append(np.asarray(value))
        return {"kind": "shared", "name": obj.name, "index": len(arrays) - 1}
    if isinstance(obj, (np.ndarray, np.generic)):
        if obj.dtype.hasobject:
            raise TypeError(f"dump: {where} is an object array; only numeric arrays are saved")
        arrays.append(np.asarray(obj))
        return {"kind": "array", "index": len(arrays) - 1}
    if isinstance(obj, (list, tuple)):
        return {"kind": type(obj).__name__, "items": [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, dict):
        for key in obj:
            if not isinstance(key, str):
                raise TypeError(f"dump: {where} has the key {key!r}; only string keys are saved")
        return {"kind": "dict", "items": {k: _encode(v, arrays, f"{where}[{k!r}]") for k, v in obj.items()}}
    raise TypeError(f"dump: {where} is a {type(obj).__name__}; expected shared variables, arrays, or lists, "
                    "tuples and dicts of them")


def _manifest(zf: zipfile.ZipFile) -> Any:
    try:
        manifest = json.loads(zf.read("manifest.json"))
    except KeyError:
        raise ValueError("not a graphjit pkl_utils file (no manifest.json)") from None
    if manifest.get("format") != FORMAT:
        raise ValueError(f"not a graphjit pkl_utils file (format {manifest.get('format')!r})")
    return manifest["tree"]


def _array(zf: zipfile.ZipFile, index: int) -> np.ndarray:
    with zf.open(f"{int(index)}.npy") as f:
        return np.load(io.BytesIO(f.read()), allow_pickle=False)


def _decode(tree: Any, zf: zipfile.ZipFile) -> Any:
    kind = tree["kind"]
    if kind == "shared":
        value = _array(zf, tree["index"])
        return shared(value if value.ndim else value[()], name=tree["name"])
    if kind == "array":
        return _array(zf, tree["index"])
    if kind in ("list", "tuple"):
        items = [_decode(t, zf) for t in tree["items"]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {k: _decode(t, zf) for k, t in tree["items"].items()}
    raise ValueError(f"unknown entry kind {kind!r} in the manifest")


def _assign(tree: Any, zf: zipfile.ZipFile, target: Any, where: str) -> None:
    kind = tree["kind"]
    if kind == "shared":
        if not isinstance(target, SharedVariable):
            raise TypeError(f"load_into: {where} is a {type(target).__name__}, the file has a shared variable")
        value = _array(zf, tree["index"])
        target.set_value(value if value.ndim else value[()])
    elif kind in ("list", "tuple"):
        if not isinstance(target, (list, tuple)) or len(target) != len(tree["items"]):
            raise ValueError(f"load_into: {where} does not have the file's {len(tree['items'])} items")
        for i, (t, v) in enumerate(zip(tree["items"], target)):
            _assign(t, zf, v, f"{where}[{i}]")
    elif kind == "dict":
        if not isinstance(target, dict) or set(target) != set(tree["items"]):
            raise ValueError(f"load_into: {where} does not have the file's keys {sorted(tree['items'])}")
        for k, t in tree["items"].items():
            _assign(t, zf, target[k], f"{where}[{k!r}]")
    # arrays in the file have no place to go in existing parameters: skipped
