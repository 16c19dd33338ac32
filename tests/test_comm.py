"""Collectives by hand: alpha-beta with alpha = 1e-6 s and beta = 1e-9 s/byte unless stated."""

import inspect

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate import comm as C
from optimus_calc.evaluate import squeezenic as SN
from optimus_calc.evaluate.topology import Topology

A, B, Z = 1e-6, 1e-9, 1e9  # 1 us, 1 GB/s, 1 GB


@pytest.mark.parametrize("f,n,expected", [
    # 2(n-1) alpha + 2(n-1)/n beta z, n = 8: 14 us + 1.75 s
    (eq.comm__ring_all_reduce_time, 8, 14e-6 + 1.75),
    # (n-1) alpha + (n-1)/n beta z: 7 us + 0.875 s
    (eq.comm__ring_reduce_scatter_time, 8, 7e-6 + 0.875),
    (eq.comm__ring_all_gather_time, 8, 7e-6 + 0.875),
    # pipelined broadcast / reduce: (n-1) alpha + beta z
    (eq.comm__ring_broadcast_time, 8, 7e-6 + 1.0),
    (eq.comm__ring_reduce_time, 8, 7e-6 + 1.0),
], ids=lambda x: x.__name__ if callable(x) else None)
def test_ring_collectives_by_hand(f, n, expected):
    assert float(f(alpha=A, beta=B, n=n, z=Z)) == pytest.approx(expected)


RING_TIMES = {name: f for name, f in inspect.getmembers(eq, inspect.isfunction)
              if name.startswith("comm__ring_") and name.endswith("_time")}


@pytest.mark.parametrize("f", [*RING_TIMES.values()], ids=[*RING_TIMES])
def test_one_rank_is_free_and_alpha_zero_leaves_bandwidth(f):
    assert float(f(alpha=A, beta=B, n=1, z=Z)) == 0.0
    t0 = float(f(alpha=0, beta=B, n=4, z=Z))
    assert t0 == pytest.approx(float(f(alpha=A, beta=B, n=4, z=Z)) - float(
        f(alpha=A, beta=0, n=4, z=Z)))


def test_all_to_all_by_hand():
    # one node (m = n = 8): (n-1) alpha + (n-1)/n beta_i z = 7 us + 0.875 s, the ring's form;
    # the NIC term (n - m)/n z / B_g vanishes
    one = dict(alpha=A, beta_i=B, B_g=1e9, m=8, n=8, z=Z)
    assert eq.comm__pairwise_cross_share(m=8, n=8) == 0
    assert float(eq.comm__all_to_all_time(x=0, **one)) == pytest.approx(7e-6 + 0.875)
    # 64 ranks on 8 nodes of 8, NIC 50 GB/s per GPU, NVLink 1/beta_i = 400 GB/s:
    # 63 us + 7/64 x 1e9 / 400e9 + 56/64 x 1e9 / 50e9 = 63e-6 + 273.4375e-6 + 17.5e-3 s
    assert eq.comm__pairwise_cross_share(m=8, n=64) == pytest.approx(56 / 64, rel=1e-12)
    t = float(eq.comm__all_to_all_time(alpha=A, beta_i=1 / 400e9, B_g=50e9, m=8, n=64, z=Z,
                                       x=56 / 64))
    assert t == pytest.approx(63e-6 + 273.4375e-6 + 17.5e-3, rel=1e-12)
    assert float(eq.comm__all_to_all_time(alpha=A, beta_i=B, B_g=1e9, m=1, n=1, z=Z,
                                          x=0)) == 0.0


def test_all_to_all_across_nodes_is_nic_bound(run):
    # issue 32: 1 GB on 64 ranks over 8 DGX-H100 needs >= 56/64 x 1 GB / 50 GB/s = 17.5 ms.
    # By hand: CX-7 min(400 Gb/s = 50 GB/s x 0.9, PCIe 5 x16 63 x 0.76 = 47.88) = 45 GB/s per
    # GPU; NVLink 4 450 x 0.82 = 369 GB/s; ring alpha (8 x 3 us + 56 x 1 us) / 64 = 1.25 us;
    # 63 x 1.25 us + 7/64 x 1e9 / 369e9 + 56/64 x 1e9 / 45e9 = 78.75 us + 296.41 us + 19444.44 us
    d = run("comm", "all-to-all", "--size", "1GB", "--node", "dgx-h100", "--nodes", 8,
            "--format", "json").json()
    assert d["time_s"] >= 17.5e-3
    assert d["time_s"] == pytest.approx(78.75e-6 + 7 / 64 / 369 + 56 / 64 / 45, rel=1e-6)
    # one node unchanged: 7 x 1 us + 7/8 x 1e9 / 369e9 = 2378.27 us (the ring's form before)
    one = run("comm", "all-to-all", "--size", "1GB", "--node", "dgx-h100", "--nodes", 1,
              "--format", "json").json()
    assert one["time_s"] == pytest.approx(7e-6 + 0.875 / 369, rel=1e-6)


