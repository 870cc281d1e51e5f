"""The GPU backend: optimized graphs -> CUDA C kernels launched from a host program.

Work in progress (issue 12); see docs/gpu.md once it lands.
"""
