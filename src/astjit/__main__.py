"""Command line tools over one function of a Python file, compiled for example arguments.

    python -m astjit ir FILE.py:FUNC --args "2.0, 3" --stage typed
    python -m astjit explore FILE.py:FUNC --args "np.linspace(0, 1, 5)" --out PAGE.html

`ir` prints one stage of the compilation, the same text `FUNC.ir(...)` returns;
`explore` writes the IR explorer's page (astjit/explore/): the source beside every
stage, drawn as graphs, a source line selecting what it produced. The example arguments
are Python expressions evaluated in FILE's namespace once FILE has run, so they may use
what it imports (`np.ones(3)`).
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Callable

from .api import STAGES, jit
from .errors import CompileError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m astjit",
                                     description="astjit command line tools")
    commands = parser.add_subparsers(dest="command", required=True)
    ir = commands.add_parser("ir", help="print a compilation stage of a function")
    _target_arguments(ir)
    ir.add_argument("--stage", default="optimized", choices=STAGES)
    ir.add_argument("--format", default="text", choices=("text", "dot"))
    explore = commands.add_parser("explore", help="write the IR explorer's HTML page")
    _target_arguments(explore)
    explore.add_argument("--out", help="the page to write (default: FUNC.html)")
    explore.add_argument("--builtin-layout", action="store_true",
                         help="draw graphs with astjit's own layout even where Graphviz is "
                              "installed")
    options = parser.parse_args(argv)

    function, example = _load_target(parser, options.target, options.args)
    try:
        if options.command == "ir":
            print(jit(function).ir(*example, stage=options.stage, format=options.format))
        else:
            from .explore import explore as explore_page

            out = options.out or f"{function.__name__}.html"
            page = explore_page(function, example, graphviz=not options.builtin_layout)
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(page)
            print(f"wrote {out}")
    except CompileError as error:
        print(f"astjit: {error}", file=sys.stderr)
        return 1
    return 0


def _target_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("target", help="FILE.py:FUNC")
    command.add_argument("--args", default="",
                         help='example arguments: Python expressions evaluated in FILE\'s '
                              'namespace, e.g. "2.0, 3" or "np.ones(3)"')


def _load_target(parser: argparse.ArgumentParser, target: str,
                 args: str) -> tuple[Callable, tuple]:
    """The function FUNC of FILE.py (the file run as a script) and the example arguments
    (evaluated in the file's namespace)."""
    path, _, name = target.rpartition(":")
    if not path or not name:
        parser.error("target must be FILE.py:FUNC")
    if not os.path.isfile(path):
        parser.error(f"no file {path!r}")
    namespace = runpy.run_path(path, run_name="__astjit_cli__")
    if name not in namespace:
        parser.error(f"{path} defines no {name!r}")
    try:
        example = eval(f"({args},)", dict(namespace)) if args.strip() else ()  # noqa: S307
    except Exception as error:  # any error of the user's expressions, reported as usage
        parser.error(f"--args {args!r}: {type(error).__name__}: {error}")
    return namespace[name], example


if __name__ == "__main__":
    sys.exit(main())
