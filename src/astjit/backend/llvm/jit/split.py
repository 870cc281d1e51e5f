"""Array modules in two parts: the loop nests, compiled with LLVM's loop vectorizer, and
the glue around them, compiled lightly (`engine.Engine.compile_ir`).

An array program's module is mostly glue: argument checks, the calls of the
runtime that allocate and free, BLAS calls, boxing. It runs once per call.
Its loop nests run once per element. LLVM's pipelines and its full code
generator cost the same per instruction for both, and on one module they
also work on the glue with the loops inlined into it. Compiled apart, the
loops get the `loops` pipeline (O1 and the loop vectorizer) and the glue no
optimization and the fast instruction selector and register allocator:
much less compile time, loops as fast (docs/measurements.md).

How: LLVM's loop extractor (`loop-extract`, the CodeExtractor) moves every
top-level loop of the module's functions into a function of its own. Values
from outside become its parameters, values it defines that are used later
come back through pointers, and several exits come back as a returned
selector. Identical loop functions are merged (MergeFunctions).
`loops_module` then cuts the loop functions out of the printed module:
external and named uniquely in the process (the engine registers their
addresses as symbols, as it does for the runtime's), with whatever they
call. The glue is the module itself, the loops in it `available_externally`:
the code generator skips them and its calls resolve to the loops module's.

The glue is never left holding a loop. If the extractor kept one where it
was, `loops_module` answers None and the module compiles whole at O3, as
scalar code does.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

_NAME = r'("[^"]*"|[-\w$.]+)'
"""An LLVM name as printed: quoted, or bare. A quoted name holds no `"` (LLVM escapes it,
and a backslash, as hex: `\22`), so its end is the next one (which the search finds
several times faster than a pattern of escapes)."""
_DEFINE_LINE = re.compile(rf"\ndefine [^@]*@{_NAME}\(")
"""A definition's header after a line break: a pattern led by a literal, which the
search skips to (led by `^`, every position of the text was tried)."""
_REFERENCE = re.compile(rf"@{_NAME}")
_LINKAGE = re.compile(r"^define ((?:internal|private|available_externally|dso_local) )*")


def has_loop(text: str) -> bool:
    """Whether some function of `text` (a printed module) loops: a cycle in its control
    flow. An array module without one (a product, a call of the runtime) has nothing for
    the extractor, whose passes and second printing of the module `Engine.emit_parts`
    then skips. A loop mark (`llvm.loop` metadata, which astjit's lowerings put on the
    branch closing each of their loops: `marked_loops_only`) answers at once; only a
    module without one is searched for a cycle (a loop the user wrote)."""
    if "!llvm.loop " in text:
        return True
    text = "\n" + text
    return any(_has_cycle(text[match.end():text.find("\n}", match.end())])
               for match in _DEFINE_LINE.finditer(text))


def loops_module(text: str, names: list[str]) -> str | None:
    """The loops module: the functions `names` of `text` (a module printed by LLVM after
    `loop-extract`), external, with the functions they call; None when some other
    function still has a loop. The module's external variables are the glue's: those the
    loops use are borrowed (`available_externally`), the others (an entry's table) left out."""
    chunks = _chunks(text)
    bodies = {name: chunk for name, chunk in chunks if name is not None}
    listed = set(names)
    if any(_has_cycle(chunk) for name, chunk in bodies.items() if name not in listed):
        return None
    loops = listed
    needed = _closure(bodies, loops)
    used = {_unquote(match.group(1)) for name in needed | loops
            for match in _REFERENCE.finditer(bodies[name])}
    parts = []
    for name, chunk in chunks:
        if name is None:
            variable = _EXTERNAL_VARIABLE.match(chunk)
            if variable is None:
                parts.append(chunk)
            elif _unquote(variable.group(1)[1:]) in used:
                parts.append(_EXTERNAL_VARIABLE.sub(r"\1 = available_externally ", chunk, 1))
        elif name in needed:
            parts.append(chunk)
        elif name in loops:
            parts.append(_private_outputs(_LINKAGE.sub("define ", chunk, count=1)))
        else:
            parts.append(_declaration(chunk))
    return "".join(parts)


_EXTERNAL_VARIABLE = re.compile(rf"^(@{_NAME}) = (?=constant |global )")
"""A variable of external linkage as LLVM prints it (group 1: its name)."""

_SIZES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "float": 4, "i64": 8, "double": 8, "ptr": 8}