def test_tree_by_hand():
    # n = 8: depth 3; 2*3 alpha + 2*7/8 beta z = 6 us + 1.75 s
    assert float(eq.comm__tree_all_reduce_time(D=3, alpha=A, beta=B, n=8, z=Z)) == \
        pytest.approx(6e-6 + 1.75)
    assert float(eq.comm__tree_all_reduce_time(D=0, alpha=A, beta=B, n=1, z=Z)) == 0


H = dict(N=4, alpha_e=5e-6, alpha_i=1e-6, m=8, z=Z)  # m=8 GPUs, N=4 nodes, 1 GB


def test_hierarchical_pipelined_by_hand():
    # beta_i = 1e-11 (100 GB/s NVLink), beta_e = 1e-10 (10 GB/s per node):
    # NVLink work 2 * 7/8 * 1e-11 * 1e9 = 17.5 ms (RS + AG), network 2 * 3/4 * 1e-10 * 1e9 = 150 ms
    # latencies once: 2*7*1us + 2*3*5us = 44 us
    # chunk 1e8 B = z/10: 44us + max(17.5, 150) ms + 17.5 ms / 10 = 0.151794 s
    t = float(eq.comm__hierarchical_all_reduce_pipelined_time(c_b=1e8, beta_e=1e-10,
                                                              beta_i=1e-11, **H))
    assert t == pytest.approx(44e-6 + 0.15 + 0.00175, rel=1e-12)
    # one chunk (c_b >= z): nothing overlaps, the three phases summed: 44us + 17.5ms + 150ms
    t1 = float(eq.comm__hierarchical_all_reduce_pipelined_time(c_b=2e9, beta_e=1e-10,
                                                               beta_i=1e-11, **H))
    assert t1 == pytest.approx(44e-6 + 0.0175 + 0.15, rel=1e-12)
    # NVLink-bound (beta_i = 1e-10, beta_e = 1e-11): 2*7/8*0.1 = 175 ms, network 15 ms / 10
    t2 = float(eq.comm__hierarchical_all_reduce_pipelined_time(c_b=1e8, beta_e=1e-11,
                                                               beta_i=1e-10, **H))
    assert t2 == pytest.approx(44e-6 + 0.175 + 0.0015, rel=1e-12)


@pytest.mark.parametrize("chunk", [4194304, 1e8, 1e12])
def test_hierarchical_degenerates_to_the_ring(chunk):
    # one node: the intra-node ring all-reduce of m; one GPU per node: the inter-node ring of N
    one_node = float(eq.comm__hierarchical_all_reduce_pipelined_time(
        c_b=chunk, N=1, alpha_e=5e-6, alpha_i=A, beta_e=1e-10, beta_i=B, m=8, z=Z))
    assert one_node == pytest.approx(float(eq.comm__ring_all_reduce_time(alpha=A, beta=B, n=8,
                                                                         z=Z)), rel=1e-12)
    one_gpu = float(eq.comm__hierarchical_all_reduce_pipelined_time(
        c_b=chunk, N=4, alpha_e=5e-6, alpha_i=A, beta_e=1e-10, beta_i=B, m=1, z=Z))
    assert one_gpu == pytest.approx(float(eq.comm__ring_all_reduce_time(
        alpha=5e-6, beta=1e-10, n=4, z=Z)), rel=1e-12)


