"""Issue 37, "Tests that pin the wiring": hand tests for physics mutations that no other test
killed. Each comment names the mutation it kills (checked by applying it by hand)."""

from __future__ import annotations

import pytest

# llama-2-7b at 4,096 tokens, TP 4 with sequence parallelism: one pipeline send is
# s b h 2 / t = 4096 x 1 x 4096 x 2 / 4 = 8,388,608 bytes (step.p2p_message_bytes)
Z_PP = 8_388_608
# DGX A100's NIC: ConnectX-6, 200 Gb/s x 0.90 = 22.5 GB/s, below its PCIe 4 x16 host path
# (31.5 GB/s x 0.76 = 23.94 GB/s); alpha 3 us (catalog nics.toml); NVLink3 300 GB/s x 0.77
NIC_BPS, NIC_ALPHA = 25e9 * 0.90, 3e-6
NVLINK_BPS, NVLINK_ALPHA = 300e9 * 0.77, 1e-6
F_H_MIXTRAL = 2 * 4096 * 32000   # logits FLOPs per token, h = 4096, vocab 32,000


def _step(run, model, *args):
    r = run("step", model, "--seq-len", 4096, *args, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_pipeline_hop_crosses_nodes_when_dp_spans_them(run):
    """2 DGX A100, TP 4 x DP 2 x PP 2: ranks are ordered TP, CP, DP, PP, so stage 2 starts
    t x cp x dp = 8 ranks on, on the other node: each send crosses the NIC. Global batch 8 over
    DP 2 is 4 micro-batches, one send forward and one backward each:
    2 x 4 x (3 us + 8,388,608 / 22.5e9) = 3.00662 ms. Kills work.py `t * cp * ctx.dp` ->
    `t * cp` (which times the hop on NVLink: 2 x 4 x (1 us + 8,388,608 / 231e9) = 0.2985 ms)."""
    d = _step(run, "llama-2-7b", "--nodes", 2, "--tp", 4, "--pp", 2, "--dp", 2,
              "--global-batch", 8)
    assert d["pp_comm_s"] == pytest.approx(2 * 4 * (NIC_ALPHA + Z_PP / NIC_BPS), rel=1e-9)
    # the same layout in one node (DP 1) stays on NVLink: 2 x 8 x (1 us + z / 231 GB/s)
    one = _step(run, "llama-2-7b", "--tp", 4, "--pp", 2, "--global-batch", 8)
    assert one["pp_comm_s"] == pytest.approx(2 * 8 * (NVLINK_ALPHA + Z_PP / NVLINK_BPS),
                                             rel=1e-9)


def test_full_recompute_reruns_the_moe_experts(run):
    """Full recomputation runs every layer's forward once more, routed experts included, and not
    the logits. Compute time is each class of FLOPs at its own efficiency (weight GEMMs, the
    attention core, the experts' grouped GEMMs: efficiency.moe_layer_efficiency, harmonic), and
    without recompute every backward is 2x its forward (Narayanan et al. SC'21 section 5.1), so
    compute(none) = 3 (T_layers + T_head) and compute(full) - compute(none) = T_layers =
    compute(none) / 3 - T_head. Mixtral-8x7B on 2 DGX A100, TP 8 x DP 2, global batch 8 x 4,096:
    16,384 tokens per DP rank; the head's 2 h V = 262,144,000 FLOPs per token split over TP 8 run
    on the A100 GEMM curve (catalog a100: 0.76, 23.1 GFLOP) at W = 2 b h^2 s / t = 17.18 GFLOP:
    0.76 x 17.18 / (17.18 + 23.1) = 0.32415, so T_head = 16384 x 262,144,000 / 8 / (312e12 x 0.32415)
    = 5.308 ms. Kills
    work.py's expert backward without its recomputed forward (_moe_work `r_a=r_full` -> 0: the
    experts' share of the backward then runs at the dense GEMM efficiency)."""
    base = ["--nodes", 2, "--tp", 8, "--dp", 2, "--global-batch", 8]
    none = _step(run, "mixtral-8x7b", *base, "--recompute", "none")
    full = _step(run, "mixtral-8x7b", *base, "--recompute", "full")
    w = 2 * 4096 ** 2 * 4096 / 8 / 1e9
    t_head = 16384 * F_H_MIXTRAL / 8 / (312e12 * 0.76 * w / (w + 23.1))
    assert full["compute_s"] - none["compute_s"] == pytest.approx(
        none["compute_s"] / 3 - t_head, rel=1e-6)
    # the recomputed forward of the layers is FLOPs too: (model - 3 x tokens x F_h) / 3
    tokens = 8 * 4096
    assert full["hardware_flops"] - none["hardware_flops"] == pytest.approx(
        (none["model_flops"] - 3 * tokens * F_H_MIXTRAL) / 3, rel=1e-9)


def test_calibrate_keeps_parameters_inside_their_bounds(run, tmp_path):
    """Runs 1.35x faster than today's predictions (an MFU the peak allows, but more than any
    efficiency up to 1 gives): the fit stops at the bounds (calibrate_fit.CANDIDATES, hi = 1)
    and the runs stay about 23% over-predicted. Kills calibrate_fit.fit without its np.clip
    (efficiencies above 1 written into the profile)."""
    from optimus_calc.analyses.calibrate_fit import CANDIDATES
    lines = ["model,tp,pp,micro_batch,measured_tokens_per_s"]
    for tp, pp, mb in ((1, 1, 1), (2, 1, 2), (1, 2, 1)):
        d = _step(run, "llama-2-7b", "--tp", tp, "--pp", pp, "--micro-batch", mb)
        lines.append(f"llama-2-7b,{tp},{pp},{mb},{1.35 * d['tokens_per_s']}")
    runs = tmp_path / "runs.csv"
    runs.write_text("\n".join(lines) + "\n")
    r = run("calibrate", runs, "-o", tmp_path / "p.toml", "--format", "json")
    assert r.code == 0, r.err
    rep = r.json()
    bounds = {p.name: (p.lo, p.hi) for p in CANDIDATES}
    assert rep["fitted"]
    for name, value in rep["fitted"].items():
        lo, hi = bounds[name]
        assert lo <= value <= hi, (name, value)
    assert any(v == bounds[k][1] for k, v in rep["fitted"].items())
    assert all(r_["error_after"] < -0.1 for r_ in rep["runs"])


def test_full_recompute_repeats_the_moe_routing_pass(run):
    """The recomputed forward repeats the forward's element-wise HBM passes, the MoE routing
    (router softmax and top-k, permutation: compute.moe_permute_bytes, moe_router_bytes) with
    them: elementwise(full) - elementwise(none) = the forward's element-wise time =
    forward_s(none) - compute_s(none) / 3 (the forward's GEMMs are a third of the compute
    without recompute, test above) less the loss over the logits, which no recompute re-runs:
    38 B x 4,096 tokens x 32,000 / 8 logits x 4 micro-batches / (2,039 GB/s x 0.9) = 1.3571 ms
    (compute.loss_bytes). Kills work.py's routing pass in the backward without the recompute
    (`n_pass=1 + (rc == R_FULL)` -> 1)."""
    base = ["--nodes", 2, "--tp", 8, "--dp", 2, "--global-batch", 8]
    none = _step(run, "mixtral-8x7b", *base, "--recompute", "none")
    full = _step(run, "mixtral-8x7b", *base, "--recompute", "full")
    loss = 38 * 4096 * 32000 / 8 * 4 / (2039e9 * 0.9)
    assert full["elementwise_s"] - none["elementwise_s"] == pytest.approx(
        none["forward_s"] - none["compute_s"] / 3 - loss, rel=1e-9)


def test_a_smartnic_serves_the_shards_of_the_gpus_it_is_shared_by(run):
    """gpt2-xl at 4,096 tokens (1,557,611,200 parameters with its 1,024-row learned position
    table, which the run grows to 4,096 rows: + 3,072 x 1,600 = 1,562,526,400) on one DGX A100
    at ZeRO-1, DP 8: each GPU's shard is 195,315,800 parameters, 2-byte gradients out and 2-byte
    weights back = 781,263,200 bytes over its PCIe 4 x16 (31.5 GB/s x 0.76 = 23.94 GB/s): 32.63
    ms. BlueField-3's PCIe 5 x16 (63 GB/s x 0.76 = 47.88 GB/s) carries G_n / K_n shards: one
    card per GPU is faster than the GPU's link; 2 cards for 8 GPUs carry 4 shards each, 4 x
    781,263,200 / 47.88e9 = 65.27 ms (offload.smartnic_transfer_time; no spill: 4 x 195.3M x 16
    bytes < 32 GB). Kills the card's side without G_n (`P_r G_n / K_n` -> `P_r / K_n`)."""
    shard = (1_557_611_200 + 3_072 * 1_600) / 8 * 4
    times = {}
    for k in (8, 2):
        d = _step(run, "gpt2-xl", "--zero", 1, "--offload", "smartnic", "--smartnics-per-node",
                  k)
        times[k] = d["offload_transfer_s"]
    assert times[8] == pytest.approx(shard / (31.5e9 * 0.76), rel=1e-9)
    assert times[2] == pytest.approx(4 * shard / (63e9 * 0.76), rel=1e-9)


def test_megatron_cpu_offload_exposes_the_whole_host_step(run):
    """Megatron-LM's CPU offload (hybrid optimizer) copies the gradients to the host after the
    backward and the DP reduction (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py
    L150-179, frameworks/megatron.py): no part of the host step hides behind the backward, so
    the exposed optimizer time is all of it (2.545 s for llama-2-7b, ZeRO-1, 8 A100). Kills
    frameworks/megatron.py `ds_zero1_overlap_comm` 0 -> 1 (2.094 s exposed)."""
    d = _step(run, "llama-2-7b", "--zero", 1, "--offload", "cpu", "--framework", "megatron")
    assert d["optimizer_s"] > 0
    assert d["optimizer_exposed_s"] == pytest.approx(d["optimizer_s"], rel=1e-12)


@pytest.mark.parametrize("pp, overlap", [(1, True), (2, False)])
def test_deepspeed_export_turns_overlap_comm_off_with_a_pipeline(cat, pp, overlap):
    """DeepSpeed's pipeline engine turns overlap_comm off (runtime/engine.py L2390-2393), so an
    export with PP > 1 says false, as the evaluator assumes. Kills deepspeed_export.py
    `overlap_comm = lay.pp == 1` -> True."""
    from optimus_calc.frameworks.deepspeed_export import deepspeed_config_dict
    from optimus_calc.specs.training import Layout, Training, ZeroStage
    model = cat.get("llama-2-7b", "model")
    lay = Layout(tp=1, pp=pp, dp=8 // pp, zero=ZeroStage(1))
    tr = Training(seq_len=4096, micro_batch=1, global_batch=64)
    cfg = deepspeed_config_dict(lay, tr, model)
    assert cfg["zero_optimization"]["overlap_comm"] is overlap


def test_zero3_backward_gathers_share_the_link_with_the_reduce_scatters(run):
    """Under ZeRO-3 each module's gradient reduce-scatter overlaps the backward on the same link
    as the next module's gather (DeepSpeed stage3.py L1570-1608, overlap_comm true for stage 3):
    the T_rb that offload.zero3_exposed_gather_time receives is the stage's reduction T_red
    but its last bucket T_bkt (offload.zero3_overlapped_reduce_time; step.dp_exposed_time adds
    the last bucket once). T_red read back from the total (step.dp_comm_time, no
    recompute): dp_comm_s = m (T_red + 2 (n_mod t_g + n_mod alpha_g)), m = 512 / 32 = 16
    micro-batches for llama-2-7b on 4 DGX A100. Kills work.py's `reduce_s=...` -> 0 (the
    gathers alone on the backward's link) and T_rb = T_red (the last bucket counted twice)."""
    args = ["llama-2-7b", "--zero", 3, "--nodes", 4]
    ex = run("explain", "offload.zero3_exposed_gather_time", *args, "--format", "json")
    assert ex.code == 0, ex.err
    v = ex.json()["values"]
    bkt = run("explain", "step.dp_exposed_time", *args, "--format", "json")
    assert bkt.code == 0, bkt.err
    t_bkt = bkt.json()["values"]["T_bkt"]
    d = _step(run, *args)
    m, n = 512 / 32, v["n_mod"]
    t_red = d["dp_comm_s"] / m - 2 * n * (v["t_g"] + v["alpha_g"])
    assert t_red > t_bkt > 0
    assert v["T_rb"] == pytest.approx(t_red - t_bkt, rel=1e-9)


def test_torchtitan_reduces_fp32_gradients(run):
    """torchtitan's FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=float32): fp32
    reduce-scatters into fp32 sharded gradients (frameworks/torchtitan.py). llama-2-7b, ZeRO-3
    over 16 A100: 4 bytes x 6,738,415,616 / 16 = 1,684,603,904 gradient bytes per GPU, and the
    DP time of framework-neutral physics with 4-byte gradients and one gather per block. Kills
    the torchtitan profile's `grad_bytes` 4 -> 2."""
    args = ["llama-2-7b", "--zero", 3, "--nodes", 2, "--format", "json"]
    mem = run("memory", *args, "--framework", "torchtitan")
    assert mem.code == 0, mem.err
    assert mem.json()["stages"][0]["gradients_bytes"] == 4 * 6_738_415_616 // 16
    tt = run("step", *args, "--framework", "torchtitan").json()
    neutral = run("step", *args, "--grad-bytes", 4, "--assume",
                  "zero3_modules_per_layer=1").json()
    assert tt["dp_comm_s"] == pytest.approx(neutral["dp_comm_s"], rel=1e-12)


def test_pipeline_whose_stages_tile_a_node_crosses_at_the_block_boundary(run):
    """2 DGX A100, TP 4 x PP 4 (DP 1): stages of t x cp x dp = 4 ranks tile a node, so stages 0-1
    sit on node 0 and 2-3 on node 1; the hop 1 -> 2 crosses the NIC and 1F1B's steady state runs
    at its slowest hop: global batch 8 is 8 micro-batches, 2 x 8 x (3 us + 8,388,608 / 22.5e9) =
    6.01323 ms. Kills work.py's `inter` without `ctx.pp * s_pp > ctx.gpn` for a divisor stage
    (the round-11 formula priced the hop on NVLink: 2 x 8 x (1 us + z / 231e9) = 0.597 ms)."""
    d = _step(run, "llama-2-7b", "--nodes", 2, "--tp", 4, "--pp", 4, "--dp", 1,
              "--global-batch", 8)
    assert d["pp_comm_s"] == pytest.approx(2 * 8 * (NIC_ALPHA + Z_PP / NIC_BPS), rel=1e-9)


def test_megatron_interleaved_schedule_hides_the_pipeline_sends(run):
    """Megatron-LM overlaps the interleaved schedule's p2p with the chunks' compute
    (overlap_p2p_comm, default on: arguments.py L3118-3120 @ d98e8a6) and turns it off without a
    virtual pipeline (L1010-1012). 2 DGX A100, TP 4 x DP 2 x PP 2, 4 micro-batches: with
    --interleave 2 the Megatron profile hides the 2 x 4 x 2 sends (step.pp_comm_time, o_pi = 1)
    but the fill's and drain's p v - 1 = 3 hops each: 6 x (3 us + z / 22.5e9) = 2.25497 ms;
    --no-overlap-p2p-communication exposes all 16: 6.01323 ms; plain 1F1B (no --interleave)
    keeps pp_overlap 0: 8 sends, 3.00662 ms."""
    base = ["--nodes", 2, "--tp", 4, "--pp", 2, "--dp", 2, "--global-batch", 8,
            "--framework", "megatron", "--zero", 1]
    hop = NIC_ALPHA + Z_PP / NIC_BPS
    on = _step(run, "llama-2-7b", *base, "--interleave", 2)
    assert on["pp_comm_s"] == pytest.approx(6 * hop, rel=1e-9)
    off = _step(run, "llama-2-7b", *base, "--interleave", 2, "--no-overlap-p2p-communication")
    assert off["pp_comm_s"] == pytest.approx(16 * hop, rel=1e-9)
    assert _step(run, "llama-2-7b", *base)["pp_comm_s"] == pytest.approx(8 * hop, rel=1e-9)
