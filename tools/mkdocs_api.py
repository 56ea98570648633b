"""The API reference's entries (docs/api/*.md), rendered at build time from the live objects (a mkdocs hook).

A page lists its entries in fenced blocks; the hook replaces each block by markdown made from each object's
signature and docstring. mkdocstrings cannot do this for most public names: the ops (``exp``, ``switch``)
and type constructors (``dmatrix``) are instances made by a loop, which static analysis does not see.

    ```api              one entry per name: heading, signature, docstring, other import paths, methods
    graphjit: scan map  a module, a colon, names in it (or one dotted path per line)
    ```
    ```api-table        one table row per name: name, call, the docstring's first line
    graphjit.tensor: exp log
    ```
    ```api-grid         the tensor constructors: a row per rank, a column per dtype prefix
    module: graphjit.tensor
    prefixes: - b w i l f d c z      ("-" is no prefix)
    ranks: scalar/scalars vector/vectors ...   (singular/plural)
    ```

tests/test_docs_api.py checks that every public name (PUBLIC_MODULES, their ``__all__``) has an entry.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import sys
import types
from typing import Any, Dict, Iterator, List, Optional, Tuple

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

# The public modules, in the order docs/api/index.md lists them. A module that does not exist (yet) is skipped.
PUBLIC_MODULES = [
    "graphjit", "graphjit.tensor", "graphjit.tensor.linalg", "graphjit.tensor.slinalg", "graphjit.tensor.nlinalg",
    "graphjit.tensor.nnet", "graphjit.tensor.random", "graphjit.scan_module", "graphjit.ifelse",
    "graphjit.builders", "graphjit.gradient", "graphjit.compile", "graphjit.compile.nanguardmode",
    "graphjit.printing", "graphjit.misc.pkl_utils", "graphjit.numba", "graphjit.sandbox.rng_mrg",
]
FENCE = re.compile(r"^```(?P<kind>api|api-table|api-grid)[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)


def load_module(name: str) -> Optional[types.ModuleType]:
    """The module, or None when it (not one of its imports) does not exist."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and name.startswith(e.name):
            return None
        raise


def public_names(module: types.ModuleType) -> List[str]:
    """``__all__``, or, for a package of re-exports without one, its names that are not private or modules."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")
                 and not isinstance(getattr(module, n), types.ModuleType)]
    return list(names)


def public_paths() -> Dict[str, Any]:
    """Every public dotted path -> its object."""
    paths: Dict[str, Any] = {}
    for name in PUBLIC_MODULES:
        module = load_module(name)
        if module is not None:
            for attr in public_names(module):
                paths[f"{name}.{attr}"] = getattr(module, attr)
    return paths


def resolve(path: str) -> Tuple[bool, Any]:
    """(found, object) of a dotted path, as `from a.b import c` finds it: an attribute first, else a submodule."""
    parts = path.split(".")
    obj: Any = load_module(parts[0])
    for i, attr in enumerate(parts[1:], start=2):
        if obj is None:
            return False, None
        if hasattr(obj, attr):
            obj = getattr(obj, attr)
        elif isinstance(obj, types.ModuleType):
            obj = load_module(".".join(parts[:i]))
        else:
            return False, None
    return obj is not None, obj


def fence_paths(kind: str, body: str) -> List[str]:
    """The dotted paths a fenced block documents."""
    if kind == "api-grid":
        module, prefixes, ranks = _grid_fields(body)
        return [f"{module}.{cell}" for row in _grid(prefixes, ranks) for cell in row]
    paths = []
    for line in body.strip().splitlines():
        if ":" in line:
            module, names = line.split(":", 1)
            paths += [f"{module.strip()}.{n}" for n in names.split()]
        elif line.strip():
            paths.append(line.strip())
    return paths


def _grid_fields(body: str) -> Tuple[str, List[str], List[str]]:
    fields = dict(line.split(":", 1) for line in body.strip().splitlines())
    return fields["module"].strip(), fields["prefixes"].split(), fields["ranks"].split()


def _grid(prefixes: List[str], ranks: List[str]) -> Iterator[List[str]]:
    """Per rank, the constructor names: each prefix's singular then plural."""
    for rank in ranks:
        singular, plural = rank.split("/")
        yield [("" if p == "-" else p) + form for p in prefixes for form in (singular, plural)]


def reference_paths(docs: pathlib.Path) -> List[str]:
    """Every dotted path the fenced blocks of docs/api/*.md name, in page order."""
    paths = []
    for page in sorted((docs / "api").glob("*.md")):
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            paths += fence_paths(m.group("kind"), m.group("body"))
    return paths


# ------------------------------------------------------------------------------------------- rendering

def doc_text(obj: Any) -> str:
    """The object's docstring in markdown; for an instance without its own, a line naming its class."""
    if inspect.isclass(obj) or inspect.isroutine(obj) or isinstance(obj, (types.ModuleType, property)):
        doc = inspect.getdoc(obj) or ""
    elif isinstance(obj, (str, int, float, bool, tuple)):
        doc = ""                                 # a value: the page's text says what it is
    else:
        own = getattr(obj, "__doc__", None)
        if own and own != type(obj).__doc__:
            doc = inspect.cleandoc(own)
        else:
            cls = type(obj)
            first = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
            doc = f"An instance of ``{cls.__module__}.{cls.__qualname__}``: {first}"
    return markdown_text(re.sub(r"``([^`]+)``", r"`\1`", doc))