def test_hierarchical_16_dgx_h100_not_below_the_ring(run):
    # NVLink 4: 450 GB/s x 0.82 = 369 GB/s; node: 8 x min(400 Gb/s = 50 GB/s x 0.9,
    # PCIe 5 x16 63 x 0.76 = 47.9) = 8 x 45 = 360 GB/s; m = 8, N = 16, z = 1 GB
    # NVLink 2 * 7/8 * 1e9/369e9 = 4.7425 ms; network 2 * 15/16 * 1e9/360e9 = 5.2083 ms
    # chunks ceil(1e9 / 4 MiB = 238.4) = 239; latencies 2*7*1us + 2*15*3us = 104 us
    # fill/drain: the NVLink work on one 4 MiB chunk, 4.7425 ms * 4194304/1e9 = 19.89 us
    # T = 104us + 5.2083 ms + 19.89 us = 5.3322 ms; busbw = 1e9/T * 2*127/128 = 372.1
    h = run("comm", "all-reduce", "--size", "1GB", "--nodes", 16, "--node", "dgx-h100",
            "--algo", "hierarchical", "--format", "json").json()
    t = 104e-6 + 2 * 15 / 16 / 360 + 2 * 7 / 8 / 369 * 4194304 / 1e9
    assert h["time_s"] == pytest.approx(t, rel=1e-9)
    assert h["pipeline_chunks"] == 239 and h["busbw_GBps"] == pytest.approx(372.1, abs=0.1)
    # ring, NCCL's model (the default), Simple pipelined (comm.nccl_pipelined_time): steps'
    # latency 224 x 3.4 + 30 x 14 = 1181.6 us < 2*127/128 * 1e9/360e9 = 5512.2 us, so
    # 8.4 us + 5512.2 us = 5.5206 ms; busbw 1.984375e9 / 5.5206 ms = 359.5 GB/s
    r = run("comm", "all-reduce", "--size", "1GB", "--nodes", 16, "--node", "dgx-h100",
            "--format", "json").json()
    assert r["time_s"] == pytest.approx(8.4e-6 + 2 * 127 / 128 / 360, rel=1e-9)
    assert r["busbw_GBps"] == pytest.approx(359.5, abs=0.1) and h["busbw_GBps"] > r["busbw_GBps"]


def test_hierarchical_chunk_assumption_is_overridable(run):
    # one chunk of 1 GB: the phases summed, 104us + 4.7425 ms + 5.2083 ms = 10.0549 ms
    d = run("comm", "all-reduce", "--size", "1GB", "--nodes", 16, "--node", "dgx-h100",
            "--algo", "hierarchical", "--assume", "hier_chunk_bytes=1e9", "--format",
            "json").json()
    assert d["pipeline_chunks"] == 1
    assert d["time_s"] == pytest.approx(104e-6 + 2 * 15 / 16 / 360 + 2 * 7 / 8 / 369, rel=1e-9)


def test_multicast_halves_injected_traffic():
    # ring injects (n-1)/n z, multicast z/n: for n = 2 the same, for large n ~ (n-1) x less
    assert float(eq.comm__ring_all_gather_injected_bytes(n=2, z=Z)) == 0.5e9
    assert float(eq.comm__multicast_all_gather_injected_bytes(n=2, z=Z)) == 0.5e9
    assert float(eq.comm__multicast_all_gather_injected_bytes(n=16, z=Z)) == Z / 16
    assert float(eq.comm__multicast_all_gather_time(alpha=A, beta=B, n=1, z=Z)) == 0


SQ = dict(N=4, alpha_e=5e-6, alpha_i=1e-6, beta_e=1e-10, beta_i=1e-11, m=8, z=8e8)


