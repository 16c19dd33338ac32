"""NCCL's latency model and NVLS (issue 32 item 3), by hand from NCCL's tuning tables."""

import pytest


# NCCL's latency model, by hand from NCCL src/graph/tuning.cc @ 5067397c: baseLatencies L150
# (Ring LL 6.6, LL128 14.0, Simple 8.4 us; Tree 6.8, 14.0, 8.4), hwLatencies NVLINK L159 (Ring
# 0.6, 1.9, 3.4; Tree 0.6, 1.25, 4.0) and NET L171 (Ring 2.7, 4.0, 14.0; Tree 5.0, 8.5, 14.0);
# across nodes intraLat = max(intraLat, net overhead 1 us, x3 for Simple) (L404-408).
NCCL_KW = dict(link_class="nvlink", net_overhead_s=1e-6)


def test_nccl_ring_latency_by_hand():
    from optimus_calc.evaluate import nccl
    # 8 ranks on one node, all-reduce: 2(n-1) = 14 steps, none across nodes.
    # LL 6.6 + 14 x 0.6 = 15.0; LL128 14 + 14 x 1.9 = 40.6; Simple 8.4 + 14 x 3.4 = 56.0 us
    t = [float(x) * 1e6 for x in nccl.ring_times("all-reduce", 8, 1, 0.0, 1e-9, **NCCL_KW)]
    assert t == pytest.approx([15.0, 40.6, 56.0])
    # 16 ranks on 2 nodes: 30 steps, 2(N-1) = 2 across nodes.
    # LL 6.6 + 28 x max(0.6, 1) + 2 x 2.7 = 40.0; LL128 14 + 28 x 1.9 + 2 x 4 = 75.2;
    # Simple 8.4 + 28 x max(3.4, 3) + 2 x 14 = 131.6 us
    t = [float(x) * 1e6 for x in nccl.ring_times("all-reduce", 16, 2, 0.0, 1e-9, **NCCL_KW)]
    assert t == pytest.approx([40.0, 75.2, 131.6])
    # reduce-scatter, 16 ranks, 2 nodes: 15 steps, 1 across: Simple 8.4 + 14 x 3.4 + 14 = 70.0
    t = nccl.ring_times("reduce-scatter", 16, 2, 0.0, 1e-9, **NCCL_KW)
    assert float(t[2]) * 1e6 == pytest.approx(70.0)
    # one rank per node (ppn 1): the Tree row of NET (L386-388): 2 ranks, all-reduce, 2 steps
    # both across nodes: Simple 8.4 + 2 x 14 = 36.4; LL 6.6 + 2 x 5.0 = 16.6
    t = nccl.ring_times("all-reduce", 2, 2, 0.0, 1e-9, **NCCL_KW)
    assert float(t[0]) * 1e6 == pytest.approx(16.6) and float(t[2]) * 1e6 == pytest.approx(36.4)
    # a large buffer runs Simple, a small one LL
    assert nccl.protocol("all-reduce", 16, 2, 1e9, 1 / 360e9, **NCCL_KW) == "Simple"
    assert nccl.protocol("all-reduce", 16, 2, 1e3, 1 / 360e9, **NCCL_KW) == "LL"


def test_nccl_tree_latency_by_hand():
    from optimus_calc.evaluate import nccl
    # 16 ranks on 2 nodes: base + 2((8 - 1) intraLat + log2(2) interLat)
    # LL 6.8 + 2(7 x 0.6 + 5.0) = 25.2 us, the least (LL128 48.5, Simple 92.4)
    t = float(nccl.tree_time(16, 2, 0.0, 1e-9, link_class="nvlink")) * 1e6
    assert t == pytest.approx(25.2)


