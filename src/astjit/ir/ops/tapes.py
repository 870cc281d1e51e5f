"""The tapes a differentiated `while` records, one entry per iteration (lowered by
backend/llvm/tapes.py)."""

from __future__ import annotations

from ..types import I64, NONE, TapeType
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


_def("tape_new", 0, tape_new_rule, lambda element: [], {"*": Routine("tape_new")}, (),
     zero_derivative="a new tape",
     doc="an empty tape of attrs['element'] values (allocates: never merged or moved)")
_def("tape_push", 2, tape_push_rule, _tape_push, {"*": Routine("tape_push")}, (),
     no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="append a value; the result is the same tape, threaded on as a new SSA value")
_def("tape_get", 2, tape_get_rule, lambda tape, i: tape[i], {"*": Routine("tape_get")}, ("pure",),
     no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="the value pushed at position i (0 = first)")
_def("tape_len", 1, tape_len_rule, len, {"*": Routine("tape_len")}, (),
     no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="how many values were pushed (not pure: the tape grows in place, so a read must "
         "stay where the program puts it)")
_def("tape_clear", 1, tape_clear_rule, _tape_clear, {"*": Routine("tape_clear")}, (),
     zero_derivative="the same tape",
     doc="forget the values pushed, keeping the memory; the result is the same tape")
_def("tape_free", 1, tape_free_rule, _tape_free, {"*": Routine("tape_free")}, (),
     zero_derivative="no result",
     doc="release the tape's memory; it is not used afterwards")
