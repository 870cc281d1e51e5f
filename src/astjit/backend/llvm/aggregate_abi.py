"""How an aggregate crosses a call of a function astjit defines: by pointer, to memory the
caller leaves unchanged until the call returns.

An array is an LLVM struct (data, shape, strides, owner: array_layout.py) the emitter holds
as one SSA value. The glue of an array kernel is compiled by the fast instruction selector
(jit/engine.py), which selects no instruction with an aggregate operand or result (a call
passing one, insertvalue, an aggregate load or store) and hands each block holding one to
SelectionDAG, several times slower per instruction; and most of the glue is calls passing
arrays: into the kernel, to the runtime's helpers, to the boxing of its result. So a
function declared here (`declare`: the compiled graphs, codegen.py; the runtime's helpers,
shared.py) takes each aggregate parameter of its signature as a pointer (which it only
reads through), and the builders that emit calls of them (`AggregateCalls`) pass an
aggregate as the memory it was read from where that is known to hold it still (its
*home*: the caller's own argument, a slot only its producer writes), else as a stack slot
it is stored to. Its body sees the aggregate loaded from the pointer
(`arguments`); the folding builder loads it member by member and drops the members
nothing reads (unused.py), so a kernel passing an argument on to a helper loads nothing.

`logical_type(function)` is the signature a caller writes against, aggregates whole.
"""
from __future__ import annotations

from llvmlite import ir

MOST_LEAVES = 32
"""An aggregate of more scalar members than this is passed whole, by value."""

Leaf = tuple[tuple[int, ...], ir.Type]
"""The path of indices to one scalar member of an aggregate, and its type."""

_LEAVES: dict[str, tuple[Leaf, ...] | None] = {}


def leaves(ty: ir.Type) -> tuple[Leaf, ...] | None:
    """The scalar members of the aggregate type `ty` in order, or None where `ty` is not an
    aggregate or has more than `MOST_LEAVES` of them."""
    if not isinstance(ty, (ir.BaseStructType, ir.ArrayType)):
        return None
    key = str(ty)
    if key not in _LEAVES:
        found = list(_members(ty))
        _LEAVES[key] = tuple(found) if len(found) <= MOST_LEAVES else None
    return _LEAVES[key]


def _members(ty: ir.Type):
    if isinstance(ty, ir.BaseStructType):
        elements = ty.elements
    elif isinstance(ty, ir.ArrayType):
        elements = [ty.element] * ty.count
    else:
        yield (), ty
        return
    for k, element in enumerate(elements):
        for path, leaf in _members(element):
            yield (k, *path), leaf


def by_pointer(ty: ir.Type) -> bool:
    """Whether a parameter of type `ty` is passed by pointer."""
    return leaves(ty) is not None


def declare(module: ir.Module, fnty: ir.FunctionType, name: str) -> ir.Function:
    """The function `name` of `module` with signature `fnty` in this convention."""
    function = ir.Function(module, physical_type(fnty), name)
    function.logical_type = fnty
    return function


def physical_type(fnty: ir.FunctionType) -> ir.FunctionType:
    """The type of a function of signature `fnty` in this convention: each aggregate
    parameter a pointer."""
    params = [ty.as_pointer() if by_pointer(ty) else ty for ty in fnty.args]
    return ir.FunctionType(fnty.return_type, params, var_arg=fnty.var_arg)


def logical_type(function: ir.Function) -> ir.FunctionType:
    """The signature `function` was declared with (`declare`), aggregates whole."""
    return getattr(function, "logical_type", function.function_type)


def arguments(builder: ir.IRBuilder, function: ir.Function) -> list[ir.Value]:
    """The values of `function`'s declared parameters at `builder` (in its body, before
    anything reads them): each aggregate loaded from its pointer, which stays its home."""
    values = []
    for arg, ty in zip(function.args, logical_type(function).args):
        if hasattr(function, "logical_type") and by_pointer(ty):
            value = builder.load(arg)
            builder.homes[id(value)] = arg
            values.append(value)
        else:
            values.append(arg)
    return values


class AggregateCalls(ir.IRBuilder):
    """A builder whose calls of functions declared here pass aggregates by pointer.

    `homes`: id of an aggregate value -> memory holding it for as long as the value is
    used, which a call may read it from; set by the code that knows (`arguments`, an
    unboxed argument's slot: runtime/wrapper.py)."""

    def __init__(self, block: ir.Block | None = None) -> None:
        super().__init__(block)
        self.homes: dict[int, ir.Value] = {}

    def call(self, fn, args, name="", cconv=None, tail=False, fastmath=(), attrs=(),
             arg_attrs=None):
        if hasattr(fn, "logical_type"):
            args = [self.pointer_to(value) if by_pointer(ty) else value
                    for value, ty in zip(args, fn.logical_type.args)]
        return super().call(fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)

    def pointer_to(self, value: ir.Value) -> ir.Value:
        """Memory holding the aggregate `value` while a call reads it: its home, else a new
        stack slot `value` is stored to here."""
        home = self.homes.get(id(value))
        if home is not None:
            return home
        with self.goto_block(self.function.entry_basic_block):
            slot = self.alloca(value.type)
        self.store(value, slot)
        return slot