def test_squeezenic_equations_on_the_ring_volumes():
    # M=8, N=4, alpha_i=1us, alpha_e=5us, beta_i=1e-11, beta_e=1e-10 (node), z=8e8 per GPU,
    # g = z/M = 1e8, r=0.1, node compressors theta_c = theta_d = 1e11, GPU 2e10
    # local RS (and AG): 7 * (1us + 1e-11 * 1e8) = 7 * 1.001e-3 = 7.007e-3
    # inter (uncompressed): 6 * (5us + 1e-10 * 8e8/4) = 6 * 0.020005 = 0.12003
    # (1) = 2 * 7.007e-3 + 0.12003 = 0.134044
    assert float(eq.comm__squeezenic_baseline_time(**SQ)) == pytest.approx(0.134044)
    # (2): inter 6 * (5us + 0.1 * 0.02) = 0.01203; z/theta_c = 8e-3; r z/theta_d = 8e-4
    #    = 0.014014 + 0.01203 + 0.008 + 0.0008 = 0.034844
    t1 = float(eq.comm__squeezenic_app1_time(**SQ, r=0.1, theta_c=1e11, theta_d=1e11))
    assert t1 == pytest.approx(0.034844)
    # (3): 7 * (1us + 1e-11 * 1e7) + 7 * 1e8/2e10 + 7 * 1e7/2e10 + 8.8e-3 + 0.01203 + 7.007e-3
    #    = 7.07e-4 + 0.035 + 0.0035 + 0.0088 + 0.01203 + 0.007007 = 0.067044
    t2 = float(eq.comm__squeezenic_app2_time(**SQ, r=0.1, theta_c=1e11, theta_d=1e11,
                                             theta_gc=2e10, theta_gd=2e10))
    assert t2 == pytest.approx(0.067044)


@pytest.mark.parametrize("m,n_nodes,z", [(8, 4, 8e8), (8, 16, 1e8), (4, 2, 3e7), (16, 16, 25e6)])
def test_squeezenic_baseline_is_the_hierarchical_ring(m, n_nodes, z):
    # eq. 1 on the ring volumes = the hierarchical all-reduce with its phases summed (C = 1) =
    # local RS + inter-node ring all-reduce of the z/m shards + local AG (ring equations)
    k = dict(N=n_nodes, alpha_e=3e-6, alpha_i=1e-6, beta_e=1 / 180e9, beta_i=1 / 231e9, m=m, z=z)
    base = float(eq.comm__squeezenic_baseline_time(**k))
    assert base == pytest.approx(float(eq.comm__hierarchical_all_reduce_pipelined_time(
        c_b=z, **k)), rel=1e-12)
    rs = float(eq.comm__ring_reduce_scatter_time(alpha=1e-6, beta=1 / 231e9, n=m, z=z))
    ar = float(eq.comm__ring_all_reduce_time(alpha=3e-6, beta=1 / 180e9, n=n_nodes, z=z))
    assert base == pytest.approx(2 * rs + ar, rel=1e-12)
    # r = 1 with free compressors: approach 1 is the baseline
    assert float(eq.comm__squeezenic_app1_time(**k, r=1, theta_c=1e30, theta_d=1e30)) == \
        pytest.approx(base, rel=1e-12)


def test_issue_case_headline_names_what_it_reports(run):
    # 16 x DGX A100, 100 MB, r = 1/16, compression on the SmartNICs (8 x 800 GB/s per node)
    # ring, NCCL's model: Simple 8.4 us + max(steps' latency 224 x max(3.4, 3 x 1) + 30 x 14 =
    # 1181.6 us, 2*127/128 * 1e8/180e9 = 1102.43 us) = 1190.0 us (LL128 1757.9, LL 2516.5 us)
    # approach 1: local 2 * 7 * (1us + 12.5e6/231e9) = 771.58 us; inter 30 * (3us + 0.0625 *
    # 1e8/16/180e9) = 155.10 us; 1e8/6.4e12 = 15.63 us; 0.0625e8/6.4e12 = 0.98 us: 943.28 us
    args = ("comm", "all-reduce", "--size", "100MB", "--nodes", 16, "--compression", 0.0625)
    d = run(*args, "--format", "json").json()
    ring = 8.4e-6 + 224 * 3.4e-6 + 30 * 14e-6
    app1 = (2 * 7 * (1e-6 + 12.5e6 / 231e9) + 30 * (3e-6 + 0.0625 * 1e8 / 16 / 180e9)
            + 1e8 / 6.4e12 + 0.0625e8 / 6.4e12)
    assert d["uncompressed_time_s"] == pytest.approx(ring, rel=1e-9)
    assert d["time_s"] == pytest.approx(app1, rel=1e-9) and app1 < ring
    assert d["reported"] == "SqueezeNIC approach 1 all-reduce (compressed 0.0625 on smartnic)"
    assert d["compression"]["chosen"] is True
    assert d["compression"]["fastest"].startswith("SqueezeNIC approach 1")
    # baseline = hierarchical summed: 771.58 + 30 * (3us + 1e8/16/180e9) = 1903.25 us
    assert d["compression"]["baseline_s"] == pytest.approx(
        2 * 7 * (1e-6 + 12.5e6 / 231e9) + 30 * (3e-6 + 1e8 / 16 / 180e9), rel=1e-9)
    out = run(*args).out
    assert "SqueezeNIC approach 1 all-reduce" in out.replace("\n", " ")
    assert "fastest: SqueezeNIC approach 1" in out


