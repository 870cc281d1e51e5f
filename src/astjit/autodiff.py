"""Public differentiation API: grad, value_and_grad, jvp, vjp, jacfwd, jacrev, jacobian,
hessian, stop_gradient, check_grad; and vmap, the other transform of functions.

`grad(f)` returns a *derived function*: a small object that names its base
function and what to derive. Compiling it (on its first call, or when jitted
code calls it) gives an untyped graph with one `call` of the base marked
`derive`; type inference then differentiates the typed, optimized base graph
IR → IR (`ir.ad.derive`) and the result compiles like any other graph. So
`jit(grad(f))`, `grad(jit(f))` and `grad(f)` called inside jitted code are all
the same compiled thing, and `grad(grad(f))` differentiates a gradient graph.

Derived functions are cached per (function, argnums): creating `grad(f)` again
in a loop costs nothing.
"""
from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import Loc


@dataclass(frozen=True)
class DerivedSpec:
    """What the frontend needs to build a derived function's graph."""

    base: Any
    """The function differentiated: a Python function or another derived function."""
    params: tuple[str, ...]
    derive: tuple
    """(kind, argnums, single) for "grad", "value_and_grad", "jacfwd" and "jacrev" (then
    True for grad and value_and_grad with `holomorphic=True`);
    ("jvp", n_primals) or ("vjp", n_primals); ("vmap", in_axes, out_axes): read by
    ir.ad.derive."""
    loc: Loc | None = None


class Derived(functools.partial):
    """A function derived from another by a transform; callable, jittable, differentiable.

    It is a `functools.partial` that re-targets itself on its first call to the
    compiled entry (or, with ASTJIT_DISABLE_JIT=1, to the interpreter), so later
    calls go straight there: no Python frame of astjit's on the call path.
    """

    def __new__(cls, base: Any, name: str, params: tuple[str, ...], derive: tuple):
        self = super().__new__(cls, _unstarted)
        self.base = base
        self.__name__ = self.__qualname__ = name
        self.__doc__ = f"{name}: derived by astjit from {getattr(base, '__name__', base)!r}"
        defaults = _defaults_of(base)
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                               default=defaults.get(p, inspect.Parameter.empty)) for p in params])
        self.__astjit_derived__ = DerivedSpec(base, params, derive, _loc_of(base))
        self._entry = None
        self.__setstate__((self._start, (), None, self.__dict__))
        from .pickling import watch_engines

        watch_engines()  # Dask's tokenize has a rule of its own for partials
        return self

    def __repr__(self) -> str:
        return f"<astjit derived function {self.__name__}>"

    def __copy__(self) -> Derived:
        return self  # copied, a function is itself

    def __deepcopy__(self, memo: dict) -> Derived:
        return self

    def __reduce__(self) -> tuple:
        """Pickled as its base function and what to derive, never its compiled code: the
        unpickled one is `grad(base)` & co. there, compiled on its first call."""
        from .pickling import portable

        return _rebuild_derived, (portable(self.base), self.__astjit_derived__.derive)

    @property
    def entry(self):
        """The compiled entry (built on first use), as `jit(self)` returns it."""
        if self._entry is None:
            from .api import Dispatcher

            self._entry = Dispatcher(self, {}).entry
        return self._entry

    def _start(self, *args: Any, **kwargs: Any) -> Any:
        """The first call: choose compiled code or the interpreter, and call it from now on."""
        if os.environ.get("ASTJIT_DISABLE_JIT", "") not in ("", "0"):
            from .api import interpret_call

            return interpret_call(self, args, kwargs)  # asks again on the next call
        self.__setstate__((self.entry, (), None, self.__dict__))
        return self.entry(*args, **kwargs)

    def ir(self, *example_args: Any, stage: str = "optimized", format: str = "text") -> str:
        """The IR of this derived function for these example arguments (see `jit(...).ir`)."""
        return self.entry.ir(*example_args, stage=stage, format=format)


def _rebuild_derived(base: Any, derive: tuple) -> Derived:
    """A derived function unpickled: the cached one of `base` and `derive` (DerivedSpec)."""
    from .pickling import unportable

    base, kind = unportable(base), derive[0]
    if kind in ("jvp", "vjp"):
        return _derive(base, kind, 0)
    if kind == "vmap":
        return _vmapped(base, derive[1], derive[2])
    wrt, single = derive[1], derive[2]
    return _derive(base, kind, wrt[0] if single else wrt, *derive[3:])


