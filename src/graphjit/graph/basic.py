"""The graph IR (PyTensor's graph.basic): Variable, Constant and Apply nodes, and the functions over graphs of
them: walking (ancestors, io_toposort), cloning (clone_get_equiv, clone_replace), comparing (equal_computations)."""

from __future__ import annotations

import threading
from collections import deque
from itertools import count
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Sequence, Set, Tuple)

from graphjit.config import FLAG_VALUES
from graphjit.graph.compile_hook import build_function
from graphjit.graph.tag import Tag, VariableTag, variable_tag
from graphjit.graph.type_base import TypeBase
from graphjit.graph.utils import TestValueError, user_source_line

_variable_ids = count()


_cloning = threading.local()     # .on while clone() makes a Variable whose trace it then copies from the original


class Node:
    """Common base of Apply and Variable (the two kinds of vertices of a graph)."""

    __slots__ = ()


class Variable(Node):
    """A datum in a graph: a Type, the Apply that computes it (owner) and its position there (index)."""

    def __init__(self, type: TypeBase, owner: Optional["Apply"] = None, index: Optional[int] = None,
                 name: Optional[str] = None):
        if not isinstance(type, TypeBase):
            raise TypeError(f"Variable.type must be a Type instance, got {type!r}")
        if owner is not None and not isinstance(owner, Apply):
            raise TypeError(f"Variable.owner must be an Apply or None, got {owner!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Variable.name must be a string or None, got {name!r}")
        self.type = type
        self.owner = owner
        self.index = index
        self.name = name
        self.auto_name = f"auto_{next(_variable_ids)}"
        # the tag is made on first use (graph building makes many Variables); a clone copies its original's trace
        self._trace = None if getattr(_cloning, "on", False) else user_source_line()

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        if self.owner is not None:
            op = self.owner.op
            if self.index == op.default_output or len(self.owner.outputs) == 1:
                return f"{op}.0" if len(self.owner.outputs) == 1 else f"{op}.{self.index}"
            return f"{op}.{self.index}"
        return f"<{self.type}>"

    def __repr__(self) -> str:
        if not FLAG_VALUES["print_test_value"]:
            return str(self)
        try:                                    # Theano's config.print_test_value: the value on a second line
            value = self.get_test_value()
        except TestValueError:
            return str(self)
        return f"{self}\n{value!r}"

    @property
    def tag(self) -> VariableTag:
        """The scratchpad: ``tag.trace``, ``tag.test_value``, ... (also readable like a dict)."""
        d = self.__dict__
        tag = d.get("_tag")
        if tag is None:
            tag = d["_tag"] = VariableTag(self.type, d.pop("_trace", None))
        return tag

    @tag.setter
    def tag(self, value: Any) -> None:
        self.__dict__.pop("_trace", None)
        self.__dict__["_tag"] = variable_tag(self.type, value)

    @property
    def trace(self) -> Optional[str]:
        """The user's source line ('file:line') where this Variable was created."""
        d = self.__dict__
        tag = d.get("_tag")
        return d.get("_trace") if tag is None else getattr(tag, "trace", None)

    def _copy_tag_to(self, cp: "Variable") -> None:
        """Give the clone cp this Variable's tag (a copy) or, if it has none yet, its trace."""
        tag = self.__dict__.get("_tag")
        if tag is None:
            cp.__dict__.pop("_tag", None)
            cp.__dict__["_trace"] = self.__dict__.get("_trace")
        else:
            cp.tag = tag.copy()

    def describe(self) -> str:
        """A one-line description for error messages: name, type and creation line."""
        where = f" (created at {self.trace})" if self.trace else ""
        return f"'{self}' of type {self.type}{where}"

    def clone(self, **kwargs) -> "Variable":
        """A new Variable like self, without owner or index; name and tag are copied."""
        _cloning.on = True              # its trace is copied below: not looked up in the stack
        try:
            cp = self.__class__(self.type, None, None, self.name)
        finally:
            _cloning.on = False
        self._copy_tag_to(cp)
        return cp

    def get_parents(self) -> List["Apply"]:
        """The owner as a one-element list, or an empty list."""
        return [self.owner] if self.owner is not None else []

    def eval(self, inputs_to_values: Optional[Dict["Variable", Any]] = None) -> Any:
        """Compile (once, cached on the variable) and evaluate this variable for the given inputs."""
        inputs_to_values = inputs_to_values or {}
        keys = tuple(inputs_to_values.keys())
        cache = self.tag.__dict__.setdefault("_eval_fns", {})
        fn = cache.get(keys)
        if fn is None:
            fn = build_function(list(keys), self)
            cache[keys] = fn
        return fn(*[inputs_to_values[k] for k in keys])

    def __setstate__(self, state: Dict[str, Any]) -> None:
        tag = state.pop("tag", None)                  # pickled when the tag was an attribute (maybe a dict)
        self.__dict__.update(state)
        if tag is not None:
            self.tag = tag

    def get_test_value(self) -> Any:
        """The test value (``tag.test_value``, a Constant's data, a shared variable's value); ValueError if none."""
        if hasattr(self, "container") and hasattr(self, "get_value"):     # a shared variable (graph/shared.py)
            return self.get_value(borrow=True)
        try:
            return self.tag.__dict__["test_value"]
        except KeyError:
            raise TestValueError(f"{self.describe()} has no test value; set it with "
                                 f"var.tag.test_value = value") from None


