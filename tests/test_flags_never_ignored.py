"""A flag is never silently ignored (docs/guide/errors.md): each of these exited 0 with output
that did not depend on the flag (a cold review). Each test failed before the fix."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("argv, says", [
    (("plan", "llama70b", "--nodes", 2, "--export", "megatron", "--format", "json"),
     "--export writes megatron's launch file, not a report: leave --format json out"),
    (("plan", "llama70b", "--nodes", 2, "--csv-sep", ";"), "--csv-sep applies to --format csv"),
    (("step", "llama70b", "--nodes", 2, "--tp", 8, "--pp", 2, "--csv-sep", ";",
      "--csv-decimal", ","), "--csv-sep and --csv-decimal apply to --format csv"),
    (("compare", "llama70b", "--nodes", 2, "--smartnic", "bluefield-3"),
     "--smartnic bluefield-3: compare evaluates every SmartNIC in the catalog in turn"),
    (("compare", "llama70b", "--nodes", 2, "--gpu-fraction", 0.5),
     "--gpu-fraction applies to the superchip row (SuperOffload); dgx-a100 has no superchip"),
    (("nics", "llama70b", "--nodes", 2, "--gpu-fraction", 0.5),
     "--gpu-fraction applies to --offload superchip"),
    (("step", "llama70b", "--nodes", 2, "--tp", 8, "--pp", 2, "--assume", "gemm_efficiency=0.5",
      "--assume", "gemm_efficiency=0.6"), "--assume gemm_efficiency given twice (0.5 and 0.6)"),
])
def test_a_flag_that_would_do_nothing_is_an_error(run, argv, says):
    r = run(*argv)
    assert r.code == 2 and r.out == "", r.out[:200]
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {says}"), r.err


def test_the_same_flags_where_they_apply_still_work(run):
    assert run("plan", "llama70b", "--nodes", 2, "--format", "csv", "--csv-sep", ";").code == 0
    assert run("compare", "llama70b", "--node", "gh200", "--nodes", 2, "--gpu-fraction",
               0.5).code == 0
    # the same value twice changes nothing: accepted
    assert run("step", "llama70b", "--nodes", 2, "--tp", 8, "--pp", 2, "--assume",
               "gemm_efficiency=0.5", "--assume", "gemm_efficiency=0.5").code == 0
    assert run("plan", "llama70b", "--nodes", 2, "--export", "megatron").code == 0


def test_an_assumption_given_by_its_flag_and_by_assume_is_one_value(run):
    # `step llama-3-8b --assume gpu_headroom=0.1 --headroom 0.2` ran at 0.2 with no word (a
    # cold review); the same value both ways is accepted, as a repeated --assume is
    r = run("step", "llama-3-8b", "--assume", "gpu_headroom=0.1", "--headroom", 0.2)
    assert r.code == 2 and r.err.strip() == ("error: --headroom and --assume gpu_headroom both "
                                             "set it: give one")
    r = run("step", "mixtral-8x7b", "--node", "dgx-h100", "--nodes", 2, "--ep", 8, "--assume",
            "moe_imbalance=1.5", "--moe-imbalance", 1.2)
    assert r.code == 2 and "--moe-imbalance and --assume moe_imbalance" in r.err
    assert run("step", "llama-3-8b", "--assume", "gpu_headroom=0.2", "--headroom",
               0.2).code == 0
