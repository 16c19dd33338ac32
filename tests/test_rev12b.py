"""Review of round 12's changes (rev12b): each test pins a defect found by reading them cold."""

import pytest

from optimus_calc.equations import compiled as eq


def test_interleaving_hides_no_less_than_a_typed_pp_overlap():
    # --assume pp_overlap=1 said every steady-state send hides; with --interleave 2 it was
    # ignored (o_pi 0 without a profile): 2 m v = 2 x 8 x 2 = 32 sends of 1 ms exposed. Now the
    # interleaved schedule hides at least o_pp: only the p v - 1 = 7 fill and drain hops,
    # 2 x 7 x 1 ms = 14 ms
    t = eq.step__pp_comm_time(T_p2p=1e-3, m=8, o_pp=1.0, o_pi=0.0, p=4, v=2)
    assert float(t) == pytest.approx(0.014, rel=1e-12)
    # Megatron's profile (o_pi 1) with o_pp 0 unchanged: 14 ms; neither: all 32 sends, 32 ms
    assert float(eq.step__pp_comm_time(T_p2p=1e-3, m=8, o_pp=0.0, o_pi=1.0, p=4, v=2)) == \
        pytest.approx(0.014, rel=1e-12)
    assert float(eq.step__pp_comm_time(T_p2p=1e-3, m=8, o_pp=0.0, o_pi=0.0, p=4, v=2)) == \
        pytest.approx(0.032, rel=1e-12)


def test_step_keeps_a_typed_pp_overlap_when_interleaved(run):
    # the same send (message s x b x h / t, v does not change it) over the same hop: with every
    # steady-state send hidden, 2 (p v - 1) = 14 exposed interleaved against 2 (p - 1) = 6
    args = ("llama2-7b", "--nodes", 2, "--pp", 4, "--tp", 2, "--assume", "pp_overlap=1",
            "--format", "json")
    plain = run("step", *args, "--interleave", 1).json()["pp_comm_s"]
    inter = run("step", *args, "--interleave", 2).json()["pp_comm_s"]
    assert plain > 0
    assert inter / plain == pytest.approx(14 / 6, rel=1e-9)
