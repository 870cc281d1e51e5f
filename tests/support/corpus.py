"""The one case list every differential test draws from: the scalar corpus plus its corners."""
import corpus_extra
import scalar_functions

CASES = list(corpus_extra.CASES) + list(scalar_functions.CASES)
VALUE_ONLY = set(corpus_extra.VALUE_ONLY) | {scalar_functions.builtins_mix}
CASE_IDS = [(fn, args) for fn, argsets in CASES for args in argsets]
NAMES = [f"{fn.__name__}{args}" for fn, args in CASE_IDS]


def same(expected, got, value_only=False):
    """Equal as CPython values: same type (unless value_only), NaN equal to NaN."""
    import math

    if isinstance(expected, tuple):
        return (isinstance(got, tuple) and len(got) == len(expected)
                and all(same(e, g, value_only) for e, g in zip(expected, got)))
    if not value_only and type(got) is not type(expected):
        return False
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(expected, float) and expected == 0.0 and not value_only:
        return got == 0.0 and math.copysign(1, got) == math.copysign(1, expected)
    return got == expected


def outcome(fn, args):
    """('value', result) or ('raises', exception type name): errors are results too."""
    try:
        return "value", fn(*args)
    except (ArithmeticError, ValueError, IndexError) as error:
        return "raises", type(error).__name__