def test_small_message_is_nccl_latency(run):
    # 1 kB all-reduce on 2 DGX H100 with NCCL's model: the LL latency 40.0 us (above) plus LL's
    # bandwidth term 2 x 15/16 x 1000 B / (0.5 x min(369, 8 x 45 = 360) GB/s) = 10.42 ns
    d = run("comm", "all-reduce", "--size", "1kB", "--node", "dgx-h100", "--nodes", 2,
            "--assume", "nccl_latency_model=1", "--format", "json").json()
    assert d["time_s"] == pytest.approx(40.0e-6 + 2 * 15 / 16 * 1000 / (0.5 * 360e9), rel=1e-9)
    # the switch is the default
    dd = run("comm", "all-reduce", "--size", "1kB", "--node", "dgx-h100", "--nodes", 2,
             "--format", "json").json()
    assert dd["time_s"] == d["time_s"]
    # switched off: the per-step alpha model, 30 x ring alpha (2 x 3 + 14 x 1)/16 us
    d0 = run("comm", "all-reduce", "--size", "1kB", "--node", "dgx-h100", "--nodes", 2,
             "--assume", "nccl_latency_model=0", "--format", "json").json()
    assert d0["time_s"] == pytest.approx(30 * 1.25e-6 + 2 * 15 / 16 * 1000 / 360e9, rel=1e-9)


def test_nccl_model_in_the_step(run):
    # the switch reaches the evaluator's rings: a ZeRO-3 step over 16 nodes pays more latency
    base = ("step", "llama-3-8b", "--node", "dgx-h100", "--nodes", 16, "--zero", 3,
            "--global-batch", 128, "--seq-len", 4096, "--format", "json")
    a = run(*base, "--assume", "nccl_latency_model=0").json()["breakdown"]["dp_comm_s"]
    b = run(*base).json()["breakdown"]["dp_comm_s"]
    assert b > a


def test_nvls_all_reduce_by_hand(run):
    # one DGX H100, NVLink SHARP: NCCL's NVLS latency 25 us (tuning.cc L161, L425) + 1 GB x
    # 2 x 7/8 / 480 GB/s (nccl-tests issue #212: ~480 GB/s busbw on 8 H100) = 3645.83 us;
    # algbw 1e9 / 3670.83 us = 272 GB/s (the issue's "algbw ~275GB/s")
    d = run("comm", "all-reduce", "--size", "1GB", "--node", "dgx-h100", "--algo", "nvls",
            "--format", "json").json()
    assert d["time_s"] == pytest.approx(25e-6 + 1.75e9 / 480e9, rel=1e-9)
    # no NVLS figure for NVLink 3, nor for a group smaller than the node
    for extra in (("--node", "dgx-a100"), ("--node", "dgx-h100", "--ranks", 4)):
        r = run("comm", "all-reduce", "--size", "1GB", "--algo", "nvls", *extra)
        assert r.code == 2 and "--algo nvls" in r.err


def test_nvls_in_the_step_when_nccl_model_wins():
    from optimus_calc.evaluate import nccl
    # 32 MiB all-reduce on 8 H100: ring Simple, pipelined, 8.4 us + max(47.6 us,
    # 1.75 x 2^25 / 369e9 = 159.13 us) = 167.53 us (LL128 40.6 us + 1.75 x 2^25 /
    # (0.92 x 369e9) = 213.57 us); NVLS 25 us + 1.75 x 2^25 / 480e9 = 147.33 us: NVLS wins;
    # 64 kB: ring LL 15 us +
    # 1.75 x 65536 / (0.5 x 369e9) = 15.62 us beats NVLS 25.24 us
    z = 2 ** 25
    ring = float(nccl.ring_time("all-reduce", 8, 1, z, 1 / 369e9, **NCCL_KW))
    nvls = float(nccl.nvls_time(8, z, 480e9))
    assert ring == pytest.approx(8.4e-6 + 1.75 * z / 369e9)
    assert nvls == pytest.approx(25e-6 + 1.75 * z / 480e9) and nvls < ring
    small = float(nccl.ring_time("all-reduce", 8, 1, 65536, 1 / 369e9, **NCCL_KW))
    assert small == pytest.approx(15e-6 + 1.75 * 65536 / (0.5 * 369e9))
    assert small < float(nccl.nvls_time(8, 65536, 480e9))


def test_alpha_override_is_refused_with_the_nccl_model(run):
    r = run("comm", "all-reduce", "--size", "1GB", "--alpha-us", 2, "--assume",
            "nccl_latency_model=1")
    assert r.code == 2 and "--alpha-us" in r.err


