"""Loop versioning for bounds checks: one range check before a loop instead of one per element.

A *counted loop* is a `while` whose condition is `lt i, stop` (`gt` for a negative
step), possibly and-ed with its exit flags (`break`, `return`), where `i` is a carried
value the body advances by a constant (`add`, `add_sat`) and `stop` an invariant: what
`for i in range(...)` lowers to. Where its body (`if`s and inner loops included) indexes an
invariant array (`array_get`, `array_set`, the integer parts of `array_view`) with indices
affine in counters, `c1*i + c2*j + b` (the `c` constants, `b` computed from invariants by
ops without effects, `j` the counter of an inner counted loop whose bounds are invariants
too), the loop becomes

    %ok = every such index, at the corners of the counters' ranges, is within [0, size)
    %r = if %ok [inputs] {then: the loop, those accesses `inbounds`} {else: the loop as it was}

A view the loop makes of an invariant array, with slices of step 1 whose bounds are
affine (`w = x[i:i + 3]`, `x[:i + 1]`, `a[i:i + 2, k]`), is a *window*: `w[idx]` with
`idx` affine is checked as `0 <= start`, `stop <= len(x)` (the slice neither clamps
nor counts from the end, so `len(w) == stop - start`), `0 <= idx` and
`start + idx < stop`.

An affine function takes its extremes over a box at the box's corners, so the two corners
per axis stand for every iteration. An element access (`array_get`, `array_set`) of an
invariant array at an index computed from data (`counts[int(x[i] * n)] += 1`) keeps its
check, but `%ok` also asks its array's last axis to step one element at a time
(`array_unit_stride`), and the fast loop's access is marked `unit_stride`: its address
needs no multiplication by the stride, which sat on the way from the index to the
read-modify-write. A loop with such an access over a strided array takes the checked
loop, as fast for that access. Where the check fails (an index out of range, a negative
one, which counts from the end, a short `out`) the original loop runs, and raises what it
always did, at the same iteration, after the same writes. The check has no effects: it
reads shapes and computes with ints.

Exactness: compiled code computes indices in wrapping int64 arithmetic, equal to the affine
function modulo 2**64. The check also asks every counter bound to be within +-2**40 and `b`
within +-2**61, and the pass takes only sum(|c|) <= 2**20, so the corners are computed
without overflow and an index found in [0, size) is the function's true value.

Accesses marked `boundscheck=False` are versioned too: the check costs nothing per element,
and `inbounds` also drops the negative-index wrap, a select LLVM keeps where it cannot
prove the index non-negative (`x[i - k]`), which keeps the loop from vectorizing.

The accesses of the fast loop are not versioned again; an inner loop whose accesses were
left (a triangular nest, `range(i)`) is versioned inside the fast loop, where its check
runs once per outer iteration. The `if` lists what it hoisted in `attrs['hoisted']`, which
the IR dump shows and the LLVM backend names the fast loop's block after.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core import Graph, Module, Node, Value
from ..types import BOOL, I64
from .effects import has_effects
from .inline import clone_node

COUNTER_BOUND = 2 ** 40
"""Counter bounds (start, stop) the check accepts: any loop over an array's axis."""
OFFSET_BOUND = 2 ** 61
"""Constant parts `b` of an index the check accepts."""
MAX_COEFFICIENTS = 2 ** 20
"""The largest sum of |c| over an index's counters the pass takes."""
SHAPE_QUERIES = frozenset({"array_dim", "array_shape", "array_size", "array_ndim"})
"""Ops reading an array that a check may run early: shapes never change."""

Recipe = tuple
"""How an invariant is computed from the loop's inputs, without effects: ("input", k),
("const", value), or ("node", node, argument recipes): a copy of `node`."""


@dataclass(eq=False)
class Counter:
    """A counted loop's counter: it takes values from `start` by `step` while before `stop`."""

    start: Recipe
    stop: Recipe
    step: int