class Constant(Variable):
    """A Variable with a fixed, read-only value; never a function input."""

    def __init__(self, type: TypeBase, data: Any, name: Optional[str] = None):
        super().__init__(type, None, None, name)
        self.data = type.filter(data)
        _make_read_only(self.data)

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        text = str(self.data)
        if len(text) > 20:
            text = text[:10].strip() + " ... " + text[-5:].strip()
        return f"{type(self).__name__}{{{text}}}"

    def signature(self) -> Tuple[Any, ...]:
        """A hashable key: equal signatures mean interchangeable constants (used by merging)."""
        return (self.type, _data_signature(self.data))

    def equals(self, other: Any) -> bool:
        """True if other is a Constant of the same type and value."""
        return isinstance(other, Constant) and self.signature() == other.signature()

    @property
    def value(self) -> Any:
        """The constant's data."""
        return self.data

    def get_test_value(self) -> Any:
        """The constant's data (a Constant is its own test value)."""
        return self.data

    def clone(self, **kwargs) -> "Constant":
        """A Constant sharing the (read-only) data."""
        _cloning.on = True              # its trace is copied below
        try:
            cp = self.__class__(self.type, self.data, self.name)
        finally:
            _cloning.on = False
        self._copy_tag_to(cp)
        return cp

    @property
    def owner(self):
        return None

    @owner.setter
    def owner(self, value):
        if value is not None:
            raise ValueError("a Constant cannot have an owner")


def _make_read_only(data: Any) -> None:
    flags = getattr(data, "flags", None)
    if flags is not None and hasattr(flags, "writeable"):
        try:
            data.flags.writeable = False
        except ValueError:
            pass


def _data_signature(data: Any) -> Any:
    import numpy as np
    if isinstance(data, np.ndarray):
        return ("ndarray", data.dtype.str, data.shape, data.tobytes())
    if isinstance(data, np.generic):
        return ("scalar", data.dtype.str, data.tobytes())
    try:
        hash(data)
        return data
    except TypeError:
        return ("id", id(data))


def rebuilt_variable(cls: type, type_: TypeBase, name: Optional[str], tag: Any) -> "Variable":
    """A Variable of class cls rebuilt from stored parts (a graph from the rewrite cache or a pickle), ownerless
    until its Apply adopts it: no argument checks and no source-line lookup (tag carries the trace, or is the
    trace itself, a str), which a loaded graph of a thousand nodes would pay for every output."""
    var = cls.__new__(cls)
    if isinstance(tag, str):            # only the trace was stored: the tag is made on first use (Variable.tag)
        var.__dict__.update(type=type_, owner=None, index=None, name=name,
                            auto_name=f"auto_{next(_variable_ids)}", _trace=tag)
    else:
        var.__dict__.update(type=type_, owner=None, index=None, name=name,
                            auto_name=f"auto_{next(_variable_ids)}", _tag=variable_tag(type_, tag))
    return var


