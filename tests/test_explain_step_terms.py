"""`explain` of a step term by default shows the value `step`'s breakdown is made of (rev13c).
Failed on the code before the fix: the CP ring's attention-core time (computed for every layout,
recorded with no scope) was compute.compute_time's last call, so `explain compute.compute_time`
showed 6.294 s against `step`'s 58.17 s compute on the same layout, with "shown: " naming nothing."""

from __future__ import annotations

import pytest

LAYOUT = ("llama-2-7b", "--node", "dgx-a100", "--nodes", "1")


def _explain(run, *extra):
    r = run("explain", "compute.compute_time", *LAYOUT, *extra, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_compute_time_shows_the_backward_pass_step_adds(run):
    step = run("step", *LAYOUT, "--format", "json").json()
    back, fwd = _explain(run), _explain(run, "--for", "forward")
    # without recomputation the backward executes twice the forward's FLOPs (Narayanan et al.
    # 2021 section 5.1), at the same layer efficiency, on the A100's 312 TFLOP/s bf16 peak
    assert back["values"]["FLOPs"] == pytest.approx(2 * fwd["values"]["FLOPs"], rel=1e-9)
    assert back["values"]["peak"] == fwd["values"]["peak"] == 312e12
    for x in (back, fwd):
        assert x["result"] == pytest.approx(
            x["values"]["FLOPs"] / (312e12 * x["values"]["eta_g"]), rel=1e-9)
    # step's "compute (GEMMs at peak x efficiency)" row is the two passes' sum
    assert step["compute_s"] == pytest.approx(back["result"] + fwd["result"], rel=1e-9)


def test_attention_core_time_is_named(run):
    # the attention core alone (what a CP ring hides), by hand: TP 8 on one node, DP 1, the
    # global batch 512 x 4096 tokens; causal forward 4 s h / 2 FLOPs per token and layer:
    # 2 x 4096 x 4096 x 32 layers / TP 8 x 2,097,152 tokens = 2.81475e14, the backward twice
    # that, 8.44425e14 in all, at FA2's catalog 0.43 on the A100: / (312e12 x 0.43) = 6.2942 s
    att = _explain(run, "--for", "attention core")
    assert att["values"]["FLOPs"] == pytest.approx(3 * 2 * 4096 * 4096 * 32 / 8 * 512 * 4096,
                                                   rel=1e-9)
    assert att["values"]["eta_g"] == pytest.approx(0.43)
    assert att["result"] == pytest.approx(6.2942, rel=1e-4)
    r = run("explain", "compute.compute_time", *LAYOUT)
    assert "evaluated for forward, attention core, backward; shown: backward" in " ".join(
        r.out.split())


def test_explain_names_the_framework_profile_its_values_come_from(run):
    # the same equation under two profiles: Megatron-LM's overlaps the gradient reduction and
    # the parameter gather (dp_reduce_overlap = dp_gather_overlap = 1, the recipes' launch
    # flags); DeepSpeed's ZeRO-0 all-reduces after the backward (0, 0); each says whose values
    args = ("explain", "step.dp_exposed_time", "llama-3-8b", "--node", "dgx-h100")
    mg = run(*args, "--framework", "megatron", "--format", "json").json()
    ds = run(*args, "--framework", "deepspeed", "--format", "json").json()
    # the same key as step's and memory's (report/common.framework_data)
    assert (mg["physics_profile"]["framework"], ds["physics_profile"]["framework"]) == (
        "megatron", "deepspeed")
    assert mg["physics_profile"]["applied"]["dp_reduce_overlap"] == 1
    assert (mg["values"]["o_dr"], mg["values"]["o_pg"]) == (1.0, 1.0)
    assert (ds["values"]["o_dr"], ds["values"]["o_pg"]) == (0.0, 0.0)
    text = run(*args, "--framework", "megatron").out
    assert "values under the Megatron-LM profile (--framework megatron)" in text
    assert "values under the framework-neutral parameters" in run(*args).out


@pytest.mark.parametrize("name, model, node, why", [
    # A100 lists no head-dim ratio (catalog attention_head_dim64): the kernel keeps its fit
    ("efficiency.head_dim_attention_efficiency", "llama-3-8b", "dgx-a100",
     "it runs only where the GPU's catalog entry lists head-dim ratios"),
    # Llama 3 has no YaRN scaling
    ("compute.rope_bytes", "llama-3-8b", "dgx-h100", "it runs only for a model with a YaRN"),
    ("compute.moe_router_bytes", "llama-3-8b", "dgx-h100",
     "it runs only for an MoE model (this one is dense)"),
    # step's table cites it on every step; it runs only with the weights offloaded
    ("offload.param_stream_exposed", "llama-3-8b", "dgx-h100",
     "it runs only when the weights are offloaded (--offload-params"),
])
def test_explain_says_why_a_conditional_equation_did_not_run(run, name, model, node, why):
    # round 18: these said "not evaluated for this configuration (e.g. step time with
    # --model-states-only ...)", which names none of their conditions
    r = run("explain", name, model, "--node", node)
    assert r.code == 2 and "\n" not in r.err.strip()
    assert r.err.startswith(f"error: {name} is not evaluated for this configuration: {why}")


def test_the_condition_is_named_only_when_the_inputs_miss_it(run):
    # H100 lists head-dim ratios: with --model-states-only nothing of the step runs, and the
    # message is the generic one, not a wrong "the GPU lists no ratios" (review)
    r = run("explain", "efficiency.head_dim_attention_efficiency", "llama-3-8b", "--node",
            "dgx-h100", "--model-states-only")
    assert r.code == 2 and "(e.g. step time with --model-states-only" in r.err
    assert "head-dim ratios" not in r.err


def test_the_head_dim_condition_names_flash_attention_off(run):
    # H100 lists ratios, but without FlashAttention the unfused core runs: the condition's
    # "and FlashAttention is on" is what the inputs miss (review)
    r = run("explain", "efficiency.head_dim_attention_efficiency", "llama-3-8b", "--node",
            "dgx-h100", "--no-flash-attn")
    assert r.code == 2 and "and FlashAttention is on" in r.err
