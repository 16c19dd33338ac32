"""Step-time and memory terms by hand, written to kill the mutants `make mutate` found surviving
(README, "Mutation testing"): each test pins one piece of physics the other tests left free.

Hardware figures (catalog): DGX A100 = 8 x A100-80GB, NVLink 3 300 GB/s x 0.77 = 231 GB/s,
alpha 1 us; 8 x ConnectX-6 200 Gb/s = 25 GB/s x 0.9 = 22.5 GB/s (PCIe 4 x16 31.5 x 0.76 = 23.9
GB/s does not bind), alpha 3 us. DeepSpeed buckets: 5e8 elements (Assumptions).
"""

import math

import pytest


def _json(run, cmd, *args):
    r = run(cmd, *args, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def _ring(n, alpha, beta, z, k):
    """k buckets of z/k bytes, each a ring reduce-scatter (or all-gather) over n ranks."""
    return k * (n - 1) * alpha + (n - 1) / n * beta * z


@pytest.mark.parametrize("args,n,alpha,B", [
    # TP 8 fills each node: the 2 DP ranks sit on different nodes, one NIC each
    # (rail-optimised: a group of 1 GPU per node gets 1/8 of the node's 8 NICs = 22.5 GB/s);
    # alpha: ring_alpha = (N alpha_e + (n - N) alpha_i) / n = (2 x 3 + 0) / 2 = 3 us
    (("--tp", "8"), 2, 3e-6, 22.5e9),
    # TP 1: 16 DP ranks, 8 per node: the ring is bound by the node's 8 NICs, 180 GB/s
    # (< NVLink 231 GB/s); alpha = (2 x 3 + 14 x 1) / 16 = 1.25 us
    ((), 16, 1.25e-6, 180e9),
])
def test_zero1_dp_traffic_across_nodes_by_hand(run, args, n, alpha, B):
    lay = ("--nodes", "2", "--zero", "1", *args)
    st = _json(run, "step", "llama-2-7b", *lay)
    P = _json(run, "memory", "llama-2-7b", *lay)["per_gpu"]["params"]
    z = 2 * P  # bf16 gradients (reduce-scattered) and weights (all-gathered) of one GPU's shard
    k = math.ceil(z / (5e8 * 2))  # buckets of 5e8 elements
    # ZeRO-1: one reduce-scatter and one all-gather per step (not per micro-batch)
    expected = 2 * _ring(n, alpha, 1 / B, z, k)
    assert st["dp_comm_s"] == pytest.approx(expected, rel=1e-9)
    # (TP 8: P = 842,534,912, k = 2: 4 x 3 us + 0.5 x 4P / 22.5e9 = 0.0749 s)


# ---- the offload equations, one value per branch, every input at a distinct value -------------
# (equations/offload.py; the phase tests in test_offload_step.py exercise them in combination)

from optimus_calc.equations import compiled as eq  # noqa: E402


def test_nvme_swap_times_by_hand():
    # 1e9 parameters per rank, 4 ranks per node sharing a RAID0 of 2 drives at 80% efficiency
    common = dict(P_r=1e9, eta_d=0.8, k_n=4, n_d=2)
    # fp32 gradients written in backward: 1e9 x 4 B x 4 ranks / (2 GB/s x 0.8 x 2) = 5 s
    assert float(eq.offload__nvme_grad_write_time(R_wr=2e9, b_gs=4, **common)) == \
        pytest.approx(5.0, rel=1e-12)
    # swap-in of state (12 B) and gradients (4 B): 1e9 x 16 x 4 / (5 GB/s x 0.8 x 2) = 8 s
    assert float(eq.offload__nvme_read_time(R_rd=5e9, b_gs=4, b_os=12, **common)) == \
        pytest.approx(8.0, rel=1e-12)
    # swap-out of the state: 1e9 x 12 x 4 / (2 GB/s x 0.8 x 2) = 15 s
    assert float(eq.offload__nvme_write_time(R_wr=2e9, b_os=12, **common)) == \
        pytest.approx(15.0, rel=1e-12)


def test_param_stream_from_nvme_by_hand():
    # 10 GB streamed: the link 10e9 / (25e9 x 0.8) = 0.5 s; the drives, shared by 4 ranks,
    # 10e9 x 4 / (5e9 x 0.8 x 2) = 5 s: the slower of the two
    kw = dict(B_l=25e9, Q_p=1e10, R_rd=5e9, eta_d=0.8, eta_l=0.8, k_n=4)
    assert float(eq.offload__param_stream_time_nvme(n_d=2, **kw)) == pytest.approx(5.0)
    # 100 drives: 4e10 / 4e11 = 0.1 s, the link binds at 0.5 s
    assert float(eq.offload__param_stream_time_nvme(n_d=100, **kw)) == pytest.approx(0.5)


def test_overflow_check_by_hand():
    # element-rate bound: 1e9 elements x 5 passes / 1e9 elements/s = 5 s
    # (bandwidth: 1e9 x (4 x 2 + 4) B / 10 GB/s = 1.2 s)
    kw = dict(B_r=10e9, P_r=1e9, b_acc=2, n_m=5, o_s=1)
    assert float(eq.offload__overflow_check_time(R_m=1e9, **kw)) == pytest.approx(5.0)
    # 1e10 elements/s: 0.5 s, so the 12 bytes per element at 10 GB/s bind: 1.2 s
    assert float(eq.offload__overflow_check_time(R_m=1e10, **kw)) == pytest.approx(1.2)
    # bf16 (DeepSpeed stage3.py L2547-2551 scans only fp16) and ZeRO-1/2 (GPU-side overflow
    # tracking): no host scan at all
    kw["o_s"] = 0
    assert float(eq.offload__overflow_check_time(R_m=1e9, **kw)) == 0.0


def test_zero12_offload_exposure_by_hand():
    # copies T_g = 0.3 s, post-backward phases 1.0 s, 1e9 bucketed gradients, buckets of 1e8
    kw = dict(P_g=1e9, T_g=0.3, T_post=1.0, Z_b=1e8)
    # ZeRO-1 default (overlap_comm false): copies after the backward, all exposed: 1.3 s
    assert float(eq.offload__exposed_zero12_offload(W_b=5.0, o_c=0, **kw)) == pytest.approx(1.3)
    # ZeRO-2 from the hooks on a side stream: only the last bucket's copy (0.1 x 0.3) is left
    assert float(eq.offload__exposed_zero12_offload(W_b=5.0, o_c=1, **kw)) == pytest.approx(1.03)
    # a 0.1 s backward hides only 0.1 s of the 0.3 s of copies: 0.2 + 1.0
    assert float(eq.offload__exposed_zero12_offload(W_b=0.1, o_c=1, **kw)) == pytest.approx(1.2)


def test_superoffload_stv_exposure_by_hand():
    # speculative work 2 s against a 5 s backward: the last of 10 sub-groups (1e8 of 1e9) is
    # exposed, 0.2 s; unscale and copies 0.5 s after the backward; bf16: no scan -> 0.7 s
    kw = dict(P_r=1e9, T_sp=2.0, T_post=0.5, Z_s=1e8, W_b=5.0)
    assert float(eq.offload__exposed_superoffload_stv(T_ov=0.0, **kw)) == pytest.approx(0.7)
    # fp16 adds its host scan in step(): +3 s
    assert float(eq.offload__exposed_superoffload_stv(T_ov=3.0, **kw)) == pytest.approx(3.7)
    # a 0.5 s backward hides 0.5 s of the 2 s: 1.5 + 0.5
    kw["W_b"] = 0.5
    assert float(eq.offload__exposed_superoffload_stv(T_ov=0.0, **kw)) == pytest.approx(2.0)


def test_zero_shard_degree_by_hand():
    # dense model, dp 2 x cp 4: states shard over 8 (Megatron dp-cp group, torchtitan fsdp)
    assert float(eq.memory__zero_shard_degree(D_p=2, P=8e9, P_x=0, c=4, e=1)) == 8.0
    # MoE: 1e9 dense + 4e9 expert parameters on the GPU, dp 8, ep 8: dense over 8, experts over
    # 8 / 8 = 1, so b P / N = b (1e9 / 8 + 4e9 / 1) -> N = 5e9 / 4.125e9 = 1.2121...
    n = float(eq.memory__zero_shard_degree(D_p=8, P=5e9, P_x=4e9, c=1, e=8))
    assert n == pytest.approx(5e9 / (1e9 / 8 + 4e9))
    # CP and EP together: dp 4, cp 2, ep 4, 1e9 dense + 4e9 expert parameters on the GPU: dense
    # over dp x cp = 8, experts over the expert-DP group dp x cp / ep = 2 (Megatron
    # parallel_state.py expert data parallel), so per rank 1e9/8 + 4e9/2 = 2.125e9 and
    # N = 5e9 / 2.125e9 = 2.3529...
    n = float(eq.memory__zero_shard_degree(D_p=4, P=5e9, P_x=4e9, c=2, e=4))
    assert n == pytest.approx(5e9 / 2.125e9)


def test_cpu_adam_roofline_by_hand():
    # memory: 1e9 x 28 B / 20 GB/s = 1.4 s; compute: 1e9 x 12 FLOP / (16 FLOP/cycle x 2 GHz x
    # 8 threads x 0.5 SIMD) = 0.09375 s
    kw = dict(B_r=20e9, F_cyc=16, P_r=1e9, beta_a=28, f_c=2e9, n_th=8, phi_a=12)
    assert float(eq.offload__adam_time(u_v=0.5, **kw)) == pytest.approx(1.4)
    # 1% of the SIMD width (a scalar loop): 12e9 / 2.56e9 = 4.6875 s
    assert float(eq.offload__adam_time(u_v=0.01, **kw)) == pytest.approx(4.6875)


def test_cpu_rates_by_hand():
    # 2 sockets x 200 GB/s x STREAM 0.8 x pass 0.5 shared by 8 ranks = 20 GB/s per rank
    kw = dict(B_sock=200e9, S_n=2, eta_c=0.5, eta_s=0.8, k_n=8)
    assert float(eq.offload__cpu_rank_bandwidth(B_thr=5e9, n_th=8, **kw)) == pytest.approx(20e9)
    # 2 threads drawing 5 GB/s each: 10 GB/s
    assert float(eq.offload__cpu_rank_bandwidth(B_thr=5e9, n_th=2, **kw)) == pytest.approx(10e9)
    # 0.5 elements per cycle x 2 GHz x 8 threads
    assert float(eq.offload__cpu_mask_rate(c_m=0.5, f_c=2e9, n_th=8)) == pytest.approx(8e9)


def test_superoffload_exposure_by_hand():
    # a 2 s step against a 0.5 s backward: 1.5 s left; the last bucket (1e8 of 1e9 params) 0.2 s
    kw = dict(P_r=1e9, T_s=2.0)
    assert float(eq.offload__exposed_superoffload(W_b=0.5, Z_b=1e8, **kw)) == pytest.approx(1.5)
    # a 5 s backward hides all but the last bucket's update: 2 x 0.1 = 0.2 s
    assert float(eq.offload__exposed_superoffload(W_b=5.0, Z_b=1e8, **kw)) == pytest.approx(0.2)
    # one bucket larger than the partition: nothing overlaps
    assert float(eq.offload__exposed_superoffload(W_b=5.0, Z_b=2e9, **kw)) == pytest.approx(2.0)


@pytest.mark.parametrize("B_pf,M_live,expected", [
    (0, 1e9, 0),       # prefetch bucket 0 disables prefetching
    (1, 1e9, 1),       # any positive bucket starts the next module
    (5e7, 1.9e6, 0),   # live-parameter budget below two 1e6-parameter modules
    (5e7, 2e6, 1),     # exactly two modules fit
    (5e7, 2.5e6, 1),
])
def test_zero3_prefetch_depth_by_hand(B_pf, M_live, expected):
    assert float(eq.offload__zero3_prefetch_depth(B_pf=B_pf, M_live=M_live, p_m=1e6)) == expected


@pytest.mark.parametrize("Z,o_g,expected", [
    (0, 1, 2e9),    # no ZeRO: the full 16-bit gradients (1e9 x 2 B)
    (1, 1, 2e9),    # ZeRO-1 reduces at the boundary only: full gradients stay on the GPU
    (2, 0, 5e8),    # ZeRO-2 without offload: its 1/4 partition
    (2, 1, 0.0),    # ZeRO-2 offloaded: partitions leave the GPU during backward
    (3, 0, 5e8),
    (3, 1, 0.0),
])
def test_gradients_bytes_with_offload_by_hand(Z, o_g, expected):
    got = float(eq.memory__gradients_bytes(N_d=4, P=1e9, Z=Z, b_g=2, k_g=0, o_g=o_g))
    assert got == pytest.approx(expected, abs=1e-6)


def test_ring_all_gather_injected_bytes_by_hand():
    # each of 4 ranks sends the 3 quarters it does not own: 0.75 GB of a 1 GB buffer
    assert float(eq.comm__ring_all_gather_injected_bytes(n=4, z=1e9)) == pytest.approx(7.5e8)


@pytest.mark.parametrize("device,per_param", [
    # fused Adam reads master, m, v (12 B) and the gradient, writes master, m, v (12 B) and the
    # 16-bit copy (2 B): 26 B + gradient. A CPU receives fp32 gradients (ZeRO-Offload keeps
    # them in fp32 on the host): 30 B; a SmartNIC or GPU the 16-bit ones: 28 B
    ("epyc-7742", 30.0), ("bluefield-3", 28.0), ("a100-80gb", 28.0),
])
def test_optimizer_step_bytes_by_device_by_hand(run, device, per_param):
    d = _json(run, "optimizer-step", "--params", "1e9", "--device", device)
    assert d["bytes"] == pytest.approx(per_param * 1e9)
    assert d["flops"] == pytest.approx(12e9)  # Adam: 12 FLOPs per parameter


# ---- the optimizer step on one device (evaluate/optimizer.py) ---------------------------------

def _reproduces(d):
    """The reported inputs give back the reported time through compute.optimizer_step_time
    (numpy scalars: the branch not taken may divide by a zero core count)."""
    import numpy as np
    with np.errstate(divide="ignore", invalid="ignore"):
        t = eq.compute__optimizer_step_time(**{k: np.float64(v) for k, v in d["inputs"].items()})
    assert float(t) == pytest.approx(d["time_s"])


def test_optimizer_step_on_a_two_tier_fpga_by_hand(run):
    # Alveo U280: 8 GB HBM at 460 GB/s, then DDR4 at 38.4 GB/s. 1e9 parameters of Adam hold
    # 12 GB of state (fp32 master, m, v): 2/3 in HBM, 1/3 in DDR, so the bytes stream at the
    # harmonic mean 1 / ((2/3)/460e9 + (1/3)/38.4e9) = 98.72 GB/s x 0.85 = 83.91 GB/s;
    # fused Adam moves 26 + 2 = 28 B/param: 28e9 / 83.91e9 = 0.3337 s (the FLOPs, 12e9 / 2e12
    # = 6 ms, do not bind)
    d = _json(run, "optimizer-step", "--params", "1e9", "--device", "alveo-u280")
    inv = (2 / 3) / 460e9 + (1 / 3) / 38.4e9
    assert d["time_s"] == pytest.approx(28e9 * inv / 0.85, rel=1e-9)
    assert d["bound"] == "memory" and d["threads"] == 1
    assert d["inputs"]["B_mem"] == pytest.approx(1 / inv) and d["inputs"]["c_n"] == 0
    _reproduces(d)


def test_optimizer_step_on_a_cpu_by_hand(run):
    # EPYC 7742: 64 cores drawing 5 GB/s each (320 GB/s) against the socket's 204.8 GB/s x
    # STREAM 0.81 = 165.9 GB/s; fp32 gradients from the host: 30 B/param; 30e9 / 165.888e9 s
    d = _json(run, "optimizer-step", "--params", "1e9", "--device", "epyc-7742")
    assert d["time_s"] == pytest.approx(30e9 / (204.8e9 * 0.81), rel=1e-9)
    assert d["threads"] == 64 and d["inputs"]["n_t"] == 64 and d["inputs"]["beta_p"] == 30
    _reproduces(d)
    # 4 threads: 4 x 5 GB/s = 20 GB/s binds: 1.5 s
    d = _json(run, "optimizer-step", "--params", "1e9", "--device", "epyc-7742", "--threads", 4)
    assert d["time_s"] == pytest.approx(1.5, rel=1e-9) and d["threads"] == 4
    _reproduces(d)


def test_optimizer_step_on_a_gpu_is_one_device_not_threads(run):
    # A100: HBM 2039 GB/s x hbm_efficiency; no per-core scaling, one "thread"
    d = _json(run, "optimizer-step", "--params", "1e9", "--device", "a100-80gb")
    assert d["threads"] == 1 and d["inputs"]["n_t"] == 1 and d["inputs"]["c_n"] == 0
    _reproduces(d)


def test_optimizer_step_input_errors_name_the_flag(cat):
    from optimus_calc.errors import InputError
    from optimus_calc.evaluate.optimizer import (Impl, device_from, find_device,
                                                 optimizer_step)
    from optimus_calc.specs.training import Assumptions, Optimizer
    dev = device_from(cat.get("bluefield-2", "smartnic"), 1, Assumptions())
    with pytest.raises(InputError, match=r"^--count 0 must be >= 1$"):
        optimizer_step(dev, 1e9, Optimizer.ADAM, Impl.FUSED, 2, count=0)
    with pytest.raises(InputError, match=r"^--threads 9 exceeds the 8 cores of bluefield-2$"):
        optimizer_step(dev, 1e9, Optimizer.ADAM, Impl.FUSED, 2, threads=9)
    with pytest.raises(InputError, match=r"^--device 'connectx-7' is a nic; an optimizer step "
                                         r"runs on a GPU, CPU or SmartNIC$"):
        find_device(cat, "connectx-7")
    with pytest.raises(InputError, match="unknown device 'bluefeild-3'"):
        find_device(cat, "bluefeild-3")


# ---- memory reasons, fit with offload ----------------------------------------------------------

def test_gpu_memory_reason_names_the_model_states_by_hand(run):
    # 70e9 parameters, ZeRO-1 over 8 GPUs: weights 140 GB + gradients 140 GB + optimizer
    # 12 x 70e9 / 8 = 105 GB = 385 GB of model states per GPU
    d = _json(run, "memory", "70e9", "--model-states-only", "--zero", "1")
    assert d["per_gpu"]["total_bytes"] == pytest.approx(385e9)
    assert "model states 385.00 GB" in d["reasons"][0]


@pytest.mark.parametrize("args,max_params", [
    # the usable memory is the capacity less the 5% headroom (as `memory` judges it).
    # GH200 (96 GB, one GPU): ZeRO-1 keeps weights 2 + gradients 2 B/param; SuperOffload moves
    # the 12 B of optimizer state to Grace except the --gpu-fraction kept: 0.5 x 12 = 6 B
    (("--node", "gh200", "--offload", "superchip", "--gpu-fraction", "0.5", "--zero", "1"),
     0.95 * 96e9 / 10),
    (("--node", "gh200", "--offload", "superchip", "--zero", "1", "--gpu-fraction", "0"),
     0.95 * 96e9 / 4),
    # the default keeps 10% of it (offload ratio 0.90): 2 + 2 + 0.1 x 12 = 5.2 B/param
    (("--node", "gh200", "--offload", "superchip", "--zero", "1"), 0.95 * 96e9 / 5.2),
    # ZeRO-3 + CPU offload on 8 A100s: only the 2-byte weights' 1/8 shard stays: P / 4 = 76 GB
    (("--offload", "cpu", "--zero", "3"), 0.95 * 80e9 * 4),
])
def test_fit_closed_form_with_offload_by_hand(run, args, max_params):
    d = _json(run, "fit", "1e9", "--solve", "layers", "--model-states-only", *args)
    assert d["max_params"] == pytest.approx(max_params, rel=1e-9)


def test_fit_with_offloaded_weights_has_no_parameter_bound(run):
    # --offload-params moves the weights' shard off too: nothing on the GPU grows with the model
    d = _json(run, "fit", "1e9", "--solve", "layers", "--model-states-only", "--zero", "3",
              "--offload", "cpu", "--offload-params")
    assert d["max_params"] is None and d["detail"] == "no solution"


# ---- messages of the single-layout wrappers ------------------------------------------------------

@pytest.mark.parametrize("args,msg", [
    (("step", "70e9", "--model-states-only"),
     "error: MODEL '70e9' is a bare parameter count: step time needs an architecture (a "
     "catalog model or a config.json)\n"),
    (("step", "llama-2-7b", "--model-states-only"),
     "error: --model-states-only does not apply to step time\n"),
    (("explain", "step.time", "70e9", "--model-states-only"),
     "error: step.time is not evaluated for this configuration (e.g. step time with "
     "--model-states-only or a bare parameter count, or an equation the command uses with "
     "other inputs); 'optimus-calc explain' lists the equations\n"),
])
def test_single_layout_refusals_word_for_word(run, args, msg):
    r = run(*args)
    assert r.code == 2 and r.err == msg


# ---- step-time terms the other tests left free ----------------------------------------------------

def test_zero2_dp_traffic_per_micro_batch_by_hand(run):
    # ZeRO-2 (DeepSpeed stage_1_and_2.py): the weights all-gathered once per step, the gradients
    # reduce-scattered every micro-batch. TP 8 on 2 DGX A100: 2 DP ranks, one 22.5 GB/s NIC
    # each, alpha 3 us; P = 842,534,912 per GPU, z = 2P bytes in 2 buckets; 256 micro-batches
    lay = ("--nodes", "2", "--tp", "8", "--zero", "2")
    st = _json(run, "step", "llama-2-7b", *lay)
    mem = _json(run, "memory", "llama-2-7b", *lay)
    P, m = mem["per_gpu"]["params"], mem["micro_batches"]
    assert P == 842_534_912 and m == 256
    one = _ring(2, 3e-6, 1 / 22.5e9, 2 * P, 2)
    assert st["dp_comm_s"] == pytest.approx(one + m * one, rel=1e-9)


def test_dp_ring_over_single_nic_nodes_by_hand(run):
    # GH200: one GPU and one ConnectX-7 (400 Gb/s x 0.9 = 45 GB/s; PCIe 5 x16 63 x 0.76 = 47.9
    # GB/s does not bind) per node; 2 nodes, ZeRO-1: a 2-rank ring at 45 GB/s, alpha 3 us;
    # P = 6,738,415,616 (all of Llama 2 7B), z = 2P in ceil(2P / 1e9) = 14 buckets
    st = _json(run, "step", "llama-2-7b", "--node", "gh200", "--nodes", "2", "--zero", "1")
    P = 6_738_415_616
    assert st["dp_comm_s"] == pytest.approx(2 * _ring(2, 3e-6, 1 / 45e9, 2 * P, 14), rel=1e-9)


@pytest.mark.parametrize("extra,factor", [
    ((), 2.0),                                       # all-gather in forward, reduce-scatter
    (("--recompute", "full"), 3.0),                  # the recomputed forward gathers again
    (("--assume", "cp_overlap=0.5"), 1.0),           # half hidden behind attention
])
def test_context_parallel_kv_traffic_by_hand(run, extra, factor):
    # Llama 2 7B, TP 4 x CP 2 in one DGX A100: the CP pair sits on NVLink (231 GB/s, 1 us).
    # K and V of the local sequence half: 2 x 4096 x 32 KV heads x 128 x 2 B / TP 4 = 16.8 MB
    # per ring step; one ring collective over 2 ranks: 1 us + 0.5 x z / 231e9;
    # x 32 layers x 512 micro-batches
    st = _json(run, "step", "llama-2-7b", "--tp", "4", "--cp", "2", "--seq-len", "4096", *extra)
    z = 2 * 4096 * 32 * 128 * 2 / 4
    one = 1e-6 + 0.5 * z / 231e9
    assert st["cp_comm_s"] == pytest.approx(32 * 512 * factor * one, rel=1e-9)


def test_flops_and_throughput_figures_by_hand(run):
    # no recomputation: hardware FLOPs are the model FLOPs, exactly
    d = _json(run, "step", "llama-2-7b", "--tp", "2", "--pp", "4")
    assert d["hardware_flops"] == d["model_flops"]
    # TFLOP/s per GPU = hardware FLOPs / step / 8 GPUs / 1e12
    assert d["tflops_per_gpu"] == pytest.approx(
        d["hardware_flops"] / d["step_time_s"] / 8 / 1e12, rel=1e-12)
    # the last of 4 equal stages also runs the logits: it binds the step
    assert d["binding_stage"] == 3
    # selective recomputation re-runs the attention core, 4 s h_q d_head FLOPs per token and
    # layer: 512 x 4096 tokens x 32 layers x 4 x 4096 x 32 x 128 = 2^52
    s = _json(run, "step", "llama-2-7b", "--recompute", "selective")
    assert s["hardware_flops"] - s["model_flops"] == pytest.approx(2.0 ** 52, rel=1e-12)


@pytest.mark.parametrize("args,spills", [
    # ZeRO-0: 12 x 6.74e9 = 81 GB of state per GPU, BlueField-2 holds 16 GB: it spills
    (("--zero", "0", "--smartnic", "bluefield-2"), True),
    # ZeRO-1 over 8: 10.1 GB per card fits a BlueField-3 (32 GB)
    (("--zero", "1"), False),
])
def test_smartnic_spill_note(run, args, spills):
    d = _json(run, "step", "llama-2-7b", "--offload", "smartnic", *args)
    note = "SmartNIC spill streams from host RAM every step (in offload_transfer_s)"
    assert (note in d["notes"]) == spills


def test_not_superchip_reason_word_for_word(run):
    d = _json(run, "memory", "llama-2-7b", "--offload", "superchip")
    assert d["reasons"] == ["dgx-a100 is not a superchip node (no NVLink-C2C CPU); use --node "
                            "gh200 or gh200-nvl2"]


def test_exposed_time_and_multicast_gather_by_hand():
    # a 1 s step and 0.5 s of transfers against a 0.7 s window: 0.8 s exposed; a 2 s window
    # hides it all
    assert float(eq.compute__exposed_time(T_opt=1.0, T_x=0.5, W=0.7)) == pytest.approx(0.8)
    assert float(eq.compute__exposed_time(T_opt=1.0, T_x=0.5, W=2.0)) == 0.0
    # multicast all-gather: two latencies, then the (n-1)/n of the buffer each rank receives:
    # n = 4, 1 GB at 1 GB/s: 2 us + 0.75 s; one rank: nothing
    mc = eq.comm__multicast_all_gather_time
    assert float(mc(alpha=1e-6, beta=1e-9, n=4, z=1e9)) == pytest.approx(2e-6 + 0.75)
    assert float(mc(alpha=1e-6, beta=1e-9, n=1, z=1e9)) == 0.0


def test_zero3_modules_per_layer_by_hand(cat):
    from optimus_calc.evaluate.engine import modules_per_layer
    from optimus_calc.specs.training import Assumptions
    asm = Assumptions()
    # dense SwiGLU layer: q, k, v, o + 3 MLP matrices + 2 norms = 9 modules
    assert modules_per_layer(cat.get("llama-2-7b", "model"), asm) == 9.0
    mix = cat.get("mixtral-8x7b", "model")
    # MoE layer: 4 attention + 2 norms + router + 3 x 8 expert matrices = 31
    assert modules_per_layer(mix, asm) == 31.0
    # 2 dense layers first, a shared expert: (2 x 9 + 30 x (7 + 3 x 9)) / 32 = 1038 / 32
    mixed = mix.model_copy(update={"first_dense_layers": 2, "shared_experts": 1})
    assert modules_per_layer(mixed, asm) == pytest.approx(1038 / 32)
    # FSDP wraps one module per block: the assumption overrides the count
    assert modules_per_layer(mix, Assumptions(zero3_modules_per_layer=1)) == 1.0


def test_step_time_is_the_sum_of_its_terms(run):
    # Mixtral 8x7B on 2 DGX A100 with TP 2 x CP 2 x EP 2, ZeRO-1: every communication term is
    # non-zero except PP; step.time adds them (one pipeline stage binds)
    d = _json(run, "step", "mixtral-8x7b", "--nodes", "2", "--tp", "2", "--cp", "2", "--ep", "2",
              "--zero", "1", "--seq-len", "4096")
    terms = ("forward_s", "backward_s", "bubble_s", "tp_comm_s", "cp_comm_s", "ep_comm_s",
             "pp_comm_s", "dp_comm_exposed_s", "optimizer_exposed_s")
    assert all(d[k] > 0 for k in ("tp_comm_s", "cp_comm_s", "ep_comm_s", "dp_comm_exposed_s"))
    assert d["step_time_s"] == pytest.approx(sum(d[k] for k in terms), rel=1e-12)


# ---- the step-time equations one by one, every input at a distinct value -------------------------

@pytest.mark.parametrize("Z,expected", [
    # ZeRO-0/1: gather and reduction once, hidden behind the forward (W_f 0.5) and the backward
    # (W_b 2): max(0, 1 - 0.5) + max(0, 3 - 2) + the last bucket min(0.25, 3) = 1.75
    (1, 0.5 + 1.0 + 0.25),
    # ZeRO-2: the reduction every one of m = 4 micro-batches, the gather once:
    # 4 x (max(0, 3 - 2) + 0.25) + 0.5 = 5.5
    (2, 4 * (1.0 + 0.25) + 0.5),
    # ZeRO-3: G_x (the gathers and the overlapped reduce-scatters sharing the backward's link,
    # 0.5: offload.zero3_exposed_gather_time) and the last bucket every micro-batch:
    # 4 x (0.5 + 0.25) = 3
    (3, 4 * (0.5 + 0.25)),
])
def test_dp_exposed_time_by_hand(Z, expected):
    got = eq.step__dp_exposed_time(o_dr=1, G_x=0.5, T_bkt=0.25, T_gat=1.0, T_red=3.0, W_b=2.0,
                                   W_f=0.5, Z=Z, m=4, A_g=0.0, r_full=0)
    assert float(got) == pytest.approx(expected)
    # a backward longer than the reduction hides all but the last bucket
    hidden = eq.step__dp_exposed_time(o_dr=1, G_x=0.0, T_bkt=0.25, T_gat=0.0, T_red=3.0, W_b=10.0,
                                      W_f=0.5, Z=Z, m=4, A_g=0.0, r_full=0)
    assert float(hidden) == pytest.approx(0.25 if Z < 2 else 4 * 0.25)


@pytest.mark.parametrize("Z,expected", [
    # buckets 1 + context 2 + fragmentation 0.1 x (3 + 4 + 5 + 6) = 4.8; ZeRO-3 adds the largest
    # layer's parameters gathered in fp32 and 16-bit: 4 x 8 / t 2 = 16
    (1, 1 + 2 + 0.1 * 18), (3, 1 + 2 + 0.1 * 18 + 16),
])
def test_overhead_bytes_by_hand(Z, expected):
    got = eq.memory__overhead_bytes(G=3, M_act=4, M_bkt=1, M_ctx=2, O=5, P_big=8, W=6, Z=Z,
                                    f_frag=0.1, t=2)
    assert float(got) == pytest.approx(expected)


def test_step_terms_by_hand():
    # element-wise: 2 layers x 3 bytes x 4 micro-batches x 5 passes / (10 B/s x 0.5) = 24 s
    assert float(eq.step__elementwise_time(B_hbm=10, L_stage=2, M_l=3, eta_hbm=0.5, m=4,
                                           n_pass=5)) == pytest.approx(24.0)
    # EP: 4 all-to-alls per MoE layer and micro-batch: 4 x 3 x 0.5 x 2 = 12
    assert float(eq.step__ep_comm_time(L_moe=3, T_a2a=0.5, m=2)) == pytest.approx(12.0)
    # PP: a send forward and back per micro-batch and chunk: 0.5 x 4 x 3 x (2 - 2 x 0.25) = 9
    assert float(eq.step__pp_comm_time(T_p2p=0.5, m=4, o_pp=0.25, v=3)) == pytest.approx(9.0)
    # TP with SP and full recomputation: 2 layers x 3 micro-batches x 4 x (1 - 0.5)
    # x (1 + 1/2) x (T_ag + T_rs = 0.75) = 13.5; without SP the all-reduce 2 instead
    tp = dict(L_stage=2, T_ag=0.5, T_ar=2.0, T_rs=0.25, m=3, o_tp=0.5, r_full=1)
    assert float(eq.step__tp_comm_time(sigma_sp=1, o_tb=0, **tp)) == pytest.approx(13.5)
    assert float(eq.step__tp_comm_time(sigma_sp=0, o_tb=0, **tp)) == pytest.approx(36.0)
    # MFU = model FLOPs / (GPUs x step x peak): 6e15 / (8 x 2 x 1e15) = 0.375
    assert float(eq.step__mfu(F_model=6e15, N_gpus=8, T_step=2.0, peak=1e15)) == \
        pytest.approx(0.375)
    assert float(eq.step__tokens_per_s(T_step=4.0, tokens=1e6)) == pytest.approx(2.5e5)
    # step.time: the eleven terms add up, each counted once (powers of two tell them apart)
    ten = dict(T_b=1, T_bubble=2, T_cp=4, T_dp=8, T_ep=16, T_f=32, T_opt=64, T_po=128,
               T_pp=256, T_tp=512, T_fix=1024)
    assert float(eq.step__time(**ten)) == 2047
    # step.fixed_time: 0.3 s per step + 1 ms x 32 layers x 64 micro-batches = 2.348 s
    assert float(eq.step__fixed_time(L_stage=32, T_s0=0.3, m=64, t_l0=1e-3)) == \
        pytest.approx(2.348)


def test_zero0_dp_all_reduce_by_hand(run):
    # DDP (ZeRO-0): no parameter gather; gradients all-reduced in 25 MB buckets
    # (bucket_cap_mb): z = 2P = 1,685,069,824 B in ceil(z / 25e6) = 68 buckets; a 2-rank ring
    # all-reduce over one 22.5 GB/s NIC each: 68 x 2 x 3 us + 2 x (1/2) x z / 22.5e9
    st = _json(run, "step", "llama-2-7b", "--nodes", "2", "--tp", "8", "--zero", "0")
    z = 2 * 842_534_912
    assert st["dp_comm_s"] == pytest.approx(68 * 2 * 3e-6 + z / 22.5e9, rel=1e-9)


@pytest.mark.parametrize("sp,divisor", [("--no-sp", 1), ("--sp", 2)])
def test_pp_point_to_point_by_hand(run, sp, divisor):
    # PP 2 x TP 2 x DP 2 in one DGX A100: neighbouring stages on NVLink (231 GB/s, 1 us). One
    # activation (4096 tokens x 4096 x 2 B = 33.5 MB; with sequence parallelism each TP rank
    # sends its 1/2) forward and one gradient back per micro-batch: 256 x 2 x (1 us + z/231e9)
    st = _json(run, "step", "llama-2-7b", "--pp", "2", "--tp", "2", sp)
    z = 4096 * 4096 * 2 / divisor
    assert st["pp_comm_s"] == pytest.approx(256 * 2 * (1e-6 + z / 231e9), rel=1e-9)


def test_bucket_capacity_and_logits_flops_by_hand():
    # DDP at ZeRO-0: 25 MB = 25e6 bytes; ZeRO: 5e8 elements x 2 B (bf16 gradients) = 1e9 bytes
    assert float(eq.memory__bucket_capacity_bytes(M_ddp=25, Z=0, Z_bk=5e8, b_g=2)) == 25e6
    assert float(eq.memory__bucket_capacity_bytes(M_ddp=25, Z=2, Z_bk=5e8, b_g=2)) == 1e9
    # Llama-3-70B logits: 2 x 8192 x 128,256 = 2,101,346,304 FLOP per token (Narayanan eq. 3)
    assert float(eq.compute__logits_flops_per_token(V=128_256, h=8192)) == 2 * 8192 * 128_256
