"""The generator's common-subexpression pass (equations/codegen._cse): an operation a printed
equation repeats is computed once into a local, and the function gives the printed
expression's numbers bit for bit (the same operations on the same values)."""

import numpy as np

from optimus_calc.equations.codegen import _Printer, _cse
from optimus_calc.equations.registry import load_all


def test_a_repeated_operation_is_computed_once():
    lets, body = _cse("a*(b + c) + d*(b + c)")
    assert lets == ["_c0 = b + c"]
    assert body == "a * _c0 + d * _c0"


def test_locals_come_before_their_use_and_keep_the_grouping():
    # (-2*x + 2*y) + 4 repeats whole, -2*x also alone: the larger first, then the smaller
    # inside it; ((-2*x) + 2*y) + 4 keeps its left-to-right grouping
    lets, body = _cse("u*(-2*x + 2*y + 4) + v*(-2*x + 2*y + 4) + w*(-2*x + 2*z + 4)")
    assert lets == ["_c0 = -2 * x", "_c1 = _c0 + 2 * y + 4"]
    assert body == "u * _c1 + v * _c1 + w * (_c0 + 2 * z + 4)"


def test_a_body_without_repeats_is_left_as_printed():
    assert _cse("a*b + numpy.maximum(0, a - b)") == ([], "a*b + numpy.maximum(0, a - b)")
    assert _cse("2*(-1.0) + 2*(-1.0)") == ([], "2*(-1.0) + 2*(-1.0)")  # constants: folded


def test_every_hoisted_equation_equals_its_printed_expression():
    printer = _Printer({"fully_qualified_modules": True, "inline": True})
    rng = np.random.default_rng(35)
    hoisted = 0
    for name, e in sorted(load_all().items()):
        printed = printer.doprint(e.expr)
        lets, body = _cse(printed)
        if not lets:
            continue
        hoisted += 1
        # layouts x stages; small integers too, so the equations' Z >= 2, r == 2 ... branches
        # are taken as well as not
        args = {s.name: np.where(rng.random((6, 4)) < 0.5, rng.integers(0, 4, (6, 4)),
                                 rng.random((6, 4)) * 10.0 ** rng.integers(-3, 4))
                for s in e.args}
        with np.errstate(all="ignore"):
            ref = eval(printed, {"numpy": np}, dict(args))  # noqa: S307 (our printed text)
            scope = dict(args)
            for let in lets:
                exec(let, {"numpy": np}, scope)  # noqa: S102
            got = eval(body, {"numpy": np}, scope)  # noqa: S307
        np.testing.assert_array_equal(got, ref, err_msg=name)
    assert hoisted >= 10  # dp_exposed_time, tp_comm_time, the ring times, ...
