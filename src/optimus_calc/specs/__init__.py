"""Validated, immutable inputs: hardware, models, layouts. Pure data, no I/O."""