@dataclass
class Affine:
    """sum(c * counter) + sum(k * atom) + const: an int computed from counters and invariants."""

    counters: dict = field(default_factory=dict)
    """Counter -> its constant coefficient c."""
    atoms: dict = field(default_factory=dict)
    """Recipe of an invariant -> its constant coefficient k."""
    const: int = 0

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        counters, atoms = dict(self.counters), dict(self.atoms)
        for mine, theirs in ((counters, other.counters), (atoms, other.atoms)):
            for key, k in theirs.items():
                mine[key] = mine.get(key, 0) + sign * k
        return Affine(counters, atoms, self.const + sign * other.const)

    def times(self, k: int) -> Affine:
        return Affine({c: k * v for c, v in self.counters.items()},
                      {a: k * v for a, v in self.atoms.items()}, k * self.const)

    def constant(self) -> int | None:
        return self.const if not self.counters and not self.atoms else None


@dataclass
class Window:
    """A view the loop makes of an invariant array with affine slice bounds (`x[i:i + 3]`):
    for each of its axes, the array's axis and the slice's (start, stop) forms, None for
    an axis taken whole."""

    array: Recipe
    axes: list[tuple[int, tuple[Affine, Affine] | None]]


@dataclass
class Info:
    """What the analysis knows of a value: how to compute it before the loop, its form, or
    the window it is."""

    recipe: Recipe | None = None
    affine: Affine | None = None
    window: Window | None = None


@dataclass
class Access:
    """An indexing node into an invariant array, or into a window of one."""

    node: Node
    array: Recipe
    indices: list[tuple[int, Affine]] | None
    """(axis, form) of each integer index, checked within [0, size) of the array's axis;
    None for an element access some of whose indices are not affine: only its last
    axis's stride is checked."""
    nonnegative: list[Affine] = field(default_factory=list)
    """Forms also checked >= 0 (a window's: its start, the index, the room left)."""


def version_loops(module: Module) -> Module:
    """Version every counted loop of `module` whose body has accesses to hoist."""
    for graph in module.graphs.values():
        _version_in(graph)
    return module


def _version_in(graph: Graph) -> None:
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.op == "while":
            versioned = _version(node)
            if versioned is not None:
                nodes.extend(versioned)
                _version_in(versioned[-1].regions[0])  # what is left inside the fast loop
                continue
            for region in node.regions:
                _version_in(region)
        elif node.op == "if":
            for region in node.regions[:1] if node.attrs.get("hoisted") else node.regions:
                _version_in(region)
        nodes.append(node)
    graph.nodes = nodes


# ---- finding counted loops and affine indices -------------------------------------------

def _counted(loop: Node) -> tuple[int, Recipe, int] | None:
    """(carried position of the counter, recipe of `stop` over the loop's inputs, step) of
    a counted loop, else None."""
    cond, body = loop.regions
    n_inv = loop.attrs["n_invariants"]
    env = {p: _invariant(("input", k), p) for k, p in enumerate(cond.params[:n_inv])}
    made = {}
    for node in cond.nodes:
        made.update((out, node) for out in node.outputs)
        if node.op not in ("if", "while", "fused", "rowwise", "call"):
            info = _leaf_info(node, env)
            if info is not None:
                env[node.outputs[0]] = info
    test = made.get(cond.outputs[0])
    tests = [test] if test is None or test.op != "bitand" else [made.get(v) for v in test.inputs]
    for test in tests:
        if test is None or test.op not in ("lt", "gt") or test.inputs[0] not in cond.params:
            continue
        position = cond.params.index(test.inputs[0]) - n_inv
        stop = env.get(test.inputs[1])
        step = _step(body, n_inv, position) if position >= 0 and stop and stop.recipe else None
        if step is not None and (step > 0) == (test.op == "lt"):
            return position, stop.recipe, step
    return None


def _step(body: Graph, n_inv: int, position: int) -> int | None:
    """The constant the body adds to carried value `position`, if that is all it does."""
    counter = body.params[n_inv + position]
    made = {out: node for node in body.nodes for out in node.outputs}
    node = made.get(body.outputs[position])
    if node is None or node.op not in ("add", "add_sat") or counter not in node.inputs:
        return None
    other = made.get(node.inputs[1] if node.inputs[0] is counter else node.inputs[0])
    if other is None or other.op != "const" or type(other.attrs["value"]) is not int:
        return None
    return other.attrs["value"] or None


