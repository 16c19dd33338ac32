"""torchtitan's op SAC and the MoE all-to-alls, by hand: the save lists of deepseek_v3, llama4
and gpt_oss keep torch.ops._c10d_functional.all_to_all_single's outputs (memory), qwen3's does
not, so its re-run forward sends the dispatch and combine again (step: 6 all-to-alls per MoE
layer, not 4). torchtitan v0.2.2 = 73a0e697, models/<name>/infra/parallelize.py: deepseek_v3
L41, llama4 L59, gpt_oss L50; qwen3 L39-54 has no all_to_all_single."""

from pathlib import Path

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.frameworks import plugin
from optimus_calc.frameworks.torchtitan import flavour_of, sac_saves_ep_all_to_all
from optimus_calc.hf_import import load_hf_config
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Recompute, Training

# DeepSeek-V3: 4096 tokens x top-8 x h 7168 x 2 bytes = 469,762,048 bytes per all-to-all output;
# the dispatch's and the combine's together 939,524,096 (0.94 GB) per MoE layer and micro-batch
DSV3_PER_LAYER = 939_524_096
DSV3 = ("deepseek-v3", "--node", "dgx-h100", "--nodes", 32, "--tp", 1, "--pp", 8, "--ep", 32,
        "--zero", 1, "--micro-batch", 1, "--framework", "torchtitan", "--recompute",
        "selective", "--global-batch", 256, "--seq-len", 4096)
# Qwen3-30B-A3B on 2 DGX H100, EP 8 inside a node: 48 MoE layers, h 2048, top-8; one
# micro-batch (global batch 16 over 16 DP ranks)
QWEN = ("qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", 2, "--tp", 1, "--pp", 1, "--ep", 8,
        "--zero", 3, "--micro-batch", 1, "--framework", "torchtitan", "--recompute",
        "selective", "--global-batch", 16, "--seq-len", 4096)
# one all-to-all of 4096 x 8 x 2048 x 2 = 134,217,728 bytes over 8 ranks of one node (nvlink4:
# 450 GB/s at efficiency 0.82, alpha 1 us): 7 x 1e-6 + 7/8 x 134,217,728 / 369e9 = 3.25267e-4 s
QWEN_A2A = 7e-6 + 7 / 8 * 134_217_728 / (450e9 * 0.82)


