"""Where no layout runs, `plan` names a rule every layout breaks before the most frequent first
failure: with torchao FP8 Megatron-LM runs nothing (Transformer Engine recipes only,
megatron/core/transformer/transformer_config.py L587-600), but `plan ... --export megatron`
said "most often, Megatron-LM: offloads only to cpu", the first rule the offloading layouts
broke (a cold review). Failed before the fix."""

from __future__ import annotations


def test_a_rule_every_layout_breaks_is_named(run):
    r = run("plan", "llama70b", "--node", "dgx-h100", "--nodes", 4, "--precision", "fp8",
            "--fp8-recipe", "torchao", "--export", "megatron")
    assert r.code == 2 and r.err.startswith("error: nothing to export: no framework runs")
    assert "not torchao float8" in r.err and "most often" not in r.err
    # a layout rule is still reported as the most frequent one where the permissive layout runs
    ok = run("plan", "llama70b", "--node", "dgx-h100", "--nodes", 4, "--precision", "fp8",
             "--fp8-recipe", "te-delayed", "--export", "megatron")
    assert ok.code == 0, ok.err
