"""Lowering loops: `while`, `for` over `range(...)` (both `while` nodes), `for` over a tuple (unrolled).

A `while` node carries the names its body assigns that exist before the loop,
plus the exit flags the body can set (`$break#n`, `$returned` with the `$result`
slot) and, for a range loop, a hidden counter; everything else the regions read
is captured lazily as a loop invariant. The condition region stops the loop once
a flag is set, without evaluating the user's test again.

`for i in range(start, stop, step)` evaluates its bounds once, before the loop (so does
`astjit.prange`, whose loop is marked `prange`: ir/passes/parallel.py).
The counter starts at `start`; each iteration binds `i` to it and advances it
first, so `continue` needs no special case, and `i` keeps Python's value after
the loop (the last one, or its old value when the loop never ran). A step that
is not a literal picks the comparison at run time and raises ValueError when 0.

`for x in (a, b, c)` (or a name bound to a tuple of known length) is unrolled:
one copy of the body per element, `break` / `continue` handled with the same
flags as a real loop. This is the only unrolling the frontend does.

`for x in seq` over anything else (also `enumerate(seq)`, `zip(a, b)`, `reversed(seq)`)
is a `while` node over a hidden counter, marked `iterate` for type inference: its
leading invariants are the sequences, its first carried value the counter, and each
element the `array_get(seq, counter)` at the top of the body. Over arrays it stays a
loop (the rows of a 2-d array are views, a 1-d array's elements scalars); over a tuple,
whose length is in its type, inference unrolls it (ir/unroll.py).
"""
from __future__ import annotations

import ast
import builtins

from ..ir.core import Value
from ..parallel import prange
from .analysis import assigned_names, constant_index, may_break, may_return
from .blocks import Rest, guard, lower_block, none_set, skip_stmt, unsupported_stmt
from .containers import is_flat, lower_field
from .resolve import LOCAL, static_object
from .scope import (
RESULT,
RETURNED,
RegionGroup,
Scope,
Unbound,
branch_value,
display_name,
is_flag,
)
from .state import LoopFrame, Lowering, StmtRule
from .targets import assign_target


def lower_break(state: Lowering, scope: Scope, stmt: ast.Break) -> None:
    scope.assign(state.frames[-1].break_flag, True)
    scope.dead = True


def lower_continue(state: Lowering, scope: Scope, stmt: ast.Continue) -> None:
    scope.assign(state.frames[-1].continue_flag, True)
    scope.dead = True


def lower_while(state: Lowering, scope: Scope, stmt: ast.While) -> None:
    loc = state.loc(stmt)
    test = stmt.test

    def cond(s: Scope, go_on: Value | None) -> Value:
        if go_on is None:
            return state.condition(s, test)
        if isinstance(test, ast.Constant) and isinstance(test.value, (int, float)) and test.value:
            return go_on  # `while True:` left by break or return
        return branch_value(s, go_on, lambda r: state.condition(r, test),
                            lambda r: r.const(False, loc), loc)
    _lower_loop(state, scope, stmt, [], cond)


def lower_for(state: Lowering, scope: Scope, stmt: ast.For) -> None:
    iterable = stmt.iter
    func = static_object(state, scope, iterable.func) if isinstance(iterable, ast.Call) else None
    if func is builtins.range or func is prange:
        _range_loop(state, scope, stmt, iterable, parallel=func is prange)
    elif (isinstance(iterable, ast.Tuple)
          and not any(isinstance(e, ast.Starred) for e in iterable.elts)):
        elements = [state.lower_expr(scope, e) for e in iterable.elts]
        _unrolled_loop(state, scope, stmt, len(elements), lambda s, k: elements[k])
    elif _known_size(state, scope, iterable):
        _tuple_loop(state, scope, stmt)
    else:
        sequence_loop(state, scope, stmt)


# ---- while nodes ------------------------------------------------------------------------