class Apply(Node):
    """The application of an Op to input Variables, producing output Variables."""

    def __init__(self, op: Any, inputs: Sequence[Variable], outputs: Sequence[Variable]):
        self.op = op
        self.inputs: List[Variable] = []
        for i, inp in enumerate(inputs):
            if not isinstance(inp, Variable):
                raise TypeError(f"Apply of {op}: input {i} is not a Variable: {inp!r}")
            self.inputs.append(inp)
        self.outputs: List[Variable] = []
        for i, out in enumerate(outputs):
            if not isinstance(out, Variable):
                raise TypeError(f"Apply of {op}: output {i} is not a Variable: {out!r}")
            if isinstance(out, Constant):
                raise TypeError(f"Apply of {op}: output {i} is a Constant")
            if out.owner is None:
                out.owner, out.index = self, i
            elif out.owner is not self or out.index != i:
                raise ValueError(f"Apply of {op}: output {i} already belongs to another node")
            self.outputs.append(out)

    @property
    def tag(self) -> Tag:
        """The node's scratchpad (made on first use)."""
        tag = self.__dict__.get("_tag")
        if tag is None:
            tag = self.__dict__["_tag"] = Tag()
        return tag

    @tag.setter
    def tag(self, value: Any) -> None:
        self.__dict__["_tag"] = value if isinstance(value, Tag) else Tag(**dict(value))

    def __setstate__(self, state: Dict[str, Any]) -> None:
        tag = state.pop("tag", None)                  # pickled when the tag was an attribute (maybe a dict)
        self.__dict__.update(state)
        if tag is not None:
            self.tag = tag

    def _copy_tag_to(self, cp: "Apply") -> None:
        if "_tag" in self.__dict__:
            cp.tag = self.__dict__["_tag"].copy()

    @property
    def out(self) -> Variable:
        """The single (or default) output."""
        do = getattr(self.op, "default_output", None)
        if do is not None:
            return self.outputs[do]
        if len(self.outputs) == 1:
            return self.outputs[0]
        raise AttributeError(f"{self.op} has several outputs and no default_output")

    def default_output(self) -> Variable:
        """The output selected by op.default_output (or the only one)."""
        return self.out

    @property
    def nin(self) -> int:
        """Number of inputs."""
        return len(self.inputs)

    @property
    def nout(self) -> int:
        """Number of outputs."""
        return len(self.outputs)

    @property
    def params_type(self):
        return getattr(self.op, "params_type", None)

    def run_params(self):
        """The op's parameters for this node (Op.get_params)."""
        return self.op.get_params(self)

    def __str__(self) -> str:
        return f"{self.op}({', '.join(str(i) for i in self.inputs)})"

    def __repr__(self) -> str:
        return str(self)

    def get_parents(self) -> List[Variable]:
        """The inputs."""
        return list(self.inputs)

    def clone(self, clone_inner_graph: bool = False) -> "Apply":
        """A new Apply with the same op and inputs and fresh outputs."""
        cp = Apply(self.op, self.inputs, [o.clone() for o in self.outputs])
        self._copy_tag_to(cp)
        return cp

    def clone_with_new_inputs(self, inputs: Sequence[Variable], strict: bool = True) -> "Apply":
        """An Apply of the same op on new inputs; re-runs make_node unless strict types match."""
        if len(inputs) != len(self.inputs):
            raise ValueError(f"{self.op}: expected {len(self.inputs)} inputs, got {len(inputs)}")
        remake = False
        new_inputs = list(inputs)
        for i, (cur, new) in enumerate(zip(self.inputs, new_inputs)):
            if cur.type != new.type:
                if strict:
                    converted = cur.type.filter_variable(new)
                    new_inputs[i] = converted
                else:
                    remake = True
        if remake:
            node = self.op.make_node(*new_inputs)
            self._copy_tag_to(node)
            return node
        cp = Apply(self.op, new_inputs, [o.clone() for o in self.outputs])
        self._copy_tag_to(cp)
        return cp


