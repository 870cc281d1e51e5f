"""The CPython/NumPy runtime ABI of compiled code: the C APIs it calls (`pyapi`, `numpy_api`,
`blas`), its recursion guard (`stack`), the METH_FASTCALL wrapper (`wrapper`) and the
whole path from a typed Module to a callable (`entry`)."""