def test_compression_only_when_faster(run):
    # approach 2 compresses on the GPU at 21.6 GB/s: 7 * 12.5e6/21.6e9 = 4.05 ms alone, far
    # above the 1190.0 us ring (above), so the ring is reported, and named
    d = run("comm", "all-reduce", "--size", "100MB", "--nodes", 16, "--compression", 0.0625,
            "--approach", 2, "--format", "json").json()
    assert d["compression"]["chosen"] is False and d["reported"] == "ring all-reduce"
    assert d["time_s"] == pytest.approx(8.4e-6 + 224 * 3.4e-6 + 30 * 14e-6, rel=1e-9)
    assert d["compression"]["approach2_s"] > d["time_s"]
    assert d["busbw_GBps"] == pytest.approx(1e8 / d["time_s"] / 1e9 * 2 * 127 / 128)
    out = run("comm", "all-reduce", "--size", "100MB", "--nodes", 16, "--compression", 0.0625,
              "--approach", 2).out
    assert "compression not chosen" in out and "ring all-reduce" in out


def test_sweep_with_compression_names_each_row(run):
    # 2 x DGX A100, approach 2 with GPU compression. 1 KB is latency-bound: ring 30 steps x
    # 1.25 us = 37.5 us; approach 2 pays 7 + 2 + 7 steps = 7*1 + 2*3 + 7*1 = 20 us (+ ns of
    # bytes): compressed. 1 GB: the GPU kernel alone takes 7 * 1.25e8/21.6e9 = 40.5 ms against
    # the ring's 2*15/16 * 1e9/180e9 = 10.4 ms: the ring is reported.
    d = run("comm", "all-reduce", "--sizes", "1KB..1GB", "--nodes", 2, "--compression", 0.0625,
            "--approach", 2, "--compress-on", "gpu", "--format", "json").json()
    labels = [r["reported"] for r in d["rows"]]
    assert labels[0] == "SqueezeNIC approach 2 all-reduce (compressed 0.0625 on gpu)"
    assert labels[-1] == "ring all-reduce"
    assert d["rows"][0]["time_s"] == pytest.approx(20e-6, rel=0.01)
    for r in d["rows"]:
        assert r["time_s"] <= r["uncompressed_time_s"]
    table = run("comm", "all-reduce", "--sizes", "1KB..1GB", "--nodes", 2, "--compression",
                0.0625, "--approach", 2, "--compress-on", "gpu").out
    assert "algorithm per row" in table


def test_squeezenic_seed_comparison_v100_cx5():
    """seeds/squeezenic.md section 4.4: BERT-Large, 25 MB partitions, 1-bit (r = 1/32), 2-16
    nodes; in-NIC compression beats the same approach on the GPU, by more for approach 1 (21%
    of iteration time at 16 nodes) than approach 2 (15%). Figure 3's values are not in the text;
    the orderings are. DGX-2 nodes (V100, CX-5), the seed's GPU and NIC generation."""
    from optimus_calc.catalog import load
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.specs.assumptions import Assumptions
    cat = load(())
    hw = resolve_hardware(cat, "dgx-2", 16)
    topo = C.topology(hw, hw.gpus, link_catalog=lambda n: cat.get(n, "link"))
    gpu = SN.squeezenic(25e6, topo, 1 / 32, SN.CompressSite.GPU, SN.Approach.ONE, Assumptions())
    nic = SN.squeezenic(25e6, topo, 1 / 32, SN.CompressSite.SMARTNIC, SN.Approach.ONE,
                       Assumptions())
    gain1, gain2 = gpu.approach1_s / nic.approach1_s, gpu.approach2_s / nic.approach2_s
    assert nic.approach1_s < gpu.approach1_s < nic.baseline_s
    assert nic.approach2_s < gpu.approach2_s
    assert gain1 > gain2 > 1
    # by hand, approach 1 at 16 nodes (m = 16, nvlink2 150 x 0.8 = 120 GB/s, node 8 x 11.25):
    # GPU compressors 16 x 21.6 = 345.6 GB/s: 25e6/345.6e9 + 25e6/32/345.6e9 = 74.6 us
    # SmartNICs 8 x 800 = 6400 GB/s: 25e6/6.4e12 * (1 + 1/32) = 4.03 us; difference 70.6 us
    assert gpu.approach1_s - nic.approach1_s == pytest.approx(
        25e6 * 33 / 32 * (1 / 345.6e9 - 1 / 6.4e12), rel=1e-9)