def _lower_loop(state: Lowering, scope: Scope, stmt: ast.While | ast.For,
                hidden: list[tuple[str, str, Value]], make_cond,
                start_body: Rest | None = None, iterate: list[Value] = (),
                collects: bool = False, parallel: bool = False) -> None:
    """A `while` node for `stmt`.

    `hidden`: (name, parameter name, initial value) of extra carried values;
    `make_cond(cond_scope, go_on)`: the loop test, where `go_on` is None or the
    bool "no exit flag is set"; `start_body`: lowered at the top of the body;
    `iterate`: the sequences of a loop over elements, its leading invariants;
    `collects`: a comprehension's loop, which inference must unroll (ir/unroll.py);
    `parallel`: a loop over `astjit.prange`, marked `prange` (ir/passes/parallel.py).
    """
    loc = state.loc(stmt)
    frame = state.new_frame()
    names = assigned_names(stmt.body + ([stmt.target] if isinstance(stmt, ast.For) else []))
    carried = list(hidden)
    carried += [(n, n, scope.lookup(n)) for n in names if isinstance(scope.lookup(n), Value)]
    if may_break(stmt.body):
        carried.append((frame.break_flag, "$break", scope.const(False, loc)))
    if may_return(stmt.body):
        carried.append((RETURNED, RETURNED, scope.const(False, loc)))
        carried.append((RESULT, RESULT, scope.value_of(RESULT, loc)))
    group = RegionGroup(scope, ["cond", "body"], loc, [(name, p) for name, p, _ in carried])
    cond_scope, body_scope = group.scopes
    for sequence in iterate:
        cond_scope.use(sequence)  # captured first: the node's leading invariants
    flags = [name for name, _, _ in carried if is_flag(name)]
    test = make_cond(cond_scope, none_set(cond_scope, flags, loc))
    for flag in flags:
        body_scope.know(flag, False)  # the body runs only while no flag is set
    state.frames.append(frame)
    if start_body is not None:
        start_body(body_scope)
    lower_block(state, body_scope, stmt.body)
    state.frames.pop()
    group.set_outputs([[test], [body_scope.value_of(name, loc) for name, _, _ in carried]])
    inputs = group.inputs + [init for _, _, init in carried]
    attrs = {"n_invariants": len(group.inputs)}
    if parallel:
        attrs["prange"] = True
    if iterate:
        attrs["iterate"] = {"sequences": len(iterate), "guarded": bool(flags),
                            "reverse": isinstance(stmt.iter, ast.Call)
                            and static_object(state, scope, stmt.iter.func) is builtins.reversed}
        if collects:
            attrs["iterate"]["collects"] = True
    node = scope.add_node("while", inputs, [display_name(name) for name, _, _ in carried], loc,
                          attrs=attrs, regions=group.graphs)
    for (name, _, _), result in zip(carried, node.outputs):
        scope.assign(name, result)
    for name in names:
        if scope.lookup(name) is None:
            scope.assign(name, Unbound(f"it is first assigned inside the loop at line {loc.line}",
                                       "assign it before the loop"))
    _finish_loop(state, scope, stmt, frame)


def _finish_loop(state: Lowering, scope: Scope, stmt: ast.While | ast.For,
                 frame: LoopFrame) -> None:
    """The loop's `else` runs unless it was left by break (or return); then drop its flags."""
    if stmt.orelse and scope.lookup(frame.break_flag) is not True:
        guard(scope, [frame.break_flag, RETURNED],
              lambda s: lower_block(state, s, stmt.orelse), state.loc(stmt), exits=False)
    scope.forget(frame.break_flag)
    scope.forget(frame.continue_flag)


def _range_loop(state: Lowering, scope: Scope, stmt: ast.For, call: ast.Call,
                parallel: bool = False) -> None:
    loc = state.loc(stmt)
    if call.keywords or not 1 <= len(call.args) <= 3 or \
            any(isinstance(a, ast.Starred) for a in call.args):
        unsupported_stmt(state, scope, stmt, "range() takes 1 to 3 positional arguments here",
                         "write range(stop), range(start, stop) or range(start, stop, step)")
        return
    if not isinstance(stmt.target, ast.Name):
        unsupported_stmt(state, scope, stmt, "the target of a loop over range() must be a name",
                         "write: for i in range(...):")
        return
    step = constant_index(call.args[2]) if len(call.args) == 3 else 1
    step = step or None  # a literal 0 raises at run time, like any other zero step
    bounds = [_range_bound(state, scope, a) for a in call.args[:2 if step else 3]]
    start, stop = (scope.const(0, loc), bounds[0]) if len(bounds) == 1 else bounds[:2]
    positive = None if step else _check_step(state, scope, bounds[2], loc)
    counter = f"$range#{next(state.serial)}"

    def cond(s: Scope, go_on: Value | None) -> Value:
        i = s.value_of(counter, loc)
        if positive is None:
            test = s.emit("lt" if step > 0 else "gt", [i, stop], loc)
        else:
            test = s.emit("select", [positive, s.emit("lt", [i, stop], loc),
                                     s.emit("gt", [i, stop], loc)], loc)
        return test if go_on is None else s.emit("bitand", [go_on, test], loc)

    def start_body(s: Scope) -> None:
        i = s.value_of(counter, loc)
        increment = s.const(step, loc) if step else bounds[2]
        # Past stop, a step of +-1 never overflows; a larger one may, so it saturates.
        add = "add" if step in (1, -1) else "add_sat"
        s.assign(counter, s.emit(add, [i, increment], loc))
        s.assign(stmt.target.id, i)
    _lower_loop(state, scope, stmt, [(counter, stmt.target.id, start)], cond, start_body,
                parallel=parallel)


