"""Collectives by hand: alpha-beta with alpha = 1e-6 s and beta = 1e-9 s/byte unless stated."""

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.evaluate import comm as C

A, B, Z = 1e-6, 1e-9, 1e9  # 1 us, 1 GB/s, 1 GB


@pytest.mark.parametrize("name,n,expected", [
    # 2(n-1) alpha + 2(n-1)/n beta z, n = 8: 14 us + 1.75 s
    ("comm__ring_all_reduce_time", 8, 14e-6 + 1.75),
    # (n-1) alpha + (n-1)/n beta z: 7 us + 0.875 s
    ("comm__ring_reduce_scatter_time", 8, 7e-6 + 0.875),
    ("comm__ring_all_gather_time", 8, 7e-6 + 0.875),
    ("comm__all_to_all_time", 8, 7e-6 + 0.875),
    # pipelined broadcast / reduce: (n-1) alpha + beta z
    ("comm__ring_broadcast_time", 8, 7e-6 + 1.0),
    ("comm__ring_reduce_time", 8, 7e-6 + 1.0),
])
def test_ring_collectives_by_hand(name, n, expected):
    assert float(getattr(eq, name)(alpha=A, beta=B, n=n, z=Z)) == pytest.approx(expected)


@pytest.mark.parametrize("name", [n for n in dir(eq) if n.startswith("comm__ring_")
                                  and n.endswith("_time")] + ["comm__all_to_all_time"])
def test_one_rank_is_free_and_alpha_zero_leaves_bandwidth(name):
    f = getattr(eq, name)
    assert float(f(alpha=A, beta=B, n=1, z=Z)) == 0.0
    t0 = float(f(alpha=0, beta=B, n=4, z=Z))
    assert t0 == pytest.approx(float(f(alpha=A, beta=B, n=4, z=Z)) - float(
        f(alpha=A, beta=0, n=4, z=Z)))


def test_tree_by_hand():
    # n = 8: depth 3; 2*3 alpha + 2*7/8 beta z = 6 us + 1.75 s
    assert float(eq.comm__tree_all_reduce_time(D=3, alpha=A, beta=B, n=8, z=Z)) == \
        pytest.approx(6e-6 + 1.75)
    assert float(eq.comm__tree_all_reduce_time(D=0, alpha=A, beta=B, n=1, z=Z)) == 0


def test_hierarchical_by_hand():
    # m=8, N=4, alpha_i = 1 us, alpha_e = 5 us, beta_i = 1e-11 (100 GB/s), beta_e = 1e-10:
    # 2*7*1us + 2*7/8*1e-11*1e9 + 2*3*5us + 2*3/4*1e-10*1e9 = 14us + 17.5ms + 30us + 150ms
    t = float(eq.comm__hierarchical_all_reduce_time(N=4, alpha_e=5e-6, alpha_i=1e-6,
                                                    beta_e=1e-10, beta_i=1e-11, m=8, z=Z))
    assert t == pytest.approx(44e-6 + 0.0175 + 0.15)


def test_multicast_halves_injected_traffic():
    # ring injects (n-1)/n z, multicast z/n: for n = 2 the same, for large n ~ (n-1) x less
    assert float(eq.comm__ring_all_gather_injected_bytes(n=2, z=Z)) == 0.5e9
    assert float(eq.comm__multicast_all_gather_injected_bytes(n=2, z=Z)) == 0.5e9
    assert float(eq.comm__multicast_all_gather_injected_bytes(n=16, z=Z)) == Z / 16
    assert float(eq.comm__multicast_all_gather_time(alpha=A, beta=B, n=1, z=Z)) == 0


def test_squeezenic_equations_as_written():
    # M=8, N=4, alpha_i=1us, alpha_e=5us, beta_i=1e-11, beta_e=1e-10, g=1e8, r=0.1,
    # theta_c = theta_d = 1e11 (hardware), theta_gc = theta_gd = 2e10 (GPU)
    k = dict(N=4, alpha_e=5e-6, alpha_i=1e-6, beta_e=1e-10, beta_i=1e-11, g=1e8, m=8)
    # (1): 7*(1us + 1e-3) + 6*(5us + 1e-2) = 7.007e-3 + 6.003e-2 = 0.067037
    assert float(eq.comm__squeezenic_baseline_time(**k)) == pytest.approx(0.067037)
    # (2): 7.007e-3 + 6*(5us + 1e-3) + 4*1e-3 + 4*1e-4 = 7.007e-3 + 6.03e-3 + 4.4e-3 = 0.017437
    t1 = float(eq.comm__squeezenic_app1_time(**k, r=0.1, theta_c=1e11, theta_d=1e11))
    assert t1 == pytest.approx(0.017437)
    # (3): 7*(1us + 1e-4) + 7*5e-3 + 7*5e-4 + 4*1e-4 + 4*1e-3 + 6*(5us + 1e-3)
    #    = 7.07e-4 + 0.035 + 0.0035 + 0.0004 + 0.004 + 0.00603 = 0.049637
    t2 = float(eq.comm__squeezenic_app2_time(**k, r=0.1, theta_c=1e11, theta_d=1e11,
                                             theta_gc=2e10, theta_gd=2e10))
    assert t2 == pytest.approx(0.049637)


@pytest.mark.parametrize("coll,factor", [("all-reduce", 2 * 7 / 8), ("all-gather", 7 / 8),
                                         ("reduce-scatter", 7 / 8), ("broadcast", 1.0),
                                         ("reduce", 1.0), ("all-to-all", 7 / 8)])
def test_busbw_factors_match_nccl_tests(coll, factor):
    assert C.Collective(coll).bus_factor(8) == pytest.approx(factor)


def test_every_collective_and_algo_runs(run):
    for coll in C.Collective:
        for algo in C.Algo:
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
    # by hand for A100: 300 GB/s x 0.77 = 231 GB/s; t = 14 us + 1.75e9/231e9 s
    assert a["time_s"] == pytest.approx(14e-6 + 1.75 / 231, rel=1e-9)


def test_multi_node_ring_bottleneck(run):
    # 2 x DGX A100: min(NVLink 231, 8 x CX-6 at 25 GB/s x 0.9 = 180) = 180 GB/s busbw (large z)
    d = run("comm", "all-reduce", "--size", "8GB", "--nodes", 2, "--format", "json").json()
    assert d["busbw_GBps"] == pytest.approx(180, rel=0.01)


def test_one_rank_cli_zero(run):
    d = run("comm", "all-reduce", "--size", "1GB", "--ranks", 1, "--format", "json").json()
    assert d["time_s"] == 0 and d["busbw_GBps"] == 0


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