def test_simple_ring_overlaps_latency_with_transfer():
    """comm.nccl_pipelined_time: the Simple ring pays the base latency plus the larger of its
    steps' latencies and its bandwidth time (NCCL_STEPS 8 slots, slices of 2 steps: device.h
    L26, collectives.h L19); LL and LL128 keep NCCL's sum."""
    from optimus_calc.evaluate import nccl
    # 8 H100 on one node, all-reduce, 1/beta = 369 GB/s: steps' latency 14 x 3.4 = 47.6 us.
    # 1 GB: 1.75e9 / 369e9 = 4742.55 us > 47.6: 8.4 + 4742.55 us (NCCL's sum: 4798.55 us)
    t = nccl.ring_times("all-reduce", 8, 1, 1e9, 1 / 369e9, **NCCL_KW)
    assert float(t[2]) == pytest.approx(8.4e-6 + 1.75 / 369, rel=1e-12)
    # 4 MB: 1.75 x 4e6 / 369e9 = 18.97 us < 47.6 us: latency-bound, 8.4 + 47.6 = 56.0 us
    t = nccl.ring_times("all-reduce", 8, 1, 4e6, 1 / 369e9, **NCCL_KW)
    assert float(t[2]) == pytest.approx(56.0e-6, rel=1e-12)
    # LL128 at 4 MB keeps the sum: 40.6 us + 1.75 x 4e6 / (0.92 x 369e9) = 61.22 us
    assert float(t[1]) == pytest.approx(40.6e-6 + 1.75 * 4e6 / (0.92 * 369e9), rel=1e-12)
    # never above NCCL's own (additive) estimate, never below either term
    for z in (1e3, 1e6, 1e8, 1e10):
        simple = float(nccl.ring_times("all-reduce", 16, 2, z, 1 / 360e9, **NCCL_KW)[2])
        lat, bw = 131.6e-6, 2 * 15 / 16 * z / 360e9
        assert max(lat, 8.4e-6 + bw) * (1 - 1e-12) <= simple <= (lat + bw) * (1 + 1e-12)


def test_validate_nccl_tests_issue_119_by_hand(cat):
    # 3 nodes x 8 A100, 4 x 200 Gb/s NICs at 0.9: 90 GB/s per node < NVLink 231 GB/s.
    # NCCL's Simple ring, pipelined: steps' latency 42 x max(3.4, 3 x 1) + 4 x 14 = 198.8 us,
    # below 2*23/24 * 133169160 B / 90e9 = 2836.01 us; total 8.4 + 2836.01 = 2844.41 us
    # (published 2666.0 us, +6.7%; NCCL's own additive model would give 3043.2 us, +14.1%)
    from optimus_calc.validate import _comm_cases
    from optimus_calc.specs.assumptions import Assumptions
    t, bw = _comm_cases(cat, Assumptions())
    assert t.predicted == pytest.approx(8.4 + 2 * 23 / 24 * 133169160 / 90e9 * 1e6, rel=1e-9)
    assert t.published == 2666.0 and bw.published == 95.74
    assert bw.predicted == pytest.approx(133169160 / (t.predicted * 1e-6) * 46 / 24 / 1e9)


def test_alpha_us_selects_the_per_step_model(run):
    # NCCL's model is the default; --alpha-us asks for the alpha model: 1 kB on 2 DGX H100,
    # 30 steps x 2 us + 2 x 15/16 x 1000 B / 360e9 B/s
    d = run("comm", "all-reduce", "--size", "1kB", "--node", "dgx-h100", "--nodes", 2,
            "--alpha-us", 2, "--format", "json").json()
    assert d["time_s"] == pytest.approx(30 * 2e-6 + 2 * 15 / 16 * 1000 / 360e9, rel=1e-9)


@pytest.mark.parametrize("value", ["0.5", "0.01", "2"])
def test_the_nccl_model_is_a_switch(run, value):
    # 0 = the catalog's per-step alpha, 1 = NCCL's model: a value between acted as 1 (review)
    r = run("step", "llama-2-7b", "--assume", f"nccl_latency_model={value}")
    assert r.code == 2 and r.err.count("\n") == 1 and "nccl_latency_model" in r.err