@pytest.mark.parametrize("coll,factor", [("all-reduce", 2 * 7 / 8), ("all-gather", 7 / 8),
                                         ("reduce-scatter", 7 / 8), ("broadcast", 1.0),
                                         ("reduce", 1.0), ("all-to-all", 7 / 8)])
def test_busbw_factors_match_nccl_tests(coll, factor):
    assert C.Collective(coll).bus_factor(8) == pytest.approx(factor)


def test_every_collective_and_algo_runs(run):
    for coll in C.Collective:
        for algo in set(C.Algo) - {C.Algo.NVLS}:  # NVLS needs one full H100/H200 node (below)
            r = run("comm", coll.value, "--size", "64MB", "--nodes", 2, "--algo", algo.value,
                    "--format", "json")
            if coll in C.ALLOWED[algo]:
                assert r.code == 0 and r.json()["time_s"] > 0, (coll, algo, r.err)
            else:
                assert r.code == 2 and "does not implement" in r.err


def test_dgx_busbw_recognisable(run):
    # nccl-tests on one DGX A100: all-reduce busbw ~230 GB/s (nccl-tests #149); DGX H100
    # without NVLS ~370 GB/s (nccl-tests #212). 1 GB: the alpha terms are negligible.
    a = run("comm", "all-reduce", "--size", "1GB", "--ranks", 8, "--node", "dgx-a100",
            "--format", "json").json()
    h = run("comm", "all-reduce", "--size", "1GB", "--ranks", 8, "--node", "dgx-h100",
            "--format", "json").json()
    assert a["busbw_GBps"] == pytest.approx(230, rel=0.03)
    assert h["busbw_GBps"] == pytest.approx(370, rel=0.03)
    # by hand for A100: 300 GB/s x 0.77 = 231 GB/s; NCCL's Simple ring, pipelined: 8.4 us +
    # max(14 x 3.4 us, 1.75e9/231e9 s) = 8.4 us + 7575.76 us
    assert a["time_s"] == pytest.approx(8.4e-6 + 1.75 / 231, rel=1e-9)


def test_multi_node_ring_bottleneck(run):
    # 2 x DGX A100: min(NVLink 231, 8 x CX-6 at 25 GB/s x 0.9 = 180) = 180 GB/s busbw (large z)
    d = run("comm", "all-reduce", "--size", "8GB", "--nodes", 2, "--format", "json").json()
    assert d["busbw_GBps"] == pytest.approx(180, rel=0.01)


def test_one_rank_cli_zero(run):
    d = run("comm", "all-reduce", "--size", "1GB", "--ranks", 1, "--format", "json").json()
    assert d["time_s"] == 0 and d["busbw_GBps"] == 0
    text = run("comm", "all-reduce", "--size", "1GB", "--ranks", 1).out
    assert "one rank: the collective moves nothing" in " ".join(text.split())


def test_sizes_sweep_and_csv(run):
    r = run("comm", "all-gather", "--sizes", "1KiB..1MiB", "--format", "csv")
    lines = r.out.strip().splitlines()
    assert lines[0] == "size_bytes,time_s,algbw_GBps,busbw_GBps" and len(lines) == 12


@pytest.mark.parametrize("args,msg", [
    (["--size", "abc"], "--size 'abc' is not a size"),
    (["--size", "1e"], "is not a size"),
    (["--sizes", "8GB..1KB"], "FROM is larger than TO"),
    (["--size", "1GB", "--ranks", 12], "not a multiple of the 8 GPUs"),
    (["--size", "1GB", "--compression", 0.5], "across 2 or more nodes"),
    (["--size", "1GB", "--nodes", 2, "--compression", 2], "is not in the range 0<x<=1"),
    (["--size", "1GB", "--alpha-us", "nan"], "is not a finite number"),
    (["--size", '__import__("os").system("echo pwned")'], "is not a size"),
])
def test_comm_bad_input(run, args, msg):
    r = run("comm", "all-reduce", *args)
    assert r.code == 2 and msg in r.err and "pwned" not in r.out