# ---------------------------------------------------------------------------------------------
# Walkers
# ---------------------------------------------------------------------------------------------

def walk(nodes: Iterable[Any], expand: Callable[[Any], Optional[Iterable[Any]]],
         bfs: bool = True) -> Iterator[Any]:
    """Visit each node reachable from nodes once, calling expand to get the next ones."""
    todo = deque(nodes)
    seen: Set[int] = set()
    pop = todo.popleft if bfs else todo.pop
    while todo:
        node = pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        nxt = expand(node)
        if nxt:
            todo.extend(nxt)


def ancestors(outputs: Iterable[Variable], blockers: Optional[Iterable[Variable]] = None
              ) -> List[Variable]:
    """All Variables that outputs depend on (outputs included), stopping at blockers."""
    block = set(blockers) if blockers is not None else ()
    # walk(outputs, owner's inputs reversed, bfs=False) inlined: every compile walks the user's whole graph
    todo = list(outputs)
    seen: Set[int] = set()
    found: List[Variable] = []
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        found.append(v)
        owner = v.owner
        if owner is not None and v not in block:
            todo.extend(reversed(owner.inputs))
    return found


def graph_inputs(outputs: Iterable[Variable], blockers: Optional[Iterable[Variable]] = None
                 ) -> List[Variable]:
    """The ownerless Variables (or blockers) that outputs depend on, in discovery order."""
    block = set(blockers) if blockers is not None else set()
    return [v for v in ancestors(outputs, block) if v.owner is None or v in block]


def variables_and_orphans(inputs: Sequence[Variable], outputs: Sequence[Variable]
                          ) -> Tuple[List[Variable], List[Variable]]:
    """Variables between inputs and outputs, and the orphans (ownerless non-inputs) among them."""
    variables = ancestors(outputs, inputs)
    input_set = set(inputs)
    orphans = [v for v in variables if v.owner is None and v not in input_set]
    return variables, orphans


def applys_between(inputs: Sequence[Variable], outputs: Sequence[Variable]) -> List[Apply]:
    """The Apply nodes between inputs and outputs."""
    variables, _ = variables_and_orphans(inputs, outputs)
    input_set = set(inputs)
    seen, result = set(), []
    for v in variables:
        if v.owner is not None and v not in input_set and v.owner not in seen:
            seen.add(v.owner)
            result.append(v.owner)
    return result


def io_toposort(inputs: Sequence[Variable], outputs: Sequence[Variable],
                orderings: Optional[Dict[Apply, List[Apply]]] = None) -> List[Apply]:
    """The Apply nodes between inputs and outputs in a topological order (deterministic).

    inputs may be a set, used as is (no copy), which keeps repeated imports cheap.
    """
    input_set = inputs if isinstance(inputs, (set, frozenset)) else set(inputs)
    orderings = orderings or {}
    order: List[Apply] = []
    done: Set[Apply] = set()
    # iterative post-order DFS over Apply nodes
    for out in outputs:
        if out.owner is None or out in input_set or out.owner in done:
            continue
        stack: List[Tuple[Apply, Iterator[Apply]]] = [(out.owner, _deps(out.owner, input_set, orderings))]
        on_stack = {out.owner}
        while stack:
            node, it = stack[-1]
            for dep in it:
                if dep in done:
                    continue
                if dep in on_stack:
                    raise ValueError("the graph contains a cycle")
                on_stack.add(dep)
                stack.append((dep, _deps(dep, input_set, orderings)))
                break
            else:
                stack.pop()
                on_stack.discard(node)
                done.add(node)
                order.append(node)
    return order


