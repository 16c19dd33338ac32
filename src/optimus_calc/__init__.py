"""optimus-calc: what your hardware can do for LLM training, before you buy or book it."""

__version__ = "0.2.0"