def _private_outputs(chunk: str) -> str:
    """Mark the loop function's outputs (the extractor's `%<value>.out` pointers to slots
    of the caller's: each value the loop computes that the glue uses after it)
    `noalias writable dereferenceable`. Nothing else can reach those slots, so LLVM
    keeps the values in registers and stores them once, at the exit. Without this it
    stored them every iteration, and reloaded any array element the loop had just
    written, since the slots might have been that element, which slowed
    recurrences such as `y[i] = 0.5 * y[i - 1] + sin(x[i])` (docs/measurements.md)."""
    header, body = chunk.split("\n", 1)
    for name, kind in re.findall(r"store (\S+) [^\n]*, ptr (%[-\w$.]+\.out)\b", body):
        size = _SIZES.get(name)
        if size is not None:
            private = f"ptr noalias writable dereferenceable({size}) {kind}"
            for end in ",)":  # (not a regular expression per name: compiling one costs more)
                header = header.replace(f"ptr {kind}{end}", f"{private}{end}")
    return header + "\n" + body


def wrapper_apart(text: str, wrapper: str) -> tuple[str, str]:
    """A scalar module as emitted (`text`) in two: the kernel (everything but the function
    `wrapper`) and the wrapper's (`wrapper`, the internal functions it calls, the others
    it calls declared), to compile by different pipelines and link into one engine.

    The kernel's entry must be external (the wrapper calls it across the two). A
    variable both may use (the error values the kernel leaves and the wrapper reads) must
    be one: the kernel module defines each variable externally, the wrapper's borrows it
    (`available_externally`, which the code generator does not emit, as the glue borrows
    the loops). Internal constants are copied: neither writes them."""
    chunks = _chunks(text)
    bodies = {name: chunk for name, chunk in chunks if name is not None}
    local = {name: chunk for name, chunk in bodies.items() if _INTERNAL.match(chunk)}
    moved = {wrapper}
    copied = _closure({**local, **{name: bodies[name] for name in moved}}, moved) | moved
    called = {_unquote(match.group(1)) for name in copied
              for match in _REFERENCE.finditer(bodies[name])}
    roots = {name for name in bodies if name not in moved and name not in local}
    staying = {name: chunk for name, chunk in bodies.items() if name not in moved}
    kept = _closure(staying, roots) | roots  # the internal functions the kernel still calls
    kernel, glue = [], []
    for name, chunk in chunks:
        if name is None:
            shared = _SHARED_VARIABLE.match(chunk)
            kernel.append(chunk if shared is None else _SHARED_VARIABLE.sub(r"\1 = ", chunk, 1))
            glue.append(chunk if shared is None else
                        _SHARED_VARIABLE.sub(r"\1 = available_externally ", chunk, 1))
            continue
        external = _LINKAGE.sub("define ", chunk, count=1) if name in moved else chunk
        if name in moved or name in kept:
            kernel.append(_declaration(chunk) if name in moved else chunk)
        if name in copied or name in called:
            glue.append(external if name in copied else _declaration(chunk))
    return "".join(kernel), "".join(glue)


_INTERNAL = re.compile(r"^define (?:internal|private) ")
_SHARED_VARIABLE = re.compile(rf"^(@{_NAME}) = (?:(?:internal|private) (?=global )|(?=global )"
                              rf"|(?=constant ))")