def _find_accesses(graph: Graph, env: dict[Value, Info], found: list[Access]) -> None:
    """Walk `graph` (a region of the loop, `env` knowing its parameters) for accesses."""
    for node in graph.nodes:
        if node.op == "if":
            for region in node.regions:
                _find_accesses(region, _region_env(region, node.inputs[1:], env), found)
        elif node.op == "while":
            _find_in_loop(node, env, found)
        elif node.op not in ("fused", "rowwise", "call"):
            access = _access(node, env)
            if access is not None:
                found.append(access)
            info = _leaf_info(node, env) or _window(node, env)
            if info is not None:
                env[node.outputs[0]] = info


def _invariant(recipe: Recipe, value: Value) -> Info:
    """What is known of an invariant: its recipe, and for an int the form of an atom."""
    return Info(recipe, Affine(atoms={recipe: 1}) if value.type == I64 else None)


def _region_env(region: Graph, inputs: list[Value], env: dict[Value, Info]) -> dict:
    return {p: env[v] for p, v in zip(region.params, inputs) if v in env}


def _find_in_loop(loop: Node, env: dict[Value, Info], found: list[Access]) -> None:
    """An inner loop: its invariants keep what is known; a counted one with invariant
    bounds gives its counter a form."""
    n_inv = loop.attrs["n_invariants"]
    body = loop.regions[1]
    inner = _region_env(body, loop.inputs[:n_inv], env)
    counted = _counted(loop)
    if counted is not None:
        position, stop, step = counted
        start = env.get(loop.inputs[n_inv + position])
        outer = [env[v].recipe if v in env else None for v in loop.inputs]
        stop = _substitute(stop, outer)
        if start is not None and start.recipe and stop is not None:
            counter = Counter(start.recipe, stop, step)
            inner[body.params[n_inv + position]] = Info(None, Affine({counter: 1}))
    _find_accesses(body, inner, found)


def _substitute(recipe: Recipe, inputs: list[Recipe | None]) -> Recipe | None:
    """`recipe` over an inner loop's inputs, over the outer loop's (None: not invariant)."""
    if recipe[0] == "input":
        return inputs[recipe[1]]
    if recipe[0] == "const":
        return recipe
    args = tuple(_substitute(r, inputs) for r in recipe[2])
    return None if None in args else ("node", recipe[1], args)


def _leaf_info(node: Node, env: dict[Value, Info]) -> Info | None:
    if len(node.outputs) != 1:
        return None
    out = node.outputs[0]
    is_int = out.type == I64
    if node.op == "const":
        value = node.attrs["value"]
        if type(value) not in (int, float, bool):
            return None
        return Info(("const", value, out.type), Affine(const=value) if is_int else None)
    ins = [env.get(v) for v in node.inputs]
    if all(i is not None and i.recipe for i in ins) and _may_run_early(node):
        return _invariant(("node", node, tuple(i.recipe for i in ins)), out)
    if not is_int or any(i is None or i.affine is None for i in ins):
        return None
    forms = [i.affine for i in ins]
    if node.op in ("add", "sub"):
        return Info(None, forms[0].plus(forms[1], 1 if node.op == "add" else -1))
    if node.op == "neg":
        return Info(None, forms[0].times(-1))
    if node.op == "mul":
        scale = [f.constant() for f in forms]
        if scale[0] is not None:
            return Info(None, forms[1].times(scale[0]))
        if scale[1] is not None:
            return Info(None, forms[0].times(scale[1]))
    return None


def _may_run_early(node: Node) -> bool:
    """Whether `node` may be computed before the loop, whether the loop runs or not."""
    if node.regions or has_effects(node):
        return False
    return node.op in SHAPE_QUERIES or "reads" not in _traits(node)


