"""FunctionGraph: a graph between given inputs and outputs, with clients, features and replacement."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

from graphjit.graph.basic import (Apply, Constant, Variable, applys_between, clone_get_equiv,
                                  graph_inputs, io_toposort)

Client = Tuple[Union[Apply, str], int]


class InconsistencyError(Exception):
    """A change would make the graph invalid (raised by features, caught to revert)."""


class MissingInputError(Exception):
    """A graph needs a Variable that is neither an input nor a Constant."""


def check_inputs(inputs: Sequence[Variable]) -> None:
    """Raise TypeError/ValueError unless inputs are distinct graph roots that are not Constants."""
    for i, inp in enumerate(inputs):
        if isinstance(inp, Constant):
            raise TypeError(f"a Constant cannot be an input of a function: input {i} is {inp}")
        if inp.owner is not None:
            raise ValueError(f"input {i} ({inp}) is computed by {inp.owner}; "
                             "function inputs must be graph roots")
    if len(set(inputs)) != len(inputs):
        raise ValueError("the same Variable is given twice as an input")


class FunctionGraph:
    """The subgraph between inputs and outputs that rewrites work on and linkers compile.

    Every Variable in it has a client list: (Apply, input index) pairs, or ("output", i) when it is
    the i-th output. The list is both ``fgraph.clients[var]`` and ``var.clients``.
    """

    def __init__(self, inputs: Optional[Sequence[Variable]] = None,
                 outputs: Optional[Sequence[Variable]] = None, features: Iterable[Any] = (),
                 clone: bool = True, update_mapping: Optional[Dict[int, int]] = None):
        if outputs is None:
            raise ValueError("FunctionGraph needs outputs")
        outputs = list(outputs)
        if inputs is None:
            inputs = [v for v in graph_inputs(outputs) if not isinstance(v, Constant)]
        inputs = list(inputs)
        check_inputs(inputs)
        if clone:
            memo = clone_get_equiv(inputs, outputs, copy_inputs=True, copy_orphans=True)
            inputs = [memo[i] for i in inputs]
            outputs = [memo[o] for o in outputs]
        self.inputs: List[Variable] = []
        self.outputs: List[Variable] = []
        self.apply_nodes: Set[Apply] = set()
        self.variables: Set[Variable] = set()
        self.clients: Dict[Variable, List[Client]] = {}
        self._features: List[Any] = []
        self._toposort_cache: Optional[List[Apply]] = None
        self._toposort_plain = False    # whether _toposort_cache was computed without feature orderings
        self.update_mapping = dict(update_mapping or {})
        self.profile = None
        # the rewrite cache's key of the graph this one was rewritten from, set by FunctionMaker when the rewritten
        # graph is on disk under it (compile/rewrite_cache.py); a copy or a changed graph has none
        self.cache_key: Optional[str] = None
        for inp in inputs:
            self.add_input(inp, check=False)
        for i, out in enumerate(outputs):
            self.outputs.append(out)
            self.import_var(out, reason="init")
            self.clients[out].append(("output", i))
        for feature in features:
            self.attach_feature(feature)

    # --- structure -----------------------------------------------------------------------
    def add_input(self, var: Variable, check: bool = True) -> None:
        """Add a new input Variable."""
        if check and var in self.variables:
            return
        self.inputs.append(var)
        self._setup_var(var)
        self.variables.add(var)
        self.cache_key = None

    def add_output(self, var: Variable, reason: Optional[str] = None) -> None:
        """Add var as a new output."""
        self.outputs.append(var)
        self.import_var(var, reason=reason)
        self.clients[var].append(("output", len(self.outputs) - 1))
        self.cache_key = None

    def _setup_var(self, var: Variable) -> None:
        clients = self.clients.setdefault(var, [])
        var.clients = clients  # the seed's var.clients

    def import_var(self, var: Variable, reason: Optional[str] = None) -> None:
        """Bring var (and the nodes computing it) into the graph."""
        if var in self.variables:
            return
        if var.owner is not None:
            self.import_node(var.owner, reason=reason)
        elif not isinstance(var, Constant):
            raise MissingInputError(
                f"the graph needs the value of {var.describe()}, which was not given as an input")
        else:
            self._setup_var(var)
            self.variables.add(var)

    def import_node(self, node: Apply, reason: Optional[str] = None) -> None:
        """Bring node and its missing ancestors into the graph."""
        new_nodes = io_toposort(self.variables, node.outputs)
        for n in new_nodes:
            if n in self.apply_nodes:
                continue
            for inp in n.inputs:
                if inp not in self.variables:
                    if inp.owner is None and not isinstance(inp, Constant):
                        raise MissingInputError(
                            f"the graph needs the value of {inp.describe()}, "
                            "which was not given as an input")
                    self._setup_var(inp)
                    self.variables.add(inp)
            self.apply_nodes.add(n)
            n.fgraph = self
            for out in n.outputs:
                self._setup_var(out)
                self.variables.add(out)
            for i, inp in enumerate(n.inputs):
                self.clients[inp].append((n, i))
            self._toposort_cache = None
            self.cache_key = None
            self.execute_callbacks("on_import", n, reason)

    def remove_client(self, var: Variable, client: Client, reason: Optional[str] = None) -> None:
        """Remove one client of var and prune whatever that leaves unused."""
        todo = [(var, client)]
        while todo:
            v, c = todo.pop()
            clients = self.clients[v]
            clients.remove(c)
            if clients or v.owner is None or v in self.outputs:
                continue
            node = v.owner
            if any(self.clients[o] for o in node.outputs):
                continue
            self.apply_nodes.discard(node)
            for o in node.outputs:
                self.variables.discard(o)
            self._toposort_cache = None
            self.execute_callbacks("on_prune", node, reason)
            for i, inp in enumerate(node.inputs):
                todo.append((inp, (node, i)))

    def change_node_input(self, node: Union[Apply, str], i: int, new_var: Variable,
                          reason: Optional[str] = None, import_missing: bool = False,
                          check: bool = True) -> None:
        """Make new_var the i-th input of node (or the i-th output when node is "output")."""
        if node == "output":
            old = self.outputs[i]
            if check and old.type != new_var.type and not _compatible(old, new_var):
                raise TypeError(f"replacing output {i}: type {new_var.type} differs from {old.type}")
            self.outputs[i] = new_var
        else:
            assert isinstance(node, Apply)
            old = node.inputs[i]
            if check and old.type != new_var.type and not _compatible(old, new_var):
                raise TypeError(f"replacing input {i} of {node}: type {new_var.type} "
                                f"differs from {old.type}")
            node.inputs[i] = new_var
        if old is new_var:
            return
        self.import_var(new_var, reason=reason)
        self.clients[new_var].append((node, i))
        self._toposort_cache = None
        self.cache_key = None
        self.remove_client(old, (node, i), reason=reason)
        self.execute_callbacks("on_change_input", node, i, old, new_var, reason)

    def replace(self, var: Variable, new_var: Variable, reason: Optional[str] = None,
                verbose: Optional[bool] = None, import_missing: bool = False) -> None:
        """Make every client of var use new_var instead."""
        if var not in self.variables:
            return
        if var.type != new_var.type:
            converted = var.type.convert_variable(new_var)
            if converted is None:
                raise TypeError(f"cannot replace {var} of type {var.type} by {new_var} "
                                f"of type {new_var.type} ({reason})")
            new_var = converted
        for node, i in list(self.clients[var]):
            self.change_node_input(node, i, new_var, reason=reason, check=False)

    def replace_all(self, pairs: Iterable[Tuple[Variable, Variable]], reason: Optional[str] = None
                    ) -> None:
        """replace() for each (var, new_var) pair."""
        for var, new_var in pairs:
            self.replace(var, new_var, reason=reason)

    # --- features ------------------------------------------------------------------------
    def attach_feature(self, feature: Any) -> None:
        """Attach a feature and call its on_attach."""
        if feature in self._features:
            return
        attach = getattr(feature, "on_attach", None)
        if attach is not None:
            attach(self)
        self._features.append(feature)
        if getattr(feature, "orderings", None) is not None:
            self._toposort_cache = None     # its orderings may change the order

    def remove_feature(self, feature: Any) -> None:
        """Detach a feature and call its on_detach."""
        if feature not in self._features:
            return
        self._features.remove(feature)
        detach = getattr(feature, "on_detach", None)
        if detach is not None:
            detach(self)
        if getattr(feature, "orderings", None) is not None:
            self._toposort_cache = None

    @property
    def features(self) -> List[Any]:
        """The attached features."""
        return list(self._features)

    def execute_callbacks(self, name: str, *args: Any) -> None:
        """Call method name on every feature that has it."""
        for feature in self._features:
            fn = getattr(feature, name, None)
            if fn is not None:
                fn(self, *args)

    def collect_callbacks(self, name: str, *args: Any) -> Dict[Any, Any]:
        """Call method name on every feature that has it and return the results by feature."""
        return {f: getattr(f, name)(self, *args) for f in self._features if hasattr(f, name)}

    def validate(self) -> bool:
        """Ask every feature to validate the graph (raises InconsistencyError when invalid)."""
        self.execute_callbacks("validate")
        return True

    # --- order ---------------------------------------------------------------------------
    def orderings(self) -> Dict[Apply, List[Apply]]:
        """Extra ordering constraints (node -> nodes that must run before it) from features."""
        result: Dict[Apply, List[Apply]] = {}
        for feature in self._features:
            fn = getattr(feature, "orderings", None)
            if fn is None:
                continue
            for node, prereqs in fn(self).items():
                result.setdefault(node, []).extend(prereqs)
        return result

    def toposort(self) -> List[Apply]:
        """The Apply nodes in an order respecting dependencies and feature orderings (cached)."""
        if self._toposort_cache is None:
            orderings = self.orderings()
            self._toposort_cache = io_toposort(self.inputs, self.outputs, orderings)
            self._toposort_plain = not orderings
        return list(self._toposort_cache)

    def plain_toposort(self) -> List[Apply]:
        """The Apply nodes in dependency order without feature orderings (the cached toposort when it had none)."""
        if self._toposort_cache is not None and self._toposort_plain:
            return list(self._toposort_cache)
        return io_toposort(self.inputs, self.outputs)

    # --- copies and checks ---------------------------------------------------------------
    def clone(self, check_integrity: bool = True) -> "FunctionGraph":
        """A copy of this graph (features are not copied)."""
        return self.clone_get_equiv(check_integrity)[0]

    def clone_get_equiv(self, check_integrity: bool = True, attach_feature: bool = True
                        ) -> Tuple["FunctionGraph", Dict[Any, Any]]:
        """A copy of this graph and the map from old nodes and variables to new ones."""
        memo = clone_get_equiv(self.inputs, self.outputs, copy_inputs=True, copy_orphans=True)
        new = FunctionGraph([memo[i] for i in self.inputs], [memo[o] for o in self.outputs],
                            clone=False, update_mapping=self.update_mapping)
        if check_integrity:
            new.check_integrity()
        if attach_feature:
            for feature in self._features:
                clone_feature = getattr(feature, "clone", None)
                if clone_feature is not None:
                    new.attach_feature(clone_feature())
        return new, memo

    def check_integrity(self) -> None:
        """Raise if the bookkeeping disagrees with the graph structure."""
        nodes = set(applys_between(self.inputs, self.outputs))
        if nodes != self.apply_nodes:
            raise InconsistencyError("apply_nodes disagree with the graph")
        for node in nodes:
            for i, inp in enumerate(node.inputs):
                if (node, i) not in self.clients.get(inp, []):
                    raise InconsistencyError(f"missing client ({node}, {i}) of {inp}")
        for i, out in enumerate(self.outputs):
            if ("output", i) not in self.clients.get(out, []):
                raise InconsistencyError(f"missing output client of {out}")

    def __str__(self) -> str:
        return f"FunctionGraph({', '.join(str(o) for o in self.outputs)})"

    def __repr__(self) -> str:
        return str(self)


def _compatible(old: Variable, new: Variable) -> bool:
    return old.type.convert_variable(new) is not None
