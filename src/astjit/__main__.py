"""Command line: `python -m astjit ir FILE.py:FUNC --args "2.0, 3" --stage typed`.

Prints one stage of the compilation of FUNC for the given example arguments,
the same text `FUNC.ir(...)` returns.
"""
from __future__ import annotations

import argparse
import ast
import runpy
import sys

from .api import STAGES, jit
from .errors import CompileError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m astjit",
                                     description="astjit command line tools")
    commands = parser.add_subparsers(dest="command", required=True)
    ir = commands.add_parser("ir", help="print a compilation stage of a function")
    ir.add_argument("target", help="FILE.py:FUNC")
    ir.add_argument("--args", default="", help='example arguments, e.g. "2.0, 3"')
    ir.add_argument("--stage", default="optimized", choices=STAGES)
    ir.add_argument("--format", default="text", choices=("text", "dot"))
    options = parser.parse_args(argv)

    path, _, name = options.target.rpartition(":")
    if not path or not name:
        parser.error("target must be FILE.py:FUNC")
    namespace = runpy.run_path(path, run_name="__astjit_cli__")
    if name not in namespace:
        parser.error(f"{path} defines no {name!r}")
    try:
        example = ast.literal_eval(f"({options.args},)") if options.args.strip() else ()
    except (ValueError, SyntaxError) as error:
        parser.error(f"--args must be Python literals: {error}")
    function = namespace[name]
    try:
        print(jit(function).ir(*example, stage=options.stage, format=options.format))
    except CompileError as error:
        print(f"astjit: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
