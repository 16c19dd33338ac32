"""The one evaluator: hand-computed step-time terms, the single-layout and planner paths giving
the same numbers (the four layouts where the old array path disagreed), and a brute-force
oracle for the planner's ranking.

Catalog values used by hand below (hardware_catalog/): A100-80GB bf16 peak 312 TFLOP/s;
NVLink3 300 GB/s x efficiency 0.77 = 231 GB/s, alpha 1 us; GEMM efficiency 0.60 (assumed).
Llama-2-7B: h 4096, 32 heads of 128, 32 layers, SwiGLU f 11008, vocab 32000,
6,738,415,616 parameters.
"""

import itertools

import numpy as np
import pytest

from optimus_calc.evaluate.batch import Batch
from optimus_calc.specs.training import OFFLOAD_CODES
from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.engine import evaluate
from optimus_calc.evaluate.reasons import Reason, primary_reason, reasons_of
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.frameworks import Reason as FwReason
from optimus_calc.frameworks import layout_support
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Offload, Recompute, Training

P7 = 6_738_415_616
# forward FLOPs per token of one Llama-2-7B layer at s = 4096 (compute.flops_per_token_layer):
# QKV 2h(q+2kv) = 2*4096*12288 = 100,663,296; output 2*4096*4096 = 33,554,432;
# attention 4*s*q = 4*4096*4096 = 67,108,864; SwiGLU 2*3*4096*11008 = 270,532,608
F_L = 100_663_296 + 33_554_432 + 67_108_864 + 270_532_608   # 471,859,200
F_H = 2 * 4096 * 32000                                        # logits, 262,144,000
BW = 300e9 * 0.77


