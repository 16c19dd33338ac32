"""Evaluation of one layout (memory, time) through the compiled equations. Pure."""
