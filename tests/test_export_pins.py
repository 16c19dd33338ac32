"""Exported framework settings no other test pinned: each test kills a mutant that survived the
sampled mutation run of 2026-11-26 (docs/hardening.md, "Mutation score"), checked by applying
the mutation by hand and seeing the test fail."""

import json
from pathlib import Path

from optimus_calc.frameworks import Framework, Reason, layout_support
from optimus_calc.frameworks.deepspeed_export import deepspeed_config_dict
from optimus_calc.frameworks.megatron_deepspeed_export import launch_args
from optimus_calc.frameworks.megatron_export import megatron_arg_list
from optimus_calc.frameworks.torchtitan_export import torchtitan_sections
from optimus_calc.specs.training import Layout, Precision, Training

OPTIONS = json.loads((Path(__file__).parent / "data" / "framework_options.json").read_text())


def test_deepspeed_bf16_training_enables_the_bf16_block(cat):
    # DeepSpeed trains in bf16 only with {"bf16": {"enabled": true}} (runtime/config.py reads
    # bf16.enabled, default false); deepspeed_export.py _precision_and_optimizer
    m = cat.get("llama-3-8b", "model")
    cfg = deepspeed_config_dict(Layout(tp=1, pp=1, dp=8, zero=1),
                                Training(seq_len=4096, global_batch=64,
                                         precision=Precision.BF16), m)
    assert cfg["bf16"] == {"enabled": True}
    assert "fp16" not in cfg


def test_megatron_deepspeed_sequence_parallel_needs_tensor_parallelism(cat):
    # sequence parallelism splits the LayerNorm/dropout activations over the TP group
    # (Korthikanti et al. 2022, sec. 4.2.2): with TP 1 the export leaves the switch out
    m = cat.get("llama-3-8b", "model")
    tr = Training(seq_len=4096, global_batch=64, sequence_parallel=True)
    one, _ = launch_args(Layout(tp=1, pp=1, dp=8, zero=1), tr, m)
    two, _ = launch_args(Layout(tp=2, pp=1, dp=4, zero=1), tr, m)
    assert "--sequence-parallel" not in one.split()
    assert "--sequence-parallel" in two.split()


def test_megatron_top2_router_keeps_the_softmax_after_top_k(cat):
    # Mixtral routes top-2 and normalises the two chosen weights (softmax over the chosen
    # logits), Megatron's default (moe_router_pre_softmax False); only top-1 needs the softmax
    # over all experts first (transformer_config.py L2661-2669, megatron_export.py _moe)
    m = cat.get("mixtral-8x7b", "model")
    assert m.top_k == 2
    lay, tr = Layout(tp=2, pp=1, dp=8, ep=8, zero=1), Training(seq_len=4096, global_batch=64)
    assert layout_support(lay, tr, m)[Framework.MEGATRON] is Reason.OK
    args = dict(megatron_arg_list(lay, tr, m, 8)[0])
    assert args["--moe-router-topk"] == "2" and args["--num-experts"] == "8"
    assert "--moe-router-pre-softmax" not in args


def test_megatron_interleaved_schedule_with_micro_batches_not_a_multiple_of_pp(cat):
    # llama-3-8b, 32 layers, PP 4 x interleave 2: 32 / 8 = 4 layers per virtual stage;
    # global batch 12 / (DP 2 x micro-batch 1) = 6 micro-batches, not a multiple of PP 4, so one
    # group of all 6 (schedules.py L1160-1178); the flag exists at the pinned Megatron commit
    m = cat.get("llama-3-8b", "model")
    lay = Layout(tp=1, pp=4, dp=2, interleave=2, zero=1)
    tr = Training(seq_len=4096, global_batch=12, micro_batch=1)
    assert layout_support(lay, tr, m)[Framework.MEGATRON] is Reason.OK
    args = dict(megatron_arg_list(lay, tr, m, 8)[0])
    assert args["--num-layers-per-virtual-pipeline-stage"] == "4"
    assert args["--microbatch-group-size-per-virtual-pipeline-stage"] == "6"
    assert all(flag in OPTIONS["megatron"]["flags"] for flag in args)


def test_torchtitan_replicates_at_zero0_and_shards_at_zero3(cat):
    # ZeRO-0 is plain data parallelism: DP 8 replicas, shard degree 1
    # (data_parallel_replicate_degree, torchtitan job_config.py L313 at the pinned commit);
    # ZeRO-3 is FSDP over the 8: replicate 1, shard 8 (data_parallel_shard_degree, L324)
    m = cat.get("llama-3-8b", "model")
    tr = Training(seq_len=4096, global_batch=64)
    zero0, _ = torchtitan_sections(Layout(tp=1, pp=1, dp=8, zero=0), tr, m)
    zero3, _ = torchtitan_sections(Layout(tp=1, pp=1, dp=8, zero=3), tr, m)
    p0, p3 = zero0["parallelism"], zero3["parallelism"]
    assert (p0["data_parallel_replicate_degree"], p0["data_parallel_shard_degree"]) == (8, 1)
    assert "fsdp_reshard_after_forward" not in p0
    assert (p3["data_parallel_replicate_degree"], p3["data_parallel_shard_degree"]) == (1, 8)
    assert p3["fsdp_reshard_after_forward"] == "always"


def test_torchtitan_exports_expert_parallelism_of_two(cat):
    # qwen3-30b-a3b (128 experts) with EP 2: expert_parallel_degree 2 (job_config.py L454);
    # torchtitan's default is 1, so leaving it out would train without EP
    m = cat.get("qwen3-30b-a3b", "model")
    lay, tr = Layout(tp=1, pp=1, dp=8, ep=2, zero=3), Training(seq_len=4096, global_batch=64)
    sec, _ = torchtitan_sections(lay, tr, m)
    assert sec["parallelism"]["expert_parallel_degree"] == 2