"""A variable definition the two parts of `wrapper_apart` share: any but an internal
or private constant (group 1: its name)."""


def external_names(text: str) -> list[str]:
    """The functions and variables a printed module (`text`) defines with external linkage:
    what a link of its object finds by name. Read off the text: asking the parsed module
    cost a call into LLVM for each property of each of its functions and variables, a
    noticeable part of a small kernel's compile."""
    text = "\n" + text  # every line after a line break: patterns led by a literal
    names = [_unescaped(match.group(2)) for match in _DEFINITION.finditer(text)
             if _NOT_EXTERNAL.isdisjoint(match.group(1).split())]
    return names + [_unescaped(match.group(1)[1:]) for match in _VARIABLE.finditer(text)]


_DEFINITION = re.compile(rf"\ndefine ([^@\n]*)@{_NAME}\(")
_VARIABLE = re.compile(rf"\n(@{_NAME}) = (?:constant|global) ")
"""A variable's definition with no linkage written: external (a declaration says `external`)."""
_NOT_EXTERNAL = frozenset({"private", "internal", "available_externally", "linkonce",
                           "linkonce_odr", "weak", "weak_odr", "common", "appending",
                           "extern_weak"})
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})")


def _unescaped(name: str) -> str:
    """A printed name as LLVM holds it: unquoted, each `\\XX` the character it escapes."""
    name = _unquote(name)
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name) if "\\" in name else name


def without_borrowed(text: str) -> str:
    """A printed glue module with the loops it borrows (`available_externally`: compiled
    in the loops module) as the declarations they are to it."""
    return "".join(_declaration(chunk) if name is not None and chunk.startswith(
        "define available_externally") else chunk for name, chunk in _chunks(text))


def definitions(text: str) -> dict[str, str]:
    """Name -> printed definition of each function `text` (a printed module) defines."""
    return {name: chunk for name, chunk in _chunks(text) if name is not None}


def reachable(bodies: dict[str, str], roots: set[str]) -> tuple[set[str], set[str]]:
    """The functions of `bodies` (`definitions`) that `roots` (defined there) are or call,
    directly or not; and the other names those refer to (defined elsewhere)."""
    needed = _closure(bodies, roots) | roots
    outside = {_unquote(match.group(1)) for name in needed
               for match in _REFERENCE.finditer(bodies[name])}
    return needed, outside - set(bodies)


def restricted(text: str, names: set[str]) -> str:
    """The printed module `text` defining only the functions `names`: the others declared."""
    return "".join(chunk if name is None or name in names else _declaration(chunk)
                   for name, chunk in _chunks(text))


def _chunks(text: str) -> list[tuple[str | None, str]]:
    """The module's text as (function name, its definition) and (None, any other line)."""
    chunks: list[tuple[str | None, str]] = []
    text = "\n" + text  # every header after a line break (`_DEFINE_LINE`)
    position = 1
    for define in _DEFINE_LINE.finditer(text):
        start = define.start() + 1
        end = text.find("\n", text.find("\n}", start) + 1) + 1 or len(text)
        chunks += [(None, line) for line in text[position:start].splitlines(keepends=True)]
        chunks.append((_unquote(define.group(1)), text[start:end]))
        position = end
    chunks += [(None, line) for line in text[position:].splitlines(keepends=True)]
    return chunks


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def _declaration(chunk: str) -> str:
    """A definition's header as a declaration (a function the other part defines, or one
    no loop calls, which is then never resolved)."""
    header = chunk.split("\n", 1)[0]
    return _LINKAGE.sub("declare ", header, count=1).rstrip().removesuffix("{").rstrip() + "\n"


def _closure(bodies: dict[str, str], roots: set[str]) -> set[str]:
    """The defined functions that `roots` call, directly or not."""
    seen, stack = set(roots), list(roots)
    while stack:
        for match in _REFERENCE.finditer(bodies[stack.pop()]):
            name = _unquote(match.group(1))
            if name in bodies and name not in seen:
                seen.add(name)
                stack.append(name)
    return seen - roots


