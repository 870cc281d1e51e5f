"""The frontend: Python source to untyped graphs of one Module (`lower_function`)."""
from .module import lower_function

__all__ = ["lower_function"]
