"""optimus-calc: what your hardware can do for LLM training, before you buy or book it."""

# The version, in one place: pyproject.toml reads it from here ([tool.hatch.version]).
__version__ = "0.3.0"