def _traits(node: Node) -> frozenset:
    from ..ops import OPS

    return OPS[node.op].traits


def index_positions(node: Node) -> list[tuple[int, int]]:
    """(axis, input position) of each integer index of an indexing node; [] for others."""
    if node.op == "array_get":
        return [(axis, 1 + axis) for axis in range(len(node.inputs) - 1)]
    if node.op == "array_set":
        return [(axis, 2 + axis) for axis in range(len(node.inputs) - 2)]
    if node.op == "array_view":
        positions, at = [], 1
        for axis, entry in enumerate(node.attrs["spec"]):
            if entry == "i":
                positions.append((axis, at))
            at += 1 if entry == "i" else entry[1:].count("1")
        return positions
    return []


def _window(node: Node, env: dict[Value, Info]) -> Info | None:
    """A view of an invariant array whose slices (step 1) have affine bounds, and whose
    integer indices are affine (checked as the view node's own access)."""
    if node.op != "array_view":  # before reading an input: print(...) has none
        return None
    array = env.get(node.inputs[0])
    if array is None or not array.recipe:
        return None
    spec, at, axes = node.attrs["spec"], 1, []
    for axis, entry in enumerate(spec):
        used = 1 if entry == "i" else entry[1:].count("1")
        forms = [env[v].affine if v in env else None for v in node.inputs[at:at + used]]
        at += used
        if None in forms:
            return None
        if entry == "s000":
            axes.append((axis, None))
        elif entry in ("s110", "s010"):
            start = forms[0] if entry == "s110" else Affine()
            axes.append((axis, (start, forms[-1])))
        elif entry != "i":
            return None
    axes += [(axis, None) for axis in range(len(spec), node.inputs[0].type.ndim)]
    return Info(window=Window(array.recipe, axes))


def _window_access(node: Node, window: Window, env: dict[Value, Info]) -> Access | None:
    """`w[idx]` of a window `w = x[start:stop]`: with 0 <= start, stop <= len(x) (no
    clamping, no counting from the end), 0 <= idx and start + idx < stop, `idx` is
    within `w`'s axis, whose length is stop - start."""
    if node.op not in ("array_get", "array_set") or node.attrs.get("inbounds"):
        return None
    indices, nonnegative = [], []
    for (_, at), (base_axis, bounds) in zip(index_positions(node), window.axes):
        form = env[node.inputs[at]].affine if node.inputs[at] in env else None
        if form is None or node.inputs[at].type != I64 or not _small(form):
            return None
        if bounds is None:
            indices.append((base_axis, form))
            nonnegative.append(form)
            continue
        start, stop = bounds
        if not (_small(start) and _small(stop)):
            return None
        indices.append((base_axis, stop.plus(Affine(const=1), -1)))  # stop <= len(x)
        room = stop.plus(start, -1).plus(form, -1).plus(Affine(const=1), -1)
        nonnegative += [start, form, room]
    return Access(node, window.array, indices, nonnegative)


def _small(form: Affine) -> bool:
    """Whether the check computes `form` at the corners without overflow (module doc)."""
    return sum(map(abs, form.counters.values())) <= MAX_COEFFICIENTS \
        and abs(form.const) <= OFFSET_BOUND


def _access(node: Node, env: dict[Value, Info]) -> Access | None:
    positions = index_positions(node)
    array = env.get(node.inputs[0]) if positions else None
    if array is not None and array.window is not None:
        return _window_access(node, array.window, env)
    if array is None or not array.recipe or node.attrs.get("inbounds"):
        return None
    indices = []
    for axis, at in positions:
        info = env.get(node.inputs[at])
        form = info.affine if info is not None else None
        if form is None or node.inputs[at].type != I64 or not _small(form):
            element = node.op in ("array_get", "array_set") and not node.attrs.get("unit_stride")
            return Access(node, array.recipe, None) if element else None
        indices.append((axis, form))
    return Access(node, array.recipe, indices)


# ---- the check and the two loops --------------------------------------------------------

