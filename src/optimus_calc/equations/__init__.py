"""Equations as data: each one a sympy expression with a name, unit, source and docstring.

Importing this package imports sympy (0.3-0.5 s). The numeric hot path uses
:mod:`optimus_calc.equations.compiled`, a plain-numpy module generated from these very
expressions by :mod:`optimus_calc.equations.codegen` (a test fails when it is stale).
"""