def _range_bound(state: Lowering, scope: Scope, arg: ast.expr) -> Value:
    """A bound or step of range(): an int (Python's operator.index: a float is a
    TypeError), named after the variable it reads, if any, for the dumps."""
    name = arg.id if isinstance(arg, ast.Name) else ""
    value = state.lower_expr(scope, arg)
    return scope.add_node("index", [value], [name], state.loc(arg)).outputs[0]


def _check_step(state: Lowering, scope: Scope, step: Value, loc) -> Value:
    """Raise ValueError for a zero step; return the bool `step > 0`."""
    zero = scope.const(0, loc)
    scope.emit("raise_if", [scope.emit("eq", [step, zero], loc)], loc,
               {"exc": "ValueError", "message": "range() arg 3 must not be zero"})
    return scope.emit("gt", [step, zero], loc)


# ---- loops over elements ----------------------------------------------------------------

_WRAPPERS = {builtins.enumerate: "enumerate", builtins.zip: "zip", builtins.reversed: "reversed"}


def _wrapper(state: Lowering, scope: Scope, iterable: ast.expr) -> str | None:
    """"enumerate", "zip" or "reversed" for a call of that builtin with plain arguments
    (enumerate's `start=` too)."""
    if not isinstance(iterable, ast.Call) or any(isinstance(a, ast.Starred) for a in iterable.args):
        return None
    kind = _WRAPPERS.get(static_object(state, scope, iterable.func))
    if iterable.keywords and not (kind == "enumerate" and [k.arg for k in iterable.keywords] == ["start"]):
        return None
    return kind


def _enumerate_start(call: ast.Call) -> ast.expr:
    """The `start` of `enumerate(seq, start)` / `enumerate(seq, start=k)`."""
    return call.args[1] if len(call.args) == 2 else call.keywords[0].value


def _known_size(state: Lowering, scope: Scope, iterable: ast.expr) -> bool:
    """Whether `iterable` is a name the frontend knows to be a tuple of known length (or a
    global, whose value is known: `_tuple_loop` reports one that is no tuple)."""
    if not isinstance(iterable, ast.Name):
        return False
    entry = scope.lookup(iterable.id)
    return entry in scope.sizes if isinstance(entry, Value) else \
        static_object(state, scope, iterable) is not LOCAL