def test_every_collective_has_its_ring_equation_and_bus_factor():
    # explicit Enum -> compiled function mapping, no getattr on names
    assert set(C.RING_TIME) == set(C.Collective) - {C.Collective.ALL_TO_ALL}  # pairwise
    for coll in C.RING_TIME:
        # n = 8, alpha = 0, beta = 1e-9, z = 1 GB: time = factor-like share of beta z
        assert float(C.RING_TIME[coll](alpha=0, beta=B, n=8, z=Z)) > 0
        text = coll.bus_factor_text
        assert coll.bus_factor(8) == pytest.approx(
            {"2(n-1)/n": 1.75, "(n-1)/n": 0.875, "1": 1.0}[text])
    assert set(C.ALLOWED) == set(C.Algo)


def test_compress_site_and_approach_dispatch_cover_every_member():
    from optimus_calc.specs.assumptions import Assumptions
    asm = Assumptions(gpu_compress_GBps=10, nic_compress_GBps=100)
    topo = Topology(16, 2, 8, 1e-6, 3e-6, 231e9, 22.5e9, 4, "l", "n")
    expected = {SN.CompressSite.GPU: (10, 8), SN.CompressSite.SMARTNIC: (100, 4)}
    assert set(expected) == set(SN.CompressSite)
    for site, (gbps, per_node) in expected.items():
        assert SN.compressor_GBps(site, asm) == gbps
        assert SN.compressors_per_node(site, topo) == per_node
        sq = SN.squeezenic(1e8, topo, 0.5, site, SN.Approach.ONE, asm)
        assert sq.node_compressor_GBps == gbps * per_node
    for approach, attr in {SN.Approach.ONE: "approach1_s", SN.Approach.TWO: "approach2_s"}.items():
        sq = SN.squeezenic(1e8, topo, 0.5, SN.CompressSite.GPU, approach, asm)
        assert sq.approach_s == getattr(sq, attr)
    assert len(SN.Approach) == 2
    # the fall-through branch is assert_never: a value outside the Enum cannot slip through
    with pytest.raises(AssertionError):
        SN.compressor_GBps("fpga", asm)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        C.Collective.bus_factor("gather", 8)  # type: ignore[arg-type]


def test_results_are_frozen():
    import dataclasses
    topo = Topology(16, 2, 8, 1e-6, 3e-6, 231e9, 22.5e9, 8, "l", "n")
    r = C.collective_time(C.Collective.ALL_REDUCE, C.Algo.HIERARCHICAL, 1e8, topo)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.time_s = 0.0  # type: ignore[misc]
    # 1e8 / 4 MiB = 23.8 -> 24 chunks
    assert r.pipeline_chunks == 24 and r.chunk_bytes == 4194304


def test_cli_only_parses_and_emits():
    from optimus_calc.cli import comm_cmd
    src = inspect.getsource(comm_cmd)
    for computation in ("collective_time", "squeezenic(", "bus_factor", "busbw", "topology("):
        assert computation not in src, computation


def test_hierarchical_monotone_across_chunk_boundaries():
    # fill/drain is one chunk's work, min(z, chunk): crossing a chunk boundary never shortens
    # the collective (a 1/C form would drop by (other work)/(C(C+1)) there)
    topo = Topology(32, 4, 8, 1e-6, 3e-6, 231e9, 22.5e9, 8, "l", "n")
    c = 4194304
    times = [C.collective_time(C.Collective.ALL_REDUCE, C.Algo.HIERARCHICAL, z, topo).time_s
             for k in (1, 2, 3, 10) for z in (k * c - 1, k * c, k * c + 1)]
    assert times == sorted(times)
    # z = 0 pays the latencies only: 2*7*1us + 2*3*3us = 32 us
    k = dict(N=4, alpha_e=3e-6, alpha_i=1e-6, beta_e=1 / 180e9, beta_i=1 / 231e9, m=8)
    assert float(eq.comm__hierarchical_all_reduce_pipelined_time(c_b=c, z=0, **k)) == \
        pytest.approx(32e-6)