def _version(loop: Node) -> list[Node] | None:
    """The check's nodes and the `if` choosing between the fast loop and `loop`."""
    counted = _counted(loop)
    if counted is None:
        return None
    position, stop, step = counted
    n_inv = loop.attrs["n_invariants"]
    body = loop.regions[1]
    env = {p: _invariant(("input", k), p) for k, p in enumerate(body.params[:n_inv])}
    counter = Counter(("input", n_inv + position), stop, step)
    env[body.params[n_inv + position]] = Info(None, Affine({counter: 1}))
    found: list[Access] = []
    _find_accesses(body, env, found)
    accesses = [a for a in found if a.indices is not None]
    if not accesses:
        return None
    strided = [a for a in found if a.indices is None]
    check = _Check(loop)
    ok = check.all([check.access(a) for a in accesses]
                   + list(dict.fromkeys(check.unit_stride(a) for a in strided)))
    marks = [(a.node, "inbounds") for a in accesses] + [(a.node, "unit_stride") for a in strided]
    for node, mark in marks:
        node.attrs[mark] = True
    fast = clone_node(loop, {v: v for v in loop.inputs})  # inputs: set by `_if`
    for node, mark in marks:
        del node.attrs[mark]
    described = ", ".join(dict.fromkeys([_describe(a.node) for a in accesses]
                                        + [_describe(a.node) + " (stride 1)" for a in strided]))
    return check.nodes + [_if(ok, loop, fast, described)]


def _if(ok: Value, loop: Node, fast: Node, described: str) -> Node:
    """`if ok [loop.inputs] {fast} {loop}`, with the loop's outputs."""
    inputs, outputs, regions = loop.inputs, loop.outputs, []
    for copy in (fast, loop):
        params = [Value(v.name, v.type) for v in inputs]
        copy.inputs = params
        if copy is loop:
            copy.outputs = [Value(v.name, v.type) for v in outputs]
        regions.append(Graph("then" if copy is fast else "else", params, [copy],
                             list(copy.outputs), loop.loc))
    return Node("if", [ok, *inputs], outputs, {"hoisted": described}, regions, loop.loc)


def _describe(node: Node) -> str:
    """`x[]` at its source line: which array's check an access had."""
    name = node.inputs[0].name.split(".")[0] or "array"
    return f"{name}[] line {node.loc.line}" if node.loc is not None else f"{name}[]"


