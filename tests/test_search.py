"""The planner: vectorised evaluation equals the scalar path; ranking; NIC sizing; exports."""

import json

import numpy as np
import pytest

from optimus_calc.evaluate.context import resolve_hardware
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.search.inputs import offload_targets
from optimus_calc.search.plan import layout_of, training_of
from optimus_calc.search.space import enumerate_space
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Training
from tests_support import evaluate_space


@pytest.mark.parametrize("model,node,nodes,seq,gb", [
    ("llama-3-70b", "dgx-a100", 2, 4096, 64),
    ("mixtral-8x7b", "dgx-h100", 1, 4096, 32),
    ("gpt-7.5b", "xe8545", 2, 2048, 32),
    ("qwen3-14b", "gh200-nvl2", 1, 4096, 8),
    ("llama-3-8b", "dgx-a100", 1, 32768, 8),  # context parallelism is searched from 32K
])
@pytest.mark.parametrize("variant", [{}, {"multicast": True},
                                     {"grad_bytes": 4, "optimizer": "sgd"}])
def test_planner_evaluation_equals_single_layout(cat, model, node, nodes, seq, gb, variant):
    m = cat.get(model, "model")
    hw = resolve_hardware(cat, node, nodes)
    base = Training(seq_len=seq, global_batch=gb, **variant)
    asm = Assumptions()
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, gb, seq, offload_targets(hw))
    ev, cols = evaluate_space(space, m, hw, base, asm)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(space), size=min(60, len(space)), replace=False).tolist():
        lay, tr = layout_of(cols, i, hw, hw.smartnic.name), training_of(cols, i, base)
        mem = estimate_memory(m, hw, lay, tr, asm)
        st = estimate_step(m, hw, lay, tr, asm, mem)
        # the planner evaluates only the stages that can bind; the report every stage
        assert ev["gpu_bytes"][i] == pytest.approx(mem.worst.total_bytes, rel=1e-12)
        assert ev["step_s"][i] == pytest.approx(st.step_time_s, rel=1e-12), (lay, tr)
        assert ev["optimizer_exposed_s"][i] == pytest.approx(st.optimizer_exposed_s,
                                                             rel=1e-12, abs=1e-15)
        assert bool(ev["feasible"][i]) == mem.fits, (lay, mem.reasons)


def test_plan_llama70b_two_dgx_a100(run):
    r = run("plan", "llama70b", "--nodes", 2, "--format", "json")
    assert r.code == 0, r.err
    d = r.json()
    rec = d["recommended"]
    assert rec is not None and rec["gpu_memory_bytes"] <= 80e9
    assert rec["tp"] * rec["pp"] * rec["dp"] * rec["cp"] == 16
    assert len(d["candidates"]) == 5 and d["evaluated"] > 10_000
    assert {n["smartnic"] for n in d["smartnics"]} >= {"bluefield-2", "bluefield-3", "alveo-v80"}
    assert sum(d["infeasible_by_reason"].values()) + d["feasible"] == d["evaluated"]
    # --framework each: DeepSpeed and Megatron-DeepSpeed share the neutral parameters, Megatron-LM
    # (fp32 gradients kept on the GPU, its overlaps) and torchtitan (fp32 reduction, one FSDP
    # unit per block) have their own: 3 profiles, each layout evaluated under each; the counts
    # are (layout, profile) pairs, and the header says so
    assert d["profiles"] == 3 and d["evaluated"] == 3 * d["layouts"]
    text = run("plan", "llama70b", "--nodes", 2).out
    assert (f"{d['layouts']:,} layouts x 3 framework physics profiles = {d['evaluated']:,} "
            "evaluated") in " ".join(text.split())


def test_recommendation_is_optimal_among_feasible(cat):
    from optimus_calc.search.plan import plan
    m = cat.get("llama-2-13b", "model")
    hw = resolve_hardware(cat, "dgx-a100", 1)
    base = Training(seq_len=4096, global_batch=64)
    res = plan(m, hw, base, Assumptions(), "time", 3)
    space = enumerate_space(m, hw.gpus, hw.gpus_per_node, 64, 4096, offload_targets(hw))
    ev, _ = evaluate_space(space, m, hw, base, Assumptions())
    ok = ev["feasible"] & ev["runs"]
    best = ev["step_s"][ok].min()
    assert res.recommended.step_s == pytest.approx(best, rel=1e-9)
    res_m = plan(m, hw, base, Assumptions(), "memory", 3)
    assert res_m.recommended.gpu_bytes <= ev["gpu_bytes"][ok].min() * (1 + 1e-9)