def markdown_text(text: str) -> str:
    """Plain docstring text made safe for markdown: `*`, `_`, `<`, `|` outside code spans shown as written."""
    parts = re.split(r"(`[^`\n]+`)", text)
    for i in range(0, len(parts), 2):
        parts[i] = (parts[i].replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")
                    .replace("<", "&lt;").replace("|", "&#124;").replace("[", "\\["))
    return "".join(parts)


def summary(obj: Any) -> str:
    """The docstring's first paragraph, on one line."""
    return doc_text(obj).split("\n\n")[0].replace("\n", " ").strip()


def call(name: str, obj: Any) -> str:
    """name(arguments) without annotations, as a user writes the call."""
    nin = getattr(getattr(obj, "scalar_op", None), "nin", None)
    if nin is not None:                          # an Elemwise op
        args = ["x", "y", "z"][:nin] if 0 < nin <= 3 else ["*xs"]
        return f"{name}({', '.join(args)})"
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return name if not callable(obj) else f"{name}(...)"
    params = []
    for p in sig.parameters.values():
        text = p.name
        if p.kind is p.VAR_POSITIONAL:
            text = "*" + text
        elif p.kind is p.VAR_KEYWORD:
            text = "**" + text
        if p.default is not p.empty:
            text += "=" + repr(p.default)
        params.append(text)
    return f"{name}({', '.join(params)})"


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
        return "function"
    if hasattr(obj, "scalar_op"):
        return "elementwise op"
    return f"{type(obj).__name__} instance"


def _aliases(path: str, obj: Any, public: Dict[str, Any]) -> List[str]:
    if isinstance(obj, (str, int, float, bool, tuple)) or obj is None:
        return []
    return [p for p, o in public.items() if o is obj and p != path]


def _methods(obj: type) -> List[str]:
    """A bullet per public method or property the class itself defines: its call and first paragraph."""
    lines = []
    for name, member in vars(obj).items():
        if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, (property, classmethod,
                                                                                          staticmethod))):
            continue
        target = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        text = f"`{name}`" if isinstance(member, property) else f"`{call(name, target)}`"
        doc = summary(member.fget if isinstance(member, property) else target)
        lines.append(f"- {text}" + (f": {doc}" if doc else ""))
    return lines


def _anchor(path: str) -> str:
    return f'<a id="{path}"></a>'


def render_entries(paths: List[str], public: Dict[str, Any]) -> str:
    """A section per name: heading (its anchor is the path), kind and call, docstring, other paths, methods."""
    out = []
    for path in paths:
        found, obj = resolve(path)
        if not found:
            continue
        name = path.rsplit(".", 1)[1]
        out.append(f"### `{path}` {{#{path}}}\n" if "__" not in path else f"{_anchor(path)}\n\n### `{path}`\n")
        out.append(f"*{_kind(obj)}*" + (f" · `{call(name, obj)}`" if callable(obj) else f" · `{obj!r}`"
                                        if isinstance(obj, (str, int, float)) else "") + "\n")
        doc = doc_text(obj)
        if doc:
            out.append(doc + "\n")
        flags = getattr(sys.modules[type(obj).__module__], "FLAGS", None) if type(obj).__name__ == "Config" else None
        if flags:
            out.append("| flag | default | meaning |\n| --- | --- | --- |\n" + "\n".join(
                f"| `{f.name}` | `{f.default!r}` | {f.doc} |" for f in flags.values()) + "\n")
        aliases = _aliases(path, obj, public)
        if aliases:
            out.append("Also importable as " + ", ".join(f"`{a}`" for a in aliases) + ".\n")
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            methods = _methods(obj)
            if methods:
                out.append("Methods and properties:\n\n" + "\n".join(methods) + "\n")
    return "\n".join(out)


def render_table(paths: List[str], public: Dict[str, Any]) -> str:
    """A table row per name: name (anchored), call, the docstring's first paragraph and other paths."""
    rows = ["| name | call | what it computes |", "| --- | --- | --- |"]
    for path in paths:
        found, obj = resolve(path)
        if not found:
            continue
        name = path.rsplit(".", 1)[1]
        aliases = _aliases(path, obj, public)
        also = (" (also " + ", ".join(f"`{a}`" for a in aliases) + ")") if aliases else ""
        doc = summary(obj)
        rows.append(f"| {_anchor(path)}`{name}` | `{call(name, obj)}` | {doc}{also} |")
    return "\n".join(rows) + "\n"


def render_grid(body: str) -> str:
    """A table of the constructors: a row per rank, a column per prefix; a name the tree lacks is left out."""
    module, prefixes, ranks = _grid_fields(body)
    head = ["rank"] + [("(none)" if p == "-" else p) for p in prefixes]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for rank, cells in zip(ranks, _grid(prefixes, ranks)):
        shown = []
        for single, plural in zip(cells[::2], cells[1::2]):
            have = [n for n in (single, plural) if resolve(f"{module}.{n}")[0]]
            shown.append(" ".join(f"{_anchor(f'{module}.{n}')}`{n}`" for n in have) or "·")
        rows.append(f"| {rank.split('/')[0]} | " + " | ".join(shown) + " |")
    return "\n".join(rows) + "\n"


def render_page(markdown: str) -> str:
    """The page with each api fence replaced by its rendered entries."""
    public = public_paths()

    def replace(m: "re.Match[str]") -> str:
        kind, body = m.group("kind"), m.group("body")
        if kind == "api-grid":
            return render_grid(body)
        paths = fence_paths(kind, body)
        return render_table(paths, public) if kind == "api-table" else render_entries(paths, public)

    return FENCE.sub(replace, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs hook: render the api fences of the reference's pages."""
    if not page.file.src_uri.startswith("api/"):
        return markdown
    return render_page(markdown)