class _Check:
    """The nodes computing the check before `loop`, each invariant computed once."""

    def __init__(self, loop: Node):
        self.loop = loop
        self.nodes: list[Node] = []
        self.made: dict = {}
        self.boxed: set = set()
        self.conditions: list[Value] = []

    def access(self, access: Access) -> Value:
        """Each index's lowest and highest value over the counters' box within its axis."""
        array = self.value(access.array)
        ok = []
        for axis, form in access.indices:
            size = self.memo(("dim", access.array, axis),
                             lambda: self.op("array_dim", [array], I64, axis=axis))
            low, high = self.extremes(form)
            ok.append(self.op("ge", [low, self.const(0)], BOOL))
            ok.append(self.op("lt", [high, size], BOOL))
        for form in access.nonnegative:
            ok.append(self.op("ge", [self.extremes(form)[0], self.const(0)], BOOL))
        return self.all(ok)

    def unit_stride(self, access: Access) -> Value:
        """Whether the last axis of the access's array steps one element at a time."""
        axis = access.node.inputs[0].type.ndim - 1
        return self.memo(("unit", access.array, axis), lambda: self.op(
            "array_unit_stride", [self.value(access.array)], BOOL, axis=axis))

    def extremes(self, form: Affine) -> tuple[Value, Value]:
        offset = self.offset(form)
        low, high = offset, offset
        for counter, c in form.counters.items():
            first, last = self.range_of(counter)
            small, large = (first, last) if c > 0 else (last, first)
            low = self.add(low, self.scale(small, c))
            high = self.add(high, self.scale(large, c))
        return low, high

    def offset(self, form: Affine) -> Value:
        """sum(k * atom) + const, itself checked to be within +-OFFSET_BOUND."""
        total = self.const(form.const)
        for atom, k in form.atoms.items():
            total = self.add(total, self.scale(self.value(atom), k))
        if form.atoms:
            self.bound(total, OFFSET_BOUND)
        return total

    def range_of(self, counter: Counter) -> tuple[Value, Value]:
        """The counter's smallest and largest value (its bounds checked to be small)."""
        def compute():
            start, stop, step = self.value(counter.start), self.value(counter.stop), counter.step
            self.bound(start, COUNTER_BOUND)
            self.bound(stop, COUNTER_BOUND)
            # The last value: start + ((stop - start - sign) // step) * step.
            sign = 1 if step > 0 else -1
            span = self.op("sub", [self.op("sub", [stop, start], I64), self.const(sign)], I64)
            if abs(step) != 1:
                span = self.op("mul", [self.op("floordiv", [span, self.const(step)], I64),
                                       self.const(step)], I64)
            last = self.add(start, span)
            return (start, last) if step > 0 else (last, start)
        return self.memo(("range", counter), compute)

    def bound(self, value: Value, limit: int) -> None:
        if value not in self.boxed:
            self.boxed.add(value)
            self.conditions.append(self.op("ge", [value, self.const(-limit)], BOOL))
            self.conditions.append(self.op("le", [value, self.const(limit)], BOOL))

    def all(self, conditions: list[Value]) -> Value:
        if self.conditions:  # the bounds the accesses' forms asked for, once
            conditions, self.conditions = self.conditions + conditions, []
        result = conditions[0]
        for condition in conditions[1:]:
            result = self.op("bitand", [result, condition], BOOL)
        return result

    def value(self, recipe: Recipe) -> Value:
        def compute():
            if recipe[0] == "input":
                return self.loop.inputs[recipe[1]]
            if recipe[0] == "const":
                return self.const(recipe[1], recipe[2] if len(recipe) > 2 else I64)
            node, args = recipe[1], [self.value(r) for r in recipe[2]]
            copy = Node(node.op, args, [Value(v.name, v.type) for v in node.outputs],
                        dict(node.attrs), [], node.loc)
            self.nodes.append(copy)
            return copy.outputs[0]
        return self.memo(recipe, compute)

    def add(self, a: Value, b: Value) -> Value:
        return self.op("add", [a, b], I64)

    def scale(self, value: Value, k: int) -> Value:
        return value if k == 1 else self.op("mul", [value, self.const(k)], I64)

    def const(self, value, t=I64) -> Value:
        return self.memo(("const", value, t), lambda: self.op("const", [], t, value=value))

    def memo(self, key, compute):
        if key not in self.made:
            self.made[key] = compute()
        return self.made[key]

    def op(self, name: str, inputs: list[Value], t, **attrs) -> Value:
        node = Node(name, inputs, [Value("", t)], attrs, [], self.loop.loc)
        self.nodes.append(node)
        return node.outputs[0]


def without_versions(module: Module) -> Module:
    """`module` with each versioned loop back as it was (its checked loop): for a backend
    whose element loops gain nothing from it (the GPU's: one launch per loop)."""
    for graph in module.graphs.values():
        _unversion(graph)
    return module


def _unversion(graph: Graph) -> None:
    renames: dict[Value, Value] = {}
    nodes: list[Node] = []
    for node in graph.nodes:
        node.inputs = [renames.get(v, v) for v in node.inputs]
        for region in node.regions:
            _unversion(region)
        if not (node.op == "if" and node.attrs.get("hoisted")):
            nodes.append(node)
            continue
        checked = node.regions[1]  # spliced in place of the `if`, reading its inputs
        inputs = dict(zip(checked.params, node.inputs[1:]))
        for inner in checked.nodes:
            inner.inputs = [inputs.get(v, v) for v in inner.inputs]
            nodes.append(inner)
        renames.update(zip(node.outputs, [inputs.get(v, v) for v in checked.outputs]))
    graph.nodes = nodes
    graph.outputs = [renames.get(v, v) for v in graph.outputs]
