"""Building typed IR graphs by hand, for the backend tests (what inference would produce),
and compiling them (`compile_module`: the fast entry, with a handler that raises)."""
from astjit.backend.llvm import build_entry
from astjit.ir.core import Graph, Module, Value
from astjit.ir.ops import EXCEPTIONS
from astjit.ir.types import BOOL, I64


def op(graph, name, inputs, t, **attrs):
    return graph.add(name, inputs, attrs=attrs, types=[t]).outputs[0]


def const(graph, value, t):
    return op(graph, "const", [], t, value=value, type=t)


def graph_of(name, *param_types):
    g = Graph(name)
    g.params = [Value(f"p{i}", t) for i, t in enumerate(param_types)]
    return g


def module_of(*graphs):
    return Module({g.name: g for g in graphs}, graphs[0].name)


def counted_loop(g, n, invariants, carried, body_fn):
    """`for i in range(n)` as a while: invariants [n, *invariants], carried [*carried, i];
    `body_fn(region, invariants, carried, i)` returns the new carried values.
    Returns the final carried values (without i)."""
    inv_types = [v.type for v in [n, *invariants]]
    car_types = [v.type for v in carried] + [I64]
    cond = graph_of("cond", *inv_types, *car_types)
    cond.outputs = [op(cond, "lt", [cond.params[-1], cond.params[0]], BOOL)]
    body = graph_of("body", *inv_types, *car_types)
    k = len(inv_types)
    i = body.params[-1]
    new = body_fn(body, body.params[1:k], body.params[k:-1], i)
    body.outputs = [*new, op(body, "add", [i, const(body, 1, I64)], I64)]
    loop = g.add("while", [n, *invariants, *carried, const(g, 0, I64)], len(car_types),
                 attrs={"n_invariants": k}, regions=[cond, body], types=car_types)
    return loop.outputs[:-1]


class Handler:
    """Raises the reported site's exception, as `api.ErrorHandler` does without the location."""

    def __init__(self):
        self.errors, self.calls = [], 0

    def __call__(self, status):
        self.calls += 1
        name, message, _ = self.errors[status - 1]
        raise EXCEPTIONS[name](message)


def no_fallback(*args, **kwargs):
    raise AssertionError(f"unexpected fallback with {args} {kwargs}")


def compile_module(module, fallback=no_fallback, handler=None):
    handler = handler or Handler()
    entry = build_entry(module, fallback, handler)
    handler.errors = entry.errors
    entry.handler = handler
    return entry