def sequence_loop(state: Lowering, scope: Scope, stmt: ast.For,
                  collect: tuple[str, Value, Rest] | None = None) -> None:
    """`for x in seq`, `enumerate(seq)`, `zip(a, b, ...)`, `reversed(seq)`: a while node
    over a counter that type inference unrolls when the sequences are tuples. `collect`:
    a comprehension's (its hidden name, the value before, what each element adds),
    which inference must unroll."""
    loc = state.loc(stmt)
    kind = _wrapper(state, scope, stmt.iter)
    nodes = stmt.iter.args if kind else [stmt.iter]
    offset = None
    if kind == "enumerate" and len(nodes) + len(stmt.iter.keywords) == 2:
        offset = scope.emit("index", [state.lower_expr(scope, _enumerate_start(stmt.iter))], loc)
        nodes = nodes[:1]
    if kind in ("enumerate", "reversed") and len(nodes) != 1:
        unsupported_stmt(state, scope, stmt, f"{kind}() takes one sequence here",
                         f"write: for ... in {kind}(seq):" if kind == "reversed"
                         else "write: for ... in enumerate(seq) or enumerate(seq, start):")
        return
    sequences = [lower_field(state, scope, n, "iterate") if is_flat(state, scope, n)
                 else state.lower_expr(scope, n) for n in nodes]  # x.flat: ravel(x)
    if not sequences:
        unsupported_stmt(state, scope, stmt, "zip() of nothing is not supported")
        return
    count = scope.emit("len", [sequences[0]], loc)
    for sequence in sequences[1:]:
        count = scope.emit("min", [count, scope.emit("len", [sequence], loc)], loc)
    one = scope.const(1, loc)
    start = scope.emit("sub", [count, one], loc) if kind == "reversed" else scope.const(0, loc)
    counter = f"$item#{next(state.serial)}"

    def cond(s: Scope, go_on: Value | None) -> Value:
        i = s.value_of(counter, loc)
        test = s.emit("ge", [i, s.const(0, loc)], loc) if kind == "reversed" \
            else s.emit("lt", [i, count], loc)
        return test if go_on is None else s.emit("bitand", [go_on, test], loc)

    def start_body(s: Scope) -> None:
        i = s.value_of(counter, loc)
        items = [s.emit("array_get", [seq, i], loc) for seq in sequences]
        s.assign(counter, s.emit("sub" if kind == "reversed" else "add", [i, one], loc))
        position = i if offset is None else s.emit("add", [i, offset], loc)
        element = items[0] if kind in (None, "reversed") else \
            s.emit("tuple", [position, items[0]] if kind == "enumerate" else items, loc)
        if kind in ("enumerate", "zip"):
            s.sizes[element] = 2 if kind == "enumerate" else len(items)
        assign_target(state, s, stmt.target, element)
        if collect is not None:
            collect[2](s)
    distinct = list(dict.fromkeys(sequences))
    hidden = [(counter, "$item", start)]
    if collect is not None:
        hidden.append((collect[0], "$collect", collect[1]))
    _lower_loop(state, scope, stmt, hidden, cond, start_body, distinct, collect is not None)


# ---- unrolled loops ---------------------------------------------------------------------

def _tuple_loop(state: Lowering, scope: Scope, stmt: ast.For) -> None:
    """`for x in t` over a tuple value whose length is known here."""
    reported = len(state.problems)
    items = state.lower_expr(scope, stmt.iter)
    size = scope.sizes.get(items)
    if size is not None:
        loc = state.loc(stmt)
        _unrolled_loop(state, scope, stmt, size,
                       lambda s, k: s.emit("getitem", [items], loc, {"index": k}))
    elif len(state.problems) > reported:  # the iterable itself is what was reported
        skip_stmt(state, scope, stmt)
    else:
        unsupported_stmt(
            state, scope, stmt, f"for loop over '{ast.unparse(stmt.iter)}' is not supported: "
            "only range(...) and tuples of a length known at compile time can be iterated",
            "loop over range(...), e.g. for an array: for i in range(len(x)): ... x[i], "
            "or over a tuple display: for x in (a, b, c):")


def _unrolled_loop(state: Lowering, scope: Scope, stmt: ast.For, count: int, element) -> None:
    """One copy of the body per element; `element(scope, k)` gives the k-th element."""
    frame = state.new_frame()
    flags = [RETURNED, frame.break_flag]

    def iteration(k: int) -> Rest:
        def run(s: Scope) -> None:
            assign_target(state, s, stmt.target, element(s, k))
            state.frames.append(frame)
            lower_block(state, s, stmt.body)
            state.frames.pop()
            s.know(frame.continue_flag, False)
            if s.lookup(RETURNED) is not True and s.lookup(frame.break_flag) is not True:
                s.dead = False  # the paths that continued go on to the next element
        return run
    _run_steps(state, scope, [iteration(k) for k in range(count)], flags, state.loc(stmt))
    if scope.lookup(RETURNED) is not True:
        scope.dead = False  # the paths that broke out go on after the loop
    _finish_loop(state, scope, stmt, frame)


def _run_steps(state: Lowering, scope: Scope, steps: list[Rest], flags: list[str], loc) -> None:
    """Lower `steps` in order, each only where none of `flags` has been set."""
    for k, step in enumerate(steps):
        if scope.dead:
            return
        if any(isinstance(scope.lookup(flag), Value) for flag in flags):
            guard(scope, flags, lambda s, k=k: _run_steps(state, s, steps[k:], flags, loc),
                  loc, exits=False)
            return
        step(scope)


STATEMENTS: dict[type[ast.stmt], StmtRule] = {
    ast.Break: lower_break,
    ast.Continue: lower_continue,
    ast.While: lower_while,
    ast.For: lower_for,
}
