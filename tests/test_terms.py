"""Step-time and memory terms by hand, written to kill the mutants `make mutate` found surviving
(docs/background/mutation-testing.md): each test pins one piece of physics the other tests left
free.

Hardware figures (catalog): DGX A100 = 8 x A100-80GB, NVLink 3 300 GB/s x 0.77 = 231 GB/s,
alpha 1 us; 8 x ConnectX-6 200 Gb/s = 25 GB/s x 0.9 = 22.5 GB/s (PCIe 4 x16 31.5 x 0.76 = 23.9
GB/s does not bind), alpha 3 us. DeepSpeed buckets: 5e8 elements (Assumptions).

The offload equations, the optimizer step on one device, memory reasons, fit with offload and
the single-layout refusals are in tests/test_terms_offload.py.
"""

import math

import pytest

from optimus_calc.equations import compiled as eq


def _json(run, cmd, *args):
    # the rings by hand below are the per-step alpha model (nccl_latency_model=0); NCCL's
    # latency model, the default, is pinned by hand in tests/test_comm_nccl.py
    extra = ("--assume", "nccl_latency_model=0") if cmd == "step" else ()
    r = run(cmd, *args, *extra, "--format", "json")
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
    # the ring behind the attention core (step.cp_comm_time), whose time here outlasts it
    (("--assume", "cp_overlap=1"), 0.0),
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
    r = run("memory", "llama-2-7b", "--offload", "superchip")
    assert r.code == 2 and r.err.strip() == ("error: --offload superchip: dgx-a100 is not a "
                                             "superchip node (no NVLink-C2C CPU); use --node "
                                             "gh200 or gh200-nvl2")


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
    from optimus_calc.evaluate.work import modules_per_layer
    from optimus_calc.specs.assumptions import Assumptions
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
    # non-zero except PP; step.time adds them and the MoE layers' host syncs (fixed_s; one
    # pipeline stage binds)
    d = _json(run, "step", "mixtral-8x7b", "--nodes", "2", "--tp", "2", "--cp", "2", "--ep", "2",
              "--zero", "1", "--seq-len", "4096")
    terms = ("forward_s", "backward_s", "bubble_s", "tp_comm_s", "cp_comm_s", "ep_comm_s",
             "pp_comm_s", "dp_comm_exposed_s", "optimizer_exposed_s", "fixed_s")
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
    got = eq.step__dp_exposed_time(o_dr=1, o_pg=1, G_x=0.5, T_bkt=0.25, T_gat=1.0, T_red=3.0, W_b=2.0,
                                   W_f=0.5, Z=Z, m=4, A_g=0.0, r_z=0)
    assert float(got) == pytest.approx(expected)
    # a backward longer than the reduction hides all but the last bucket
    hidden = eq.step__dp_exposed_time(o_dr=1, o_pg=1, G_x=0.0, T_bkt=0.25, T_gat=0.0, T_red=3.0, W_b=10.0,
                                      W_f=0.5, Z=Z, m=4, A_g=0.0, r_z=0)
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
    assert float(eq.step__ep_comm_time(L_moe=3, T_a2a=0.5, m=2, o_ep=0, r_a2a=0)) == \
        pytest.approx(12.0)
    # a quarter hidden (ep_overlap 0.25): 12 x 0.75 = 9
    assert float(eq.step__ep_comm_time(L_moe=3, T_a2a=0.5, m=2, o_ep=0.25, r_a2a=0)) == \
        pytest.approx(9.0)
    # full recomputation: 6 per layer and micro-batch, 6 x 3 x 0.5 x 2 x 0.75 = 13.5
    assert float(eq.step__ep_comm_time(L_moe=3, T_a2a=0.5, m=2, o_ep=0.25, r_a2a=1)) == \
        pytest.approx(13.5)
    # PP: a send forward and back per micro-batch and chunk, interleaved (v 3) with o_pi 0.25
    # hidden but for the fill's and the drain's p v - 1 = 5 hops: 2 x 0.5 x (0.75 x 4 x 3 +
    # 0.25 x 5) = 9 + 1.25 = 10.25; plain 1F1B (v 1) with o_pp 0.25: 2 x 0.5 x (0.75 x 4 + 0.25 x 1) = 3.25
    pp = dict(T_p2p=0.5, m=4, o_pp=0.25, o_pi=0.25, p=2)
    assert float(eq.step__pp_comm_time(v=3, **pp)) == pytest.approx(10.25)
    assert float(eq.step__pp_comm_time(v=1, **pp)) == pytest.approx(3.25)
    # the interleaved share follows o_pi, not o_pp: all hidden but the 5 hops, 2 x 0.5 x 5 = 5
    assert float(eq.step__pp_comm_time(v=3, **{**pp, "o_pi": 1.0})) == pytest.approx(5.0)
    # TP with SP and full recomputation: 2 layers x 3 micro-batches x 4 x (1 - 0.5)
    # x (1 + 1/2) x (T_ag + T_rs = 0.75) = 13.5; without SP the all-reduce 2 instead
    tp = dict(L_stage=2, T_ag=0.5, T_ar=2.0, T_rs=0.25, m=3, o_tp=0.5, r_full=1, r_g=1)
    assert float(eq.step__tp_comm_time(sigma_sp=1, o_tb=0, **tp)) == pytest.approx(13.5)
    assert float(eq.step__tp_comm_time(sigma_sp=0, o_tb=0, **tp)) == pytest.approx(36.0)
    # torchtitan's op SAC re-sends the all-gathers only (r_g 1, r_full 0): 2 x 3 x (1 - 0.5) x
    # (0.5 x (4 + 2) + 0.25 x (2 + 2)) = 3 x 4 = 12.0; without SP its all-reduces: 36 as above
    sac = {**tp, "r_full": 0}
    assert float(eq.step__tp_comm_time(sigma_sp=1, o_tb=0, **sac)) == pytest.approx(12.0)
    assert float(eq.step__tp_comm_time(sigma_sp=0, o_tb=0, **sac)) == pytest.approx(36.0)
    # MFU = model FLOPs / (GPUs x step x peak): 6e15 / (8 x 2 x 1e15) = 0.375
    assert float(eq.step__mfu(F_model=6e15, N_gpus=8, T_step=2.0, peak=1e15)) == \
        pytest.approx(0.375)
    assert float(eq.step__tokens_per_s(T_step=4.0, tokens=1e6)) == pytest.approx(2.5e5)
    # step.time: the eleven terms add up, each counted once (powers of two tell them apart)
    ten = dict(T_b=1, T_bubble=2, T_cp=4, T_dp=8, T_ep=16, T_f=32, T_opt=64, T_po=128,
               T_pp=256, T_tp=512, T_fix=1024)
    assert float(eq.step__time(**ten)) == 2047
    # step.fixed_time: 0.3 s per step + 1 ms x 32 layers x 64 micro-batches = 2.348 s, + 2 ms
    # per MoE layer x 8 MoE layers x 64 micro-batches = 1.024 s: 3.372 s
    assert float(eq.step__fixed_time(L_moe=8, L_stage=32, T_s0=0.3, m=64, t_l0=1e-3, t_mf=0,
                                     t_mh=2e-3, r_h=0)) == pytest.approx(3.372)
    # the MoE forward re-run in the backward syncs again: + 1.024 s = 4.396 s
    assert float(eq.step__fixed_time(L_moe=8, L_stage=32, T_s0=0.3, m=64, t_l0=1e-3, t_mf=0,
                                     t_mh=2e-3, r_h=1)) == pytest.approx(4.396)
    # every MoE layer's launches, 0.5 ms x 8 x 64 = 0.256 s, with the sync or without it:
    # 3.372 + 0.256 = 3.628 s; padded to capacity (no sync) 3.628 - 1.024 = 2.604 s
    assert float(eq.step__fixed_time(L_moe=8, L_stage=32, T_s0=0.3, m=64, t_l0=1e-3,
                                     t_mf=5e-4, t_mh=2e-3, r_h=0)) == pytest.approx(3.628)
    assert float(eq.step__fixed_time(L_moe=8, L_stage=32, T_s0=0.3, m=64, t_l0=1e-3,
                                     t_mf=5e-4, t_mh=0, r_h=0)) == pytest.approx(2.604)


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
