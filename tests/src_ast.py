"""The syntax tree of a source text, parsed once per test process for the tests that read
every module under src/ (test_sizes.py's function lengths, test_layering.py's imports): a
parse of the package costs ~0.4 s of CPU, and the two modules share it (make test keeps them
on one worker: their ``xdist_group``)."""

import ast
from functools import lru_cache


@lru_cache(maxsize=None)
def parse(text: str) -> ast.Module:
    """``ast.parse(text)``; the tree is shared, so a caller must not change it."""
    return ast.parse(text)