def _deps(node: Apply, input_set: Set[Variable], orderings: Dict[Apply, List[Apply]]) -> Iterator[Apply]:
    for inp in node.inputs:
        if inp.owner is not None and inp not in input_set:
            yield inp.owner
    yield from orderings.get(node, ())


def clone(inputs: Sequence[Variable], outputs: Sequence[Variable], copy_inputs: bool = True,
          copy_orphans: bool = True) -> Tuple[List[Variable], List[Variable]]:
    """Copy the graph between inputs and outputs; return the new inputs and outputs."""
    memo = clone_get_equiv(inputs, outputs, copy_inputs, copy_orphans)
    return [memo[i] for i in inputs], [memo[o] for o in outputs]


def clone_get_equiv(inputs: Sequence[Variable], outputs: Sequence[Variable], copy_inputs: bool = True,
                    copy_orphans: bool = True, memo: Optional[Dict[Node, Node]] = None
                    ) -> Dict[Node, Node]:
    """Copy the graph and return the map from every old Variable and Apply to its copy."""
    memo = {} if memo is None else memo
    for inp in inputs:
        if inp not in memo:
            memo[inp] = inp.clone() if copy_inputs else inp
    for node in io_toposort(inputs, outputs):
        for inp in node.inputs:
            if inp not in memo:
                memo[inp] = inp.clone() if copy_orphans else inp
        new_node = node.clone_with_new_inputs([memo[i] for i in node.inputs], strict=False)
        memo[node] = new_node
        for old, new in zip(node.outputs, new_node.outputs):
            memo.setdefault(old, new)
    for out in outputs:
        if out not in memo:
            memo[out] = out.clone() if copy_orphans else out
    return memo


def clone_replace(outputs: Sequence[Variable] | Variable,
                  replace: Optional[Dict[Variable, Variable]] = None) -> Any:
    """Copy outputs' graph with some Variables replaced by others."""
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    replace = dict(replace or {})
    for old, new in replace.items():
        if not isinstance(new, Variable):
            raise TypeError(f"clone_replace: replacement of {old} is not a Variable: {new!r}")
    memo: Dict[Node, Node] = dict(replace)
    inputs = graph_inputs(outs, blockers=list(replace))
    for inp in inputs:
        memo.setdefault(inp, inp)
    memo = clone_get_equiv(list(memo.keys()), outs, copy_inputs=False, copy_orphans=False, memo=memo)
    result = [memo[o] for o in outs]
    return result[0] if single else result


def equal_computations(xs: Sequence[Variable], ys: Sequence[Variable],
                       in_xs: Optional[Sequence[Variable]] = None,
                       in_ys: Optional[Sequence[Variable]] = None) -> bool:
    """True if xs and ys compute the same thing (same ops on matching inputs or equal constants)."""
    if len(xs) != len(ys):
        return False
    in_xs, in_ys = list(in_xs or []), list(in_ys or [])
    if len(in_xs) != len(in_ys):
        return False
    equiv: Dict[Variable, Variable] = dict(zip(in_xs, in_ys))

    def same(x: Variable, y: Variable) -> bool:
        if x in equiv:
            return equiv[x] is y
        if x.type != y.type:
            return False
        if isinstance(x, Constant) or isinstance(y, Constant):
            ok = isinstance(x, Constant) and x.equals(y)
        elif x.owner is None or y.owner is None:
            ok = x is y or (x.owner is None and y.owner is None and x is y)
        else:
            nx, ny = x.owner, y.owner
            ok = (x.index == y.index and nx.op == ny.op and len(nx.inputs) == len(ny.inputs)
                  and all(same(a, b) for a, b in zip(nx.inputs, ny.inputs)))
        if ok:
            equiv[x] = y
        return ok

    return all(same(x, y) for x, y in zip(xs, ys))


def as_list(x: Any) -> List[Any]:
    """x as a list (a tuple or list is converted, anything else wrapped)."""
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]