def _json(run, *argv):
    r = run(*argv, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_the_equation_by_hand():
    args = dict(L_moe=1, L_s=1, b=1, b_w=2, c=1, e=32, h=7168, iota=1, k=8, s=4096, t=1, t_x=1)
    assert float(eq.memory__op_sac_ep_saved_bytes(w_a=1, **args)) == DSV3_PER_LAYER
    # the most-loaded rank receives 1.25x the dispatch, the combine returns its own k copies
    assert float(eq.memory__op_sac_ep_saved_bytes(w_a=1, **{**args, "iota": 1.25})) == \
        pytest.approx(2.25 * 469_762_048, rel=1e-12)
    assert float(eq.memory__op_sac_ep_saved_bytes(w_a=0, **args)) == 0   # not saved (qwen3)
    assert float(eq.memory__op_sac_ep_saved_bytes(w_a=1, **{**args, "e": 1})) == 0  # no EP
    # averaged over the stage: 4 MoE layers of 7 keep 4 x 0.94 GB, 4/7 of it per layer
    assert float(eq.memory__op_sac_ep_saved_bytes(w_a=1, **{**args, "L_moe": 4, "L_s": 7})) \
        == pytest.approx(4 / 7 * DSV3_PER_LAYER, rel=1e-12)
    # re-run forward all-to-alls: 4 + 2 x r_a2a per MoE layer and micro-batch
    assert float(eq.step__ep_comm_time(L_moe=48, T_a2a=1.0, m=1, o_ep=0, r_a2a=1)) == 288


def test_the_family_decides(cat):
    value = {n: sac_saves_ep_all_to_all(cat.get(n, "model")) for n in (
        "deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x7b",
        "llama-3-8b")}
    # mixtral: no torchtitan flavour, the stated default 1; llama-3-8b: dense, nothing set
    assert value == {"deepseek-v3": 1, "gpt-oss-120b": 1, "qwen3-30b-a3b": 0,
                     "qwen3-235b-a22b": 0, "mixtral-8x7b": 1, "llama-3-8b": None}


@pytest.mark.parametrize("config, family, value", [
    ("llama4", "llama4", 1), ("llama4_maverick", "llama4", 1), ("qwen3_moe", "qwen3", 0),
    ("glm4_moe", None, 1)])  # GLM-4.5: no torchtitan flavour, the stated default
def test_hf_configs_by_flavour(config, family, value):
    m = load_hf_config(Path(__file__).parent / "data" / "hf" / config / "config.json")
    assert (flavour_of(m) or (None,))[0] == family
    assert sac_saves_ep_all_to_all(m) == value


def test_the_profile_needs_the_model(cat):
    tt = plugin("torchtitan").profile
    tr = Training(seq_len=4096, global_batch=16, recompute=Recompute.SELECTIVE)
    _, asm, applied, _ = tt.apply(tr, Assumptions(), cat.get("qwen3-30b-a3b", "model"))
    assert asm.sac_saves_ep_all_to_all == 0 and asm.selective_policy == 1
    assert dict((x.name, x.value) for x in applied)["sac_saves_ep_all_to_all"] == 0
    for model in (None, cat.get("llama-3-8b", "model")):  # no model, a dense one: not set
        _, asm, applied, _ = tt.apply(tr, Assumptions(), model)
        assert asm.sac_saves_ep_all_to_all == 1
        assert "sac_saves_ep_all_to_all" not in {x.name for x in applied}


def test_deepseek_v3_keeps_the_dispatched_and_combined_tokens(run):
    saved = _json(run, "memory", *DSV3)
    assert saved["physics_profile"]["applied"]["sac_saves_ep_all_to_all"] == 1
    off = _json(run, "memory", *DSV3, "--assume", "sac_saves_ep_all_to_all=0")
    act = [(a["activations_bytes"] - b["activations_bytes"], a["micro_batches_in_flight"])
           for a, b in zip(saved["stages"], off["stages"])]
    # stage 0: layers 0-6, the first 3 dense: 4 MoE layers x 8 micro-batches in flight
    assert act[0] == (pytest.approx(4 * 8 * DSV3_PER_LAYER, rel=1e-9), 8)
    # stage 1: layers 7-13, all MoE, 7 in flight: 49 x 0.94 = 46.04 GB more
    assert act[1] == (pytest.approx(7 * 7 * DSV3_PER_LAYER, rel=1e-9), 7)
    # nothing re-sent: the 4 all-to-alls of no recomputation
    step = _json(run, "step", *DSV3)
    none = _json(run, "step", *[x if x != "selective" else "none" for x in DSV3])
    assert step["ep_comm_s"] == pytest.approx(none["ep_comm_s"], rel=1e-12)


def test_qwen3_resends_the_all_to_alls(run):
    step = _json(run, "step", *QWEN)
    assert step["physics_profile"]["applied"]["sac_saves_ep_all_to_all"] == 0
    # 6 all-to-alls x 48 MoE layers x 1 micro-batch = 0.093677 s
    assert step["ep_comm_s"] == pytest.approx(6 * 48 * QWEN_A2A, rel=1e-6)
    assert step["ep_comm_s"] == pytest.approx(0.0936769, rel=1e-5)
    kept = _json(run, "step", *QWEN, "--assume", "sac_saves_ep_all_to_all=1")
    assert kept["ep_comm_s"] == pytest.approx(4 * 48 * QWEN_A2A, rel=1e-6)
    # and keeps nothing for them: saving them would hold 48 layers x 2 x 134,217,728 bytes
    mem = _json(run, "memory", *QWEN)["per_gpu"]["activations_bytes"]
    mem_kept = _json(run, "memory", *QWEN, "--assume",
                     "sac_saves_ep_all_to_all=1")["per_gpu"]["activations_bytes"]
    assert mem_kept - mem == pytest.approx(48 * 2 * 134_217_728, rel=1e-9)


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "gpt-oss-20b"])
def test_ep_1_changes_nothing(run, model):
    argv = (model, "--node", "dgx-h100", "--nodes", 2, "--ep", 1, "--zero", 3, "--framework",
            "torchtitan", "--recompute", "selective", "--global-batch", 16, "--seq-len", 4096)
    for switch in (0, 1):
        a = _json(run, "step", *argv, "--assume", f"sac_saves_ep_all_to_all={switch}")
        b = _json(run, "step", *argv, "--assume", f"sac_saves_ep_all_to_all={1 - switch}")
        assert a["ep_comm_s"] == 0
        assert (a["step_time_s"], a["gpu_memory_bytes"]) == (b["step_time_s"],
                                                             b["gpu_memory_bytes"])


def test_plan_agrees_with_step_and_memory(run):
    plan = _json(run, "plan", *QWEN, "--offloads", "none", "--interleave", 1)
    step = _json(run, "step", *QWEN)
    top = plan["candidates"][0]
    assert (top["ep"], top["recompute"]) == (8, "selective")
    assert top["step_time_s"] == pytest.approx(step["step_time_s"], rel=1e-9)
    assert top["gpu_memory_bytes"] == pytest.approx(step["gpu_memory_bytes"], rel=1e-9)
    # DeepSeek-V3 fits nowhere here: the plan's smallest need is memory's total
    plan = _json(run, "plan", *DSV3, "--offloads", "none", "--interleave", 1)
    mem = _json(run, "memory", *DSV3)
    assert plan["feasible"] == 0
    assert plan["smallest_gpu_memory_bytes"] == pytest.approx(mem["per_gpu"]["total_bytes"],
                                                              rel=1e-9)