def _unstarted(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a derived function was called before it was set up")


def _loc_of(fn: Any) -> Loc | None:
    code = getattr(fn, "__code__", None)
    return Loc(code.co_filename, code.co_firstlineno) if code is not None else None


def _defaults_of(fn: Any) -> dict[str, Any]:
    """The default values of `fn`'s parameters (a method's `scale=1.0`), which a derived
    function keeps; the defaults of parameters a later one has none for are dropped."""
    try:
        params = list(inspect.signature(_unwrap(fn)).parameters.values())
    except (TypeError, ValueError):
        return {}
    found: dict[str, Any] = {}
    for p in reversed(params):
        if p.default is inspect.Parameter.empty:
            break
        found[p.name] = p.default
    return found


def _params_of(fn: Any) -> tuple[str, ...]:
    return tuple(inspect.signature(fn).parameters)


def _unwrap(fn: Any) -> Any:
    return getattr(fn, "py_func", fn)



def _argnum_tuple(argnums: int | tuple[int, ...], n_params: int, name: str) -> tuple[int, ...]:
    wanted = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not wanted:
        raise ValueError(f"argnums of grad({name}) is empty")
    for i in wanted:
        if not isinstance(i, int) or not -n_params <= i < n_params:
            raise ValueError(f"argnums {argnums!r} out of range for {name}() "
                             f"with {n_params} parameters")
    return tuple(i % n_params for i in wanted)


@functools.cache
def _derive(fn: Any, kind: str, argnums: int | tuple[int, ...], holomorphic: bool = False
            ) -> Derived:
    params = _params_of(fn)
    name = getattr(fn, "__name__", "f")
    if kind == "jvp":
        tangents = tuple(f"d{p}" for p in params)
        return Derived(fn, f"jvp({name})", params + tangents, ("jvp", len(params)))
    if kind == "vjp":
        return Derived(fn, f"vjp({name})", params + ("cotangent",), ("vjp", len(params)))
    wrt = _argnum_tuple(argnums, len(params), name)
    single = isinstance(argnums, int)
    spec = (kind, wrt, single, True) if holomorphic else (kind, wrt, single)
    return Derived(fn, f"{kind}({name})", params, spec)


_GRADS: dict = {}
"""(function, argnums) -> grad(function, argnums): the fast path of `grad(f)(x)` in a loop."""


def grad(fn: Callable, argnums: int | tuple[int, ...] = 0, holomorphic: bool = False
         ) -> Derived:
    """The gradient of scalar-valued `fn` with respect to its arguments `argnums`.

    An int `argnums` gives a float; a tuple gives a tuple of floats. The
    arguments differentiated must be floats or complex numbers: a gradient with respect
    to an int or a bool is a TypeError naming the parameter. Of a complex argument z =
    x + iy, JAX's df/dx - i df/dy; `holomorphic=True`: `fn` returns a complex, its
    arguments are complex, and the result is f'(z) (docs/arrays.md: gradients).
    """
    if holomorphic:
        return _derive(_unwrap(fn), "grad", argnums, True)
    try:
        return _GRADS[fn, argnums]
    except KeyError:
        derived = _GRADS[fn, argnums] = _derive(_unwrap(fn), "grad", argnums)
        return derived


def value_and_grad(fn: Callable, argnums: int | tuple[int, ...] = 0, holomorphic: bool = False
                   ) -> Derived:
    """Like `grad`, but returns `(fn(*args), gradient)` from one compiled pass."""
    return _derive(_unwrap(fn), "value_and_grad", argnums, bool(holomorphic))


def jvp(fn: Callable, primals: tuple, tangents: tuple) -> tuple:
    """Forward mode: `(fn(*primals), directional derivative along tangents)`."""
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    return _derive(_unwrap(fn), "jvp", 0)(*primals, *tangents)


def vjp(fn: Callable, *primals: Any) -> tuple[Any, Callable]:
    """Reverse mode: `(fn(*primals), pullback)`, where `pullback(cotangent)` gives one
    cotangent per primal (a tuple, also of one): the vector-Jacobian product. The result
    may be a float, an array or a container of them; `cotangent` has its structure."""
    fn = _unwrap(fn)
    from .api import jit

    out = jit(fn)(*primals)
    return out, functools.partial(_derive(fn, "vjp", 0), *primals)


def jacfwd(fn: Callable, argnums: int | tuple[int, ...] = 0, holomorphic: bool = False
           ) -> Derived:
    """The Jacobian of `fn` (a float or complex result, or an array of them) with respect to
    its float arguments `argnums`, by forward mode: one pass per element of the argument.
    Its shape is the result's followed by the argument's; a tuple `argnums` gives a tuple of
    Jacobians. `holomorphic=True`: complex arguments and result, the Jacobian df/dz (JAX's
    rules: docs/arrays.md, gradients)."""
    return _derive(_unwrap(fn), "jacfwd", argnums, bool(holomorphic))


def jacrev(fn: Callable, argnums: int | tuple[int, ...] = 0, holomorphic: bool = False
           ) -> Derived:
    """Like `jacfwd`, by reverse mode: one pass per element of the result, which must be
    float (of complex arguments: df/dx - i df/dy per element, as `grad`) unless
    `holomorphic=True`."""
    return _derive(_unwrap(fn), "jacrev", argnums, bool(holomorphic))


jacobian = jacrev
"""JAX's name: the Jacobian by reverse mode."""


def hessian(fn: Callable, argnums: int | tuple[int, ...] = 0, holomorphic: bool = False
            ) -> Derived:
    """The Hessian of scalar-valued `fn`: `jacfwd(jacrev(fn))` (forward over reverse), of
    shape `x.shape + x.shape` for an argument `x`; of complex arguments `holomorphic=True`
    (JAX's: jacfwd takes float arguments only, unless holomorphic)."""
    return jacfwd(jacrev(fn, argnums, holomorphic), argnums, holomorphic)


def vmap(fn: Callable, in_axes: int | None | tuple = 0, out_axes: int = 0) -> Derived:
    """`fn` applied to each example of a batch: argument i is batched along its axis
    `in_axes[i]` (None: the same for every example; an int: that axis of every
    argument), and each result leaf gets the batch axis at `out_axes`. The function's
    graph is rewritten to compute every example at once, each op by its batching rule
    (ir/ad/vectorize.py); one without a rule keeps a compiled loop over the examples
    (ir/ad/batching.py). Either way it composes with jit, grad and vmap."""
    fn = _unwrap(fn)
    params = _params_of(fn)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(params)
    if len(axes) != len(params):
        raise ValueError(f"vmap: in_axes {in_axes!r} has {len(axes)} entries for "
                         f"{fn.__name__}() of {len(params)} parameters")
    if not all(a is None or isinstance(a, int) for a in axes) or not isinstance(out_axes, int):
        raise ValueError(f"vmap: in_axes {in_axes!r} and out_axes {out_axes!r} must be ints "
                         "or None (in_axes)")
    return _vmapped(fn, axes, out_axes)


@functools.cache
def _vmapped(fn: Any, in_axes: tuple, out_axes: int) -> Derived:
    name = getattr(fn, "__name__", "f")
    return Derived(fn, f"vmap({name})", _params_of(fn), ("vmap", in_axes, out_axes))


def stop_gradient(x: Any) -> Any:
    """The identity; inside a differentiated function its derivative is zero."""
    return x


stop_gradient.__astjit_op__ = "stop_gradient"
for _transform in (grad, value_and_grad, jacfwd, jacrev, hessian, vmap):
    _transform.__astjit_transform__ = True
jvp.__astjit_jvp__ = functools.partial(_derive, kind="jvp", argnums=0)


class custom_vjp:  # noqa: N801 - used as a decorator, like functools.wraps
    """Give a function a hand-written reverse-mode rule, honoured in compiled gradients.

        @custom_vjp
        def clip(x):
            return x

        @clip.defvjp
        def clip_vjp(x, out, g):          # the arguments, the result, its adjoint
            return (max(-1.0, min(1.0, g)),)   # one adjoint per argument

    Called normally (or from compiled code) the function runs as written;
    inside `grad` its arguments' adjoints come from the rule. Forward mode
    (`jvp`) differentiates the function's own body.
    """

    def __init__(self, fn: Callable):
        self.fn = _unwrap(fn)
        self.rule: Callable | None = None
        functools.update_wrapper(self, self.fn)
        self.__signature__ = inspect.signature(self.fn)

    def defvjp(self, rule: Callable) -> Callable:
        """Attach `rule(*args, out, g) -> adjoints`; returns it, so it works as a decorator."""
        self.rule = _unwrap(rule)
        return rule

    @property
    def __astjit_custom_vjp__(self) -> tuple[Callable, Callable]:
        if self.rule is None:
            raise TypeError(f"custom_vjp function {self.fn.__name__}() has no rule: "
                            f"attach one with @{self.fn.__name__}.defvjp")
        return self.fn, self.rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@dataclass(frozen=True)
class GradCheck:
    """`check_grad`'s report: per argument, the compiled gradient, the finite difference,
    and their relative error."""

    gradient: tuple[float, ...]
    finite_difference: tuple[float, ...]
    relative_error: tuple[float, ...]

    @property
    def worst(self) -> float:
        return max(self.relative_error, default=0.0)


def check_grad(fn: Callable, *args: float, step: float = 1e-6) -> GradCheck:
    """Compare the compiled gradient of `fn` at `args` with central finite differences.

    Every float argument is checked; the report gives the relative error of each
    (|g - fd| / max(1, |fd|)), `worst` the largest.
    """
    base = _unwrap(fn)
    argnums = tuple(i for i, a in enumerate(args) if isinstance(a, float))
    gradient = grad(base, argnums)(*args)
    estimates = []
    for i in argnums:
        h = step * max(1.0, abs(args[i]))
        up, down = list(args), list(args)
        up[i] += h
        down[i] -= h
        estimates.append((base(*up) - base(*down)) / (2 * h))
    errors = tuple(abs(g - f) / max(1.0, abs(f)) if math.isfinite(f) else math.inf
                   for g, f in zip(gradient, estimates))
    return GradCheck(tuple(gradient), tuple(estimates), errors)
