"""Public API: jit (being written)."""
def jit(fn=None, **options):
    raise NotImplementedError
