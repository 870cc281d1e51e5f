"""The tapes a differentiated `while` records, one entry per iteration (lowered by
backend/llvm/tapes.py)."""

from __future__ import annotations

import functools

from ..types import I64, NONE, TapeType, TupleType
from .batching import NotBatchable, broadcast
from .declare import _def
from .table import OpTypeError, Routine


def tape_new_rule(types, attrs):
    return [], TapeType(attrs["element"])


def tape_push_rule(types, attrs):
    tape, value = types
    if not isinstance(tape, TapeType) or tape.element != value:
        raise OpTypeError(f"cannot push {value} onto {tape}")
    return [tape, value], tape


def tape_get_rule(types, attrs):
    tape, index = types
    if not isinstance(tape, TapeType) or index != I64:
        raise OpTypeError(f"cannot index {tape} with {index}")
    return [tape, I64], tape.element


def tape_len_rule(types, attrs):
    if not isinstance(types[0], TapeType):
        raise OpTypeError(f"cannot take the length of {types[0]}")
    return [types[0]], I64


def tape_free_rule(types, attrs):
    if not isinstance(types[0], TapeType):
        raise OpTypeError(f"cannot free {types[0]}")
    return [types[0]], NONE


def tape_clear_rule(types, attrs):
    if not isinstance(types[0], TapeType):
        raise OpTypeError(f"cannot clear {types[0]}")
    return [types[0]], types[0]


def _tape_clear(tape):
    tape.clear()
    return tape


def _tape_push(tape, value):
    tape.append(value)
    return tape


def _tape_free(tape):
    if tape is not None:  # an `undef` tape: nothing was recorded
        tape.clear()


# ---- batching rules (ops/batching.py): a tape of batches records every example's value in
# one entry per iteration (the iterations are the same for every example)

def _push_batch(b, node, ins, batched):
    """Onto the tape of batches, each part of the value as the tape records it: a batch, or
    (an int, a bool) the same for every example (a per-example one: NotBatchable)."""
    tape = ins[0] if batched[0] else b.recording(node.inputs[0])
    example, value, flag = node.inputs[1].type, ins[1], batched[1]
    if isinstance(example, TupleType):
        flags = flag if isinstance(flag, tuple) else (flag,) * len(example.elements)
        parts = [b.op("getitem", value, index=k) for k in range(len(flags))]
        value = b.op("tuple", *map(functools.partial(_recorded, b), parts, flags,
                                    example.elements, tape.type.element.elements))
    else:
        value = _recorded(b, value, flag, example, tape.type.element)
    return [(b.op("tape_push", tape, value), True)]


def _recorded(b, v, batched, example, recorded):
    """`v` (batched or not) as a tape recording `recorded` values for `example` ones has it."""
    if recorded == example:  # an int or a bool: the same for every example
        if batched:
            raise NotBatchable("a tape recording an int or bool that differs per example")
        return v
    if isinstance(batched, tuple):
        raise NotBatchable(f"a tape recording a container of {example} with batched parts")
    return v if batched else broadcast(b, v)


def _get_batch(b, node, ins, batched):
    """The entry, each part batched where the tape records batches."""
    if batched[1]:
        raise NotBatchable("a tape read at a position that differs per example")
    out = b.op("tape_get", *ins)
    example = node.outputs[0].type
    if isinstance(example, TupleType):
        return [(out, tuple(e != r for e, r in zip(example.elements, out.type.elements)))]
    return [(out, example != out.type)]


def _same_batch(batched_result: bool):
    """The rule of an op of the tape alone: the same op on the tape of batches."""
    return lambda b, node, ins, batched: [(b.op(node.op, *ins), batched_result)]


_def("tape_new", 0, tape_new_rule, lambda element: [], {"*": Routine("tape_new")}, (),
     zero_derivative="a new tape",
     doc="an empty tape of attrs['element'] values (allocates: never merged or moved)")
_def("tape_push", 2, tape_push_rule, _tape_push, {"*": Routine("tape_push")}, (),
     batch=_push_batch, no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="append a value; the result is the same tape, threaded on as a new SSA value")
_def("tape_get", 2, tape_get_rule, lambda tape, i: tape[i], {"*": Routine("tape_get")}, ("pure",),
     batch=_get_batch, no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="the value pushed at position i (0 = first)")
_def("tape_len", 1, tape_len_rule, len, {"*": Routine("tape_len")}, (),
     batch=_same_batch(False), no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="how many values were pushed (not pure: the tape grows in place, so a read must "
         "stay where the program puts it)")
_def("tape_clear", 1, tape_clear_rule, _tape_clear, {"*": Routine("tape_clear")}, (),
     batch=_same_batch(True), zero_derivative="the same tape",
     doc="forget the values pushed, keeping the memory; the result is the same tape")
_def("tape_free", 1, tape_free_rule, _tape_free, {"*": Routine("tape_free")}, (),
     batch=_same_batch(False), zero_derivative="no result",
     doc="release the tape's memory; it is not used afterwards")