def marked_loops_only(text: str) -> bool:
    """Whether every loop of `text` (a printed module, as emitted) carries `llvm.loop`
    metadata on the branch that closes it: the loops astjit's array lowerings make
    (`nests.count_up`, `fused`, `loop_metadata.scalar_loops`) all do; a loop the user
    wrote (a `while`, a `for` over a range, the chunks of its interrupt checks) has none.
    `Engine.emit_parts` compiles a loops module of only the former without loop strength
    reduction (`engine.ARRAY_LOOPS_CODEGEN`)."""
    return all(_marked_latches(chunk) for name, chunk in _chunks(text) if name is not None)


def marks_done(text: str) -> bool:
    """Whether every `llvm.loop` mark of `text` (a printed loops module) says done: holds
    `llvm.loop.vectorize.enable` false (loop_metadata.mark_done: loops astjit widened
    itself, and scalar ones). Where every loop is marked (`marked_loops_only`) and every
    mark says done, LLVM's optimizer would find nothing in the module that the code
    generator does not do, so `Engine.emit_parts` compiles it without (the `direct`
    pipeline)."""
    nodes = dict(_NODE.findall(text))
    return all(any(nodes.get(p, "").startswith(_DONE) for p in _REFERENCES.findall(nodes.get(loop, "")))
               for loop in _LOOP_ID.findall(text))


_NODE = re.compile(r"^(![0-9]+) = (?:distinct )?!\{(.*)\}$", re.M)
_REFERENCES = re.compile(r"![0-9]+")
_LOOP_ID = re.compile(r"!llvm\.loop (![0-9]+)")
_DONE = '!"llvm.loop.vectorize.enable", i1 false'


_LABEL = re.compile(rf"{_NAME}:")
_TARGET = re.compile(rf"label %{_NAME}")


def _marked_latches(chunk: str) -> bool:
    """Whether each branch of a printed function that closes a cycle carries `llvm.loop`
    metadata."""
    order, successors, marked = _graph(chunk)
    return all(latch in marked for latch in _latches(order, successors))


def _has_cycle(chunk: str) -> bool:
    """Whether a printed function's control flow graph has a cycle."""
    order, successors, _ = _graph(chunk)
    return next(_latches(order, successors), None) is not None


def _graph(chunk: str) -> tuple[list[str], dict[str, list[str]], set[str]]:
    """A printed function's blocks in order, each block's branch targets, and the blocks
    whose branch carries `llvm.loop` metadata. Read line by line: labels start a line,
    instructions are indented (a `switch`'s cases too), branches hold `label %`."""
    successors: dict[str, list[str]] = {}
    marked: set[str] = set()
    block = "<entry>"
    order = [block]
    for line in chunk.split("\n")[1:]:  # the first: the definition's header
        if line[:1] not in (" ", "", "}"):
            label = _LABEL.match(line)
            if label is not None:
                block = _unquote(label.group(1))
                order.append(block)
        elif "label %" in line:
            successors.setdefault(block, []).extend(
                _unquote(target) for target in _TARGET.findall(line))
            if "!llvm.loop " in line:
                marked.add(block)
    return order, successors, marked


def _latches(order: list[str], successors: dict[str, list[str]]) -> Iterator[str]:
    """The blocks whose branch closes a cycle (jumps to a block on the depth-first
    search's stack), as the search meets them."""
    state: dict[str, int] = {}  # 1 on the DFS stack, 2 done
    for root in order:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(successors.get(root, ())))]
        while stack:
            node, rest = stack[-1]
            for successor in rest:
                if state.get(successor) == 1:
                    yield node
                if successor not in state:
                    state[successor] = 1
                    stack.append((successor, iter(successors.get(successor, ()))))
                    break
            else:
                state[node] = 2
                stack.pop()
