"""`explain` of a step term by default shows the value `step`'s breakdown is made of (rev13c).
Failed on the code before the fix: the CP ring's attention-core time (computed for every layout,
recorded with no scope) was compute.compute_time's last call, so `explain compute.compute_time`
showed 6.294 s against `step`'s 58.17 s compute on the same layout, with "shown: " naming nothing."""

from __future__ import annotations

import pytest

LAYOUT = ("llama-2-7b", "--node", "dgx-a100", "--nodes", "1")


def _explain(run, *extra):
    r = run("explain", "compute.compute_time", *LAYOUT, *extra, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_compute_time_shows_the_backward_pass_step_adds(run):
    step = run("step", *LAYOUT, "--format", "json").json()
    back, fwd = _explain(run), _explain(run, "--for", "forward")
    # backward: 7.49097e15 executed FLOPs / (312e12 A100 bf16 peak x 0.619134 layer efficiency)
    # = 38.779 s; forward 3.74549e15 / (312e12 x 0.619134) = 19.390 s
    assert back["values"]["FLOPs"] == pytest.approx(7.49097e15, rel=1e-5)
    assert back["result"] == pytest.approx(38.779, rel=1e-4)
    assert fwd["result"] == pytest.approx(19.390, rel=1e-4)
    # step's "compute (GEMMs at peak x efficiency)" row is the two passes' sum: 58.169 s
    assert step["compute_s"] == pytest.approx(back["result"] + fwd["result"], rel=1e-9)


def test_attention_core_time_is_named(run):
    # the attention core alone (what a CP ring hides): fwd 2.81475e14 + bwd 5.6295e14 executed
    # FLOPs at FA2's 0.43 on the A100: 8.44425e14 / (312e12 x 0.43) = 6.2942 s
    att = _explain(run, "--for", "attention core")
    assert att["values"]["eta_g"] == pytest.approx(0.43)
    assert att["result"] == pytest.approx(6.2942, rel=1e-4)
    r = run("explain", "compute.compute_time", *LAYOUT)
    assert "evaluated for forward, attention core, backward; shown: backward" in " ".join(
        r.out.split())
