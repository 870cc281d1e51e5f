"""A differential fuzzer: random well-typed programs compiled by astjit and run by CPython.

`generate` writes a program's module (`expressions`, `statements`: scalars, arrays,
containers, nested if/while/for with break/continue/early return, calls, recursion);
`judge` compares CPython's outcome with the compiled one and gradients with finite
differences; `worker` judges in a child process and `pool` drives it, so a crash is caught;
`shrink` reduces a failure; `campaign` ties them together (`python -m astjit.fuzz`).
docs/fuzzing.md says what is generated and how to reproduce a failure.
"""
