"""Compiling LLVM IR in this process: the MCJIT engine and its pipelines, the shared runtime
module (`engine`), and splitting loop-free array code into two modules (`split`)."""
