"""The pipeline split each framework runs (evaluate/shapes.split_layers): DeepSpeed's pipeline
engine (and Megatron-DeepSpeed's GPTModelPipe on it) cuts the transformer layers with
PipelineModule's partition_method 'type:<layer class>', the extra layers on the first stages,
where framework-neutral physics, Megatron-LM and torchtitan put them on the last stages or count
the embedding and the loss as a layer each. The DeepSpeed profile sets
pipeline_extra_layers_first; memory, step, plan and the DeepSpeed exports follow it."""

from __future__ import annotations

import json

import pytest

from optimus_calc.evaluate.shapes import split_layers, stage_shapes
from optimus_calc.public_cases_mds import bloom_rows
from optimus_calc.validate_public import setup


@pytest.mark.parametrize("layers,pp,deepspeed,neutral", [
    # DeepSpeed's partition_balanced (runtime/utils.py L627-665 @ edaa722) run on binary weights
    # (embedding 0, the layers 1 each, final norm and head 0) gives these; by hand: 30 = 4 x 7
    # + 2, the two extra layers on stages 0 and 1 (the neutral split: 30 + 2 = 4 x 8, the
    # embedding and the loss one slot each on the first and the last stage)
    (30, 4, [8, 8, 7, 7], [7, 8, 8, 7]),
    (31, 4, [8, 8, 8, 7], [7, 8, 8, 8]),
    (32, 3, [11, 11, 10], [10, 11, 11]),
    # 126 + 2 = 16 x 8: the neutral split counts the embedding and the loss (Megatron-LM's
    # account_for_embedding/loss_in_pipeline_split); DeepSpeed's 'type:' weights do not
    (126, 16, [8] * 14 + [7, 7], [7] + [8] * 14 + [7]),
    (70, 12, [6] * 10 + [5, 5], [5] + [6] * 10 + [5]),
    (32, 4, [8] * 4, [8] * 4),
])
def test_split_layers_extra_first_is_deepspeeds_type_partition(layers, pp, deepspeed, neutral):
    assert split_layers(layers, pp, extra_first=True) == deepspeed
    assert split_layers(layers, pp) == neutral
    assert sum(deepspeed) == layers


def _memory(run, *extra) -> dict:
    r = run("memory", "llama-2-7b", "--nodes", 3, "--pp", 3, "--zero", 1, "--format", "json",
            *extra)
    assert r.code == 0, r.err
    return r.json()


def test_deepspeed_profile_puts_the_extra_layers_on_the_first_stage(run):
    d = _memory(run, "--framework", "deepspeed")
    stages = d["stages"]
    assert [s["layers"] for s in stages] == [11, 11, 10]
    # llama-2-7b: a layer 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 = 202,383,360 parameters,
    # the embedding 32,000 x 4096 = 131,072,000; stage 0 holds 11 layers and the embedding:
    # 2,226,216,960 + 131,072,000 = 2,357,288,960; stage 2 10 layers, the final norm and the
    # head: 2,023,833,600 + 4,096 + 131,072,000 = 2,154,909,696
    assert stages[0]["params"] == pytest.approx(2_357_288_960, abs=1)
    assert stages[2]["params"] == pytest.approx(2_154_909_696, abs=1)
    # 1F1B: the first stage holds PP = 3 micro-batches, the last one
    assert [s["micro_batches_in_flight"] for s in stages] == [3, 2, 1]
    # the most loaded GPU is the first stage, with the extra layer and the most in flight
    assert d["per_gpu"]["total_bytes"] == pytest.approx(stages[0]["total_bytes"], rel=1e-12)


def test_typed_assumption_restores_the_neutral_split(run):
    typed = _memory(run, "--framework", "deepspeed", "--assume", "pipeline_extra_layers_first=0")
    assert [s["layers"] for s in typed["stages"]] == [10, 11, 11]
    ds = _memory(run, "--framework", "deepspeed")
    # the first stage's extra layer, in its weights (2 bytes each) and more activations
    assert (ds["stages"][0]["weights_bytes"] - typed["stages"][0]["weights_bytes"]
            == pytest.approx(2 * 202_383_360, abs=1))
    assert ds["per_gpu"]["total_bytes"] > typed["per_gpu"]["total_bytes"]