def test_no_layout_fits_message(run):
    r = run("plan", "llama-3-405b", "--node", "xe8545", "--format", "json")
    d = r.json()
    assert r.code == 0 and d["recommended"] is None
    # the rules are checked before memory: the smallest is of the layouts a framework runs;
    # it fits GPU memory (its weights and optimizer offloaded), the host RAM is what fails
    assert d["why"].startswith("no layout fits: the layouts a framework runs that fit GPU ")
    assert "per GPU on 38.00 GB usable of a100-40gb" in d["why"]  # 40 GB less 5% headroom
    assert d["why"].endswith("fail on: offloaded state exceeds host RAM")


def test_nics_agrees_with_memory(run):
    # 70e9 params, DP x TP x PP = 16, ZeRO-3: 12 x 70e9 / 16 = 52.5 GB per GPU; BlueField-3
    # has 32 GB: 2 cards per GPU, 20.5 GB spill with one, 16 x 2 = 32 cards in the cluster
    d = run("nics", "70e9", "--nodes", 2, "--tp", 2, "--pp", 4, "--zero", 3,
            "--smartnic", "bluefield-3", "--model-states-only", "--format", "json").json()
    assert d["optimizer_bytes_per_gpu"] == pytest.approx(52.5e9)
    assert d["nic_memory_bytes"] == 32e9
    assert d["nics_per_gpu_for_memory"] == 2 and d["nics_for_memory"] == 32
    assert d["host_spill_bytes_per_nic"] == pytest.approx(20.5e9)
    assert d["recommended_nics_per_node"] == 16
    assert d["nics_for_compute"] is None  # a bare count has no step time
    mem = run("memory", "70e9", "--nodes", 2, "--tp", 2, "--pp", 4, "--zero", 3,
              "--offload", "smartnic", "--model-states-only", "--format", "json").json()
    assert mem["offload"]["bytes_per_gpu"] == pytest.approx(d["optimizer_bytes_per_gpu"])


def test_nics_for_recommended_layout(run):
    d = run("nics", "llama70b", "--nodes", 2, "--smartnic", "bluefield-3",
            "--format", "json").json()
    for k in ("optimizer_bytes_per_gpu", "nic_memory_bytes", "nics_per_gpu_for_memory",
              "nics_for_memory", "nics_for_compute", "recommended_nics_per_node",
              "host_spill_bytes_per_nic"):
        assert k in d
    assert d["sized_for"] == "the recommended layout"
    # cluster totals are per-GPU counts x 16 GPUs; per node the larger of the two x 8 GPUs
    assert d["nics_for_memory"] == 16 * d["nics_per_gpu_for_memory"]
    assert d["nics_for_compute"] == 16 * d["nics_per_gpu_for_compute"]
    assert d["recommended_nics_per_node"] == 8 * max(d["nics_per_gpu_for_memory"],
                                                     d["nics_per_gpu_for_compute"])


def test_exports(run, tmp_path):
    out = tmp_path / "ds.json"
    args = ("plan", "llama-2-7b", "--nodes", 1, "--offloads", "none")
    # DeepSpeed's own rows: the default plan's best is a Megatron-LM TP 8 layout (its profile
    # runs --tp-comm-overlap), which DeepSpeed would run as AutoTP with 8 x the batch
    ds = (*args, "--framework", "deepspeed")
    r = run(*ds, "--export", "deepspeed", "-o", out)
    assert r.code == 0, r.err
    cfg = json.loads(out.read_text())
    dp = run(*ds, "--format", "json").json()["recommended"]["dp"]
    assert cfg["train_batch_size"] == 512
    assert cfg["train_batch_size"] == (cfg["train_micro_batch_size_per_gpu"]
                                       * cfg["gradient_accumulation_steps"] * dp)
    assert cfg["zero_optimization"]["stage"] in (0, 1, 2, 3)
    r = run(*args, "--export", "megatron")
    assert r.code == 0 and "--tensor-model-parallel-size" in r.out
    assert "--global-batch-size 512" in r.out
    # SmartNIC offload is a what-if no framework runs: the export says so (exit 2)
    r = run("plan", "llama-2-7b", "--nodes", 1, "--smartnic", "bluefield-3", "--offloads",
            "smartnic", "--export", "deepspeed")
    assert r.code == 2 and "no framework runs" in r.err


def test_sweep_csv_columns(run):
    from optimus_calc.report.sweep_view import RANGE_COLUMNS, SWEEP_COLUMNS
    r = run("sweep", "--models", "llama-2-7b,llama-2-13b", "--node", "dgx-a100",
            "--nodes", "1,2", "--seq-len", 2048, "--format", "csv")
    assert r.code == 0, r.err
    lines = r.out.strip().splitlines()
    assert lines[0] == ",".join(SWEEP_COLUMNS + RANGE_COLUMNS) and len(lines) == 5