def step_json(run, *args):
    r = run("step", "llama-2-7b", "--seq-len", 4096, *args, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_forward_backward_split_by_hand(run):
    # DP 8, global batch 8: tokens per GPU 4096; forward FLOPs 4096 * (32 F_l + F_h); a constant
    # GEMM efficiency 0.6 (--assume replaces the per-GPU curve, tested in test_efficiency.py)
    # the causal attention core runs on the fused kernel at half its FLOPs
    # (compute.causal_attention_flops): F_L less 67,108,864 / 2 = 438,304,768 per token-layer
    d = step_json(run, "--global-batch", 8, "--assume", "gemm_efficiency=0.6")
    t_cf = 4096 * (32 * (F_L - 67_108_864 / 2) + F_H) / (312e12 * 0.6)   # 0.31261 s
    assert d["compute_s"] == pytest.approx(3 * t_cf, rel=1e-9)  # backward = 2 x forward
    # the loss over the logits (compute.loss_bytes): 38 B per logit in the forward, 14 in the
    # backward, 4096 tokens x 32,000 logits / (2,039 GB/s x 0.9): 2.7141 and 0.99995 ms
    lf, lb = (n * 4096 * 32000 / (2039e9 * 0.9) for n in (38, 14))
    # element-wise work: 1 HBM pass in the forward, 3 in the backward (elementwise_factor 4)
    e = (d["elementwise_s"] - lf - lb) / 4
    assert d["forward_s"] == pytest.approx(t_cf + e + lf, rel=1e-9)
    assert d["backward_s"] == pytest.approx(2 * t_cf + 3 * e + lb, rel=1e-9)


def test_selective_recompute_flops_by_hand(run):
    # selective recomputation re-runs the attention core, 4 s q_d per token per layer:
    # 32768 tokens x 32 layers x 4 x 4096 x 4096 = 7.0369e13 extra FLOPs
    d = step_json(run, "--global-batch", 8, "--recompute", "selective")
    assert d["hardware_flops"] - d["model_flops"] == pytest.approx(
        32768 * 32 * 4 * 4096 * 4096, rel=1e-9)
    full = step_json(run, "--global-batch", 8, "--recompute", "full")
    assert full["hardware_flops"] == pytest.approx(32768 * (4 * 32 * F_L + 3 * F_H), rel=1e-9)


def test_zero3_dp_traffic_by_hand_and_per_micro_batch(run):
    # ZeRO-3 over DP 8 in one DGX A100 (ring over NVLink3). Weights 2P gathered module by
    # module as DeepSpeed's hooks do: per Llama layer q, k, v, o, gate, up, down and 2 norms =
    # 9 modules, 32 x 9 = 288 gathers of 7 ring steps:
    # T_gat = 288*7 us + 7/8 * 2P / 231 GB/s = 0.053064 s.
    # Gradients 2P reduce-scattered in 5e8-element buckets (1 GB): ceil(13.48/1) = 14 buckets,
    # T_red = 14*7 us + 7/8 * 2P / 231 GB/s = 0.051146 s. Per micro-batch: gather in the
    # forward and again in the backward, reduce-scatter once: T_red + 2 T_gat, each gather pass
    # with its 288 x 50 us per-module fixed cost (Assumptions.zero3_gather_latency_us), as the
    # exposed term charges it (issue 32 item 9).
    t_gat = 288 * 7e-6 + 7 / 8 * 2 * P7 / BW + 288 * 50e-6
    t_red = 14 * 7e-6 + 7 / 8 * 2 * P7 / BW
    # The per-step alpha model (nccl_latency_model=0): NCCL's, the default, picks a protocol
    # per module size (tests/test_comm_nccl.py pins it by hand).
    for gb, m in ((8, 1), (16, 2), (32, 4)):
        d = step_json(run, "--zero", 3, "--global-batch", gb, "--assume", "nccl_latency_model=0")
        assert d["dp_comm_s"] == pytest.approx(m * (t_red + 2 * t_gat), rel=1e-9), gb


def test_zero3_dp_communication_doubles_with_micro_batches(run):
    # issue 10's case: llama-3-8b, 2 x DGX-H100, DP 16, ZeRO-3
    base = ["llama-3-8b", "--node", "dgx-h100", "--nodes", 2, "--dp", 16, "--format", "json"]
    dp = [run("step", *base, "--zero", 3, "--global-batch", gb).json()["dp_comm_s"]
          for gb in (64, 128, 256)]
    assert dp[1] == pytest.approx(2 * dp[0], rel=1e-9)
    assert dp[2] == pytest.approx(2 * dp[1], rel=1e-9)
    # ZeRO-1 (Megatron distributed optimizer / DeepSpeed stage 1) reduces once per step
    z1 = [run("step", *base, "--zero", 1, "--global-batch", gb).json()["dp_comm_s"]
          for gb in (64, 128)]
    assert z1[0] == pytest.approx(z1[1], rel=1e-12)


def test_pp_point_to_point_by_hand(run):
    # TP 4 x PP 2 in one node: stage boundary on NVLink. With SP the activation sent is
    # s*b*h*2/t = 4096*4096*2/4 = 8,388,608 B: 1 us + 8388608/231e9 = 37.31 us; 8 micro-batches,
    # one send forward and one backward each: 2 x 8 x 37.31 us = 0.59703 ms
    d = step_json(run, "--tp", 4, "--pp", 2, "--global-batch", 8)
    assert d["pp_comm_s"] == pytest.approx(2 * 8 * (1e-6 + 8_388_608 / BW), rel=1e-9)


def test_bubble_by_hand(run):
    # 1F1B: (p - 1) / (m v) of the busiest stage's compute; PP 2, m = 8: one eighth
    d = step_json(run, "--tp", 4, "--pp", 2, "--global-batch", 8)
    assert d["bubble_s"] == pytest.approx((d["forward_s"] + d["backward_s"]) / 8, rel=1e-9)
    d4 = step_json(run, "--tp", 2, "--pp", 4, "--global-batch", 16, "--interleave", 2)
    # m = 16 / 1 = 16 micro-batches, v = 2: 3 / 32
    assert d4["bubble_s"] == pytest.approx(3 / 32 * (d4["forward_s"] + d4["backward_s"]),
                                           rel=1e-9)


def test_explain_step_time_equals_step(run):
    args = ["llama70b", "--nodes", 2, "--tp", 4, "--pp", 2, "--zero", 1, "--format", "json"]
    e = run("explain", "step.time", *args)
    assert e.code == 0, e.err
    s = run("step", *args).json()
    assert e.json()["result"] == pytest.approx(s["step_time_s"], rel=1e-12)
    # and each term the step reports is the value explain binds for step.time
    v = e.json()["values"]
    assert v["T_tp"] == pytest.approx(s["tp_comm_s"], rel=1e-12)
    assert v["T_dp"] == pytest.approx(s["dp_comm_exposed_s"], rel=1e-12)
    assert v["T_f"] == pytest.approx(s["forward_s"], rel=1e-12)


@pytest.mark.parametrize("name", ["step.tp_comm_time", "step.dp_exposed_time",
                                  "step.forward_flops", "compute.pipeline_bubble",
                                  "memory.gpu_total_bytes"])
def test_explain_each_term(run, name):
    e = run("explain", name, "llama70b", "--nodes", 2, "--tp", 4, "--pp", 2, "--zero", 1,
            "--format", "json")
    assert e.code == 0, e.err
    assert e.json()["result"] > 0


# ---- the single-layout and planner paths are the same numbers -----------------------------

def _both(cat, model, node, nodes, layout: Layout, tr: Training):
    """(one-layout report, planner-mode evaluation of the same layout)."""
    hw = resolve_hardware(cat, node, nodes)
    asm = Assumptions()
    mem = estimate_memory(model, hw, layout, tr, asm)
    ev = evaluate(Batch.of(layout, tr), model, hw, tr, asm, all_stages=False)
    return hw, mem, ev


def test_middle_stage_worst_is_found_by_planner(cat):
    # 7 layers on PP 4 split [1, 2, 2, 2]; 1F1B keeps 4, 3, 2, 1 micro-batches in flight:
    # stage 1 (2 layers x 3) holds more activations than stage 0 (1 layer x 4); a small
    # vocabulary keeps the embedding and the logits from deciding it
    m7 = cat.get("llama-2-7b", "model").model_copy(update={"layers": 7, "vocab": 1024})
    lay = Layout(tp=1, pp=4, dp=2)
    tr = Training(seq_len=4096, global_batch=32)
    hw, mem, ev = _both(cat, m7, "dgx-a100", 1, lay, tr)
    assert mem.worst.index == 1
    assert float(ev.gpu_bytes[0]) == pytest.approx(mem.worst.total_bytes, rel=1e-12)


def test_zero3_cpu_offload_params_same_both_ways(cat):
    m = cat.get("llama-3-70b", "model")
    lay = Layout(tp=2, pp=1, dp=8, zero=3, offload=Offload.CPU, offload_params=True)
    tr = Training(seq_len=4096, global_batch=32)
    hw, mem, ev = _both(cat, m, "dgx-a100", 2, lay, tr)
    assert float(ev.gpu_bytes[0]) == pytest.approx(mem.worst.total_bytes, rel=1e-12)
    assert float(ev.offload_bytes_per_device[0]) == pytest.approx(mem.offload.bytes_per_device)
    # the host holds the 2-byte weights too: per node 8 GPUs x (12 + 4 + 2) x P / 8
    P = mem.worst.params
    assert mem.offload.bytes_per_device == pytest.approx(8 * 18 * P / 8, rel=1e-12)


def test_gh200_gpu_fraction_same_both_ways(cat):
    m = cat.get("qwen3-14b", "model")
    lay = Layout(tp=1, pp=1, dp=2, zero=1, offload=Offload.SUPERCHIP,
                 superchip_gpu_fraction=0.3)
    tr = Training(seq_len=4096, global_batch=8)
    hw, mem, ev = _both(cat, m, "gh200-nvl2", 1, lay, tr)
    assert float(ev.gpu_bytes[0]) == pytest.approx(mem.worst.total_bytes, rel=1e-12)
    # 30% of the 12-byte state stays on the GPU: 0.3 x 12 P / 2
    assert mem.worst.optimizer_bytes == pytest.approx(0.3 * 12 * mem.worst.params / 2)


def test_smartnic_no_spill_same_both_ways(cat):
    m = cat.get("llama-3-70b", "model")
    lay = Layout(tp=2, pp=4, dp=2, zero=3, offload=Offload.SMARTNIC, allow_spill=False,
                 smartnic="bluefield-3")
    tr = Training(seq_len=4096, global_batch=16, recompute=Recompute.FULL)
    hw, mem, ev = _both(cat, m, "dgx-a100", 2, lay, tr)
    assert not mem.fits and not bool(ev.feasible[0])
    assert Reason.SMARTNIC_NO_SPILL in reasons_of(int(ev.reasons[0]))
    ok = lay.model_copy(update={"allow_spill": True})
    assert estimate_memory(m, hw, ok, tr, Assumptions()).fits


def test_every_reason_has_text_and_priority():
    for r in Reason:
        assert r.text and primary_reason(np.array([1 << int(r)]))[0] == int(r)
    assert primary_reason(np.array([0]))[0] == -1
    both = (1 << int(Reason.GPU_MEMORY)) | (1 << int(Reason.HOST_RAM))
    assert primary_reason(np.array([both]))[0] == int(Reason.GPU_MEMORY)


# ---- brute-force oracle for the planner -----------------------------------------------------

def _single_layout(space_cols, i, base):
    """Layout and training of row ``i`` of the space, as the single-layout commands take it."""
    lay = Layout(tp=int(space_cols["tp"][i]), pp=int(space_cols["pp"][i]),
                 dp=int(space_cols["dp"][i]), zero=int(space_cols["zero"][i]),
                 offload=OFFLOAD_CODES[int(space_cols["offload"][i])],
                 offload_params=bool(space_cols["offload_params"][i]),
                 interleave=int(space_cols["v"][i]))
    tr = base.model_copy(update={"micro_batch": int(space_cols["mb"][i]),
                                 "recompute": list(Recompute)[int(space_cols["recompute"][i])],
                                 "sequence_parallel": bool(space_cols["sp"][i])})
    return lay, tr


def test_planner_ranking_matches_brute_force(cat):
    """Brute force: evaluate every layout of a small space (2,556 layouts: every TP/PP/
    interleave/micro-batch/SP, ZeRO 0-3, offload none or CPU, recompute none or full, and with
    ZeRO-3 the CPU offload of the weights too: 2,272 + 284), without the planner's passes or
    pruning, and rank those that fit and that some framework runs by tokens/s (the global batch
    is pinned: the step time's order); the planner's top five must be the same layouts. The
    oracle evaluates the whole space in one call; that the single-layout commands' path (and
    the scalar framework rules) give the same figures is checked on the oracle's top ten and on
    every 40th layout of the space."""
    from tests_support import evaluate_space
    from optimus_calc.search.plan import plan
    from optimus_calc.search.space import enumerate_space
    m = cat.get("llama-2-7b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 1)
    base = Training(seq_len=2048, global_batch=16)
    asm = Assumptions()
    offloads = [Offload.NONE, Offload.CPU]
    rec = [Recompute.NONE, Recompute.FULL]
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 16, 2048, offloads, (0, 1, 2, 3), rec)
    ev, cols = evaluate_space(space, m, hw, base, asm)
    ok = np.flatnonzero(ev["feasible"] & ev["runs"])
    order = ok[np.lexsort((ev["gpu_bytes"][ok], -ev["tokens_per_s"][ok]))]
    assert len(space) == 2556 and 5 < len(order) < len(space)
    # one params variant per ZeRO-3 + CPU layout: 2,272 / (4 ZeRO stages x 2 targets) = 284
    assert int(cols["offload_params"].sum()) == 284
    for i in sorted({*order[:10].tolist(), *range(0, len(space), 40)}):
        lay, tr = _single_layout(cols, i, base)
        mem = estimate_memory(m, hw, lay, tr, asm)
        runs = any(r is FwReason.OK for r in layout_support(lay, tr, m).values())
        assert (mem.fits, runs) == (bool(ev["feasible"][i]), bool(ev["runs"][i])), i
        assert mem.worst.total_bytes == pytest.approx(ev["gpu_bytes"][i], rel=1e-12)
        if mem.fits:
            st = estimate_step(m, hw, lay, tr, asm, mem)
            assert st.step_time_s == pytest.approx(ev["step_s"][i], rel=1e-12)
    res = plan(m, hw, base, asm, "throughput", 5, offloads, 3, rec)
    assert res.feasible == len(order)
    for cand, i in itertools.zip_longest(res.top, order[:5]):
        lay, tr = _single_layout(cols, i, base)
        assert (cand.layout, cand.training) == (lay, tr)
        assert cand.step_s == pytest.approx(ev["step_s"][i], rel=1e-12)
        assert cand.gpu_bytes == pytest.approx(ev["gpu_bytes"][i], rel=1e-12)