def test_bloom_row_keeps_its_embedding_split(cat):
    # the run's --pp-partition-method 'type:transformer|embedding' (tr11-176B-ml.slurm L104):
    # 70 layers + 2 embeddings = 12 x 6, so 5, 6 x 10, 5; the row types the assumption off
    s = setup(cat, bloom_rows()[0])
    assert s.asm.pipeline_extra_layers_first == 0
    layers = [sh.layers for sh in stage_shapes(s.model, 12, 1,
                                               s.asm.pipeline_extra_layers_first > 0)]
    assert layers == [5] + [6] * 10 + [5]


@pytest.mark.parametrize("framework,extra,needle", [
    ("deepspeed", (), "partition_method='type:<the class name of your transformer block>'"),
    ("megatron-deepspeed", ("--tp", 2), "partition_method 'type:transformer'"),
])
def test_deepspeed_exports_say_the_split_the_plan_assumed(run, tmp_path, framework, extra,
                                                          needle):
    out = tmp_path / "ds_config.json"
    r = run("plan", "llama-2-7b", "--nodes", 3, "--pp", 3, "--zero", 1, "--framework",
            framework, *extra, "--export", "deepspeed", "-o", out)
    assert r.code == 0, r.err
    notes = json.loads(out.read_text())["_launch"]["notes"]
    split = [n for n in notes if n.startswith("pipeline split")]
    assert len(split) == 1 and needle in split[0] and "[11, 11, 10]" in split[0]


def _export(run, tmp_path, *args) -> str:
    out = tmp_path / "export.out"
    r = run("plan", "--nodes", 3, "--pp", 3, "--tp", 1, "--zero", 1, *args, "-o", out)
    assert r.code == 0, r.err
    return out.read_text()


def test_deepspeed_export_says_when_the_plan_evaluated_another_split(run, tmp_path):
    # the typed assumption makes the plan evaluate 10, 11, 11, which no partition_method of
    # PipelineModule makes: the note says so instead of "as the plan assumed"
    text = _export(run, tmp_path, "llama-2-7b", "--framework", "deepspeed", "--assume",
                   "pipeline_extra_layers_first=0", "--export", "deepspeed")
    note = [n for n in json.loads(text)["_launch"]["notes"] if n.startswith("pipeline split")]
    assert len(note) == 1
    assert "the plan evaluated [10, 11, 11]" in note[0] and "[11, 11, 10]" in note[0]
    assert "as the plan assumed" not in note[0]


def test_megatron_and_torchtitan_exports_pin_the_evaluated_split(run, tmp_path):
    # Megatron-LM pins any split with --pipeline-model-parallel-layout (E: embedding, t: a
    # layer, L: the loss); the plan evaluated 11, 11, 10 under the typed assumption
    text = _export(run, tmp_path, "llama-2-7b", "--framework", "megatron", "--assume",
                   "pipeline_extra_layers_first=1", "--export", "megatron")
    assert "--pipeline-model-parallel-layout 'Et*11|t*11|t*10L'" in text
    neutral = _export(run, tmp_path, "llama-2-7b", "--framework", "megatron", "--export",
                      "megatron")
    assert "--pipeline-model-parallel-layout 'Et*10|t*11|t*11L'" in neutral
    # torchtitan names each stage's modules: the first stage the embedding and layers 0-10
    toml = _export(run, tmp_path, "llama-3-8b", "--framework", "torchtitan", "--assume",
                   "pipeline_extra_layers_first=1", "--export", "torchtitan")
    line = next(x for x in toml.splitlines() if x.startswith("module_fqns_per_model_part"))
    first = line.split("], [")[0]
    assert first.count('"layers.') == 11 and '"layers.10"' in first and '"layers.11"' not in first


def test_the_switch_refuses_values_between(run):
    # a switch, as the other on/off assumptions: 0.5 is neither split
    r = run("memory", "llama-2-7b", "--nodes", 3, "--pp", 3, "--zero", 1, "--assume",
            "pipeline_extra_layers_first=0.5")
    assert r.code == 2 and "pipeline_extra_layers_first: must be 0 or 1 (a switch)" in r.err