@pytest.mark.parametrize("args,msg", [
    (["sweep", "--models", "llama-2-7b", "--nodes", "1,x"], "--nodes: 'x' is not"),
    (["plan", "70e9"], "bare parameter count"),
    (["plan", "llama70b", "--node", "dgx-z"], "unknown node 'dgx-z'"),
])
def test_plan_bad_input(run, args, msg):
    r = run(*args)
    assert r.code == 2 and msg in r.err


def test_narayanan_published_tp_pp_in_top_five(cat):
    # calibration.md section 4 with Megatron-LM 2021's options: no ZeRO, full recomputation,
    # no offload, no FlashAttention. The published (TP, PP) is among the top five distinct
    # (TP, PP) for every row (with the GEMM-efficiency curve, TP 8 for 18.4B is back in the top
    # five: the constant efficiency favoured TP 4 by ignoring how TP shrinks the GEMMs).
    from optimus_calc.search.plan import plan
    from optimus_calc.specs.training import Offload, Recompute
    from optimus_calc.validate import NARAYANAN
    misses = []
    for name, tp, pp, gpus, gb, _ in NARAYANAN:
        m = cat.get(name, "model")
        hw = resolve_hardware(cat, "dgx-a100", gpus // 8)
        res = plan(m, hw, Training(seq_len=2048, global_batch=gb, flash_attention=False),
                   Assumptions(), "time", 5, [Offload.NONE], 0, [Recompute.FULL], True)
        if (tp, pp) not in [(c.layout.tp, c.layout.pp) for c in res.top]:
            misses.append(name)
    assert misses == []


@pytest.mark.parametrize("args,frameworks", [
    # Megatron-LM offloads to the CPU only; DeepSpeed has no ZeRO-3 with pipeline parallelism;
    # no framework runs OptimusNIC (the SmartNIC layouts are only the what-if)
    (("--framework", "megatron", "--offloads", "nvme"), "megatron"),
    (("--pp", 4, "--zero", 3, "--framework", "deepspeed"), "deepspeed"),
    (("--smartnic", "bluefield-3", "--offloads", "smartnic"),
     "deepspeed, megatron, megatron-deepspeed, torchtitan")])
def test_no_runnable_layout_is_an_answer_not_an_error(run, args, frameworks):
    # the rules are checked before memory: with no runnable layout there is no smallest
    # footprint to report (null), and every layout counts under "no framework runs it"
    for fmt in ("json", "table", "csv"):
        r = run("plan", "llama70b", "--nodes", 2, *args, "--format", fmt)
        assert r.code == 0, r.err
    d = run("plan", "llama70b", "--nodes", 2, *args, "--format", "json").json()
    assert d["recommended"] is None and d["smallest_gpu_memory_bytes"] is None
    assert d["why"].startswith(f"no framework runs any layout searched ({frameworks}; ")
    assert d["infeasible_by_reason"] == {
        "no framework runs it (see framework_rejections)": d["evaluated"]}


def test_pinned_cp_and_uneven_interleave_are_searched(run):
    # Megatron-Bridge's H100 Llama 3.1 405B recipe: TP 8 PP 8 CP 2 VP 8 at 8,192 tokens on
    # 1,024 GPUs, global batch 512 (public_cases._megatron_dense). CP is searched unpinned only
    # from 32K tokens, and VP only where it divides the layers (126 / 64 does not): pinned,
    # both are searched; dp = 1024 / (8 x 8 x 2) = 8, 512 / 8 = 64 micro-batches of 1
    base = ("plan", "llama-3-405b", "--node", "dgx-h100", "--nodes", 128, "--seq-len", 8192,
            "--global-batch", 512, "--micro-batch", 1, "--format", "json")
    r = run(*base, "--tp", 8, "--pp", 8, "--cp", 2, "--interleave", 8, "--framework",
            "megatron")
    assert r.code == 0, r.err
    rec = r.json()["recommended"]
    assert (rec["tp"], rec["pp"], rec["cp"], rec["dp"], rec["interleave"]) == (8, 8, 2, 8, 8)
    # unpinned at 8K: no CP, and no interleave that leaves 126 layers uneven
    free = run(*base, "--tp", 8, "--pp", 8).json()["recommended"]
    assert free["cp"] == 1 and (free["interleave"] == 1 or 126 % (8 * free["interleave"]) == 0)
