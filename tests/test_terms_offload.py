"""Terms by hand, continued (see tests/test_terms.py for the hardware figures): the offload
equations one value per branch, the optimizer step on one device, memory reasons, fit with
offload and the single-layout refusals, each written to kill a surviving mutant."""

import pytest

from optimus_calc.equations import compiled as eq


def _json(run, cmd, *args):
    r = run(cmd, *args, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


# ---- the offload equations, one value per branch, every input at a distinct value -------------
# (equations/offload.py; the phase tests in test_offload_step.py exercise them in combination)

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
    assert float(eq.memory__zero_shard_degree(D_p=2, P=8e9, P_x=0, c=4, e=1, t=1, t_x=1)) == 8.0
    # MoE: 1e9 dense + 4e9 expert parameters on the GPU, dp 8, ep 8: dense over 8, experts over
    # 8 / 8 = 1, so b P / N = b (1e9 / 8 + 4e9 / 1) -> N = 5e9 / 4.125e9 = 1.2121...
    n = float(eq.memory__zero_shard_degree(D_p=8, P=5e9, P_x=4e9, c=1, e=8, t=1, t_x=1))
    assert n == pytest.approx(5e9 / (1e9 / 8 + 4e9))
    # CP and EP together: dp 4, cp 2, ep 4, 1e9 dense + 4e9 expert parameters on the GPU: dense
    # over dp x cp = 8, experts over the expert-DP group dp x cp / ep = 2 (Megatron
    # parallel_state.py expert data parallel), so per rank 1e9/8 + 4e9/2 = 2.125e9 and
    # N = 5e9 / 2.125e9 = 2.3529...
    n = float(eq.memory__zero_shard_degree(D_p=4, P=5e9, P_x=4e9, c=2, e=4, t=1, t_x=1))
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
    got = float(eq.memory__gradients_bytes(N_d=4, P=1e9, Z=Z, a_bf=0, b_g=2, b_w=2, k_g=0, o_g=o_g))
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
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Optimizer
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
    # ZeRO-3 + CPU offload on 8 A100s: only the 2-byte weights' 1/8 shard stays, P / 4 = 76 GB
    # would allow 3.04e11; but the host binds first (`memory` said 3.04e11 does not fit): its
    # 8 ranks' fp32 state and gradients, 8 x (12 + 4) / 8 = 16 B/param, in the DGX A100's
    # 2,048 GB less the 10% host_reserved_fraction: 0.9 x 2048e9 / 16 = 1.152e11
    (("--offload", "cpu", "--zero", "3"), 0.9 * 2048e9 / 16),
])
def test_fit_closed_form_with_offload_by_hand(run, args, max_params):
    d = _json(run, "fit", "1e9", "--solve", "layers", "--model-states-only", *args)
    assert d["max_params"] == pytest.approx(max_params, rel=1e-9)


def test_fit_with_offloaded_weights_has_no_gpu_bound(run):
    # --offload-params moves the weights' shard off too: nothing on the GPU grows with the model
    d = _json(run, "fit", "1e9", "--solve", "layers", "--model-states-only", "--zero", "3",
              "--offload", "cpu", "--offload-params")
    # (the host's RAM binds instead: tests/test_memory.py::test_fit_closed_form_by_hand)
    assert d["equation"].startswith("0 = ") and d["max_params"] > 0
    assert d["detail"].endswith("the offload side binds first; nothing on the GPU grows with it")


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
