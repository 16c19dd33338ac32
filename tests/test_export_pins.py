"""Exported framework settings (and a refusal's source) no other test pinned: each test kills a
mutant that survived the sampled mutation run of 2026-11-26 (docs/hardening.md, "Mutation
score"), checked by applying the mutation by hand and seeing the test fail."""

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


def test_megatron_deepspeed_writes_zero_dropout_when_training_without_it(cat):
    # Training(dropout=False): both rates 0.0, written as values (Megatron-DeepSpeed's own
    # defaults are 0.1, arguments.py L768-771, so leaving them out would train with dropout)
    m = cat.get("llama-3-8b", "model")
    words, _ = launch_args(Layout(tp=1, pp=1, dp=8, zero=1),
                           Training(seq_len=4096, global_batch=64, dropout=False), m)
    w = words.split()
    assert w[w.index("--attention-dropout") + 1] == "0.0"
    assert w[w.index("--hidden-dropout") + 1] == "0.0"


def test_megatron_gpt_oss_attention_sinks_use_the_learnable_softmax(cat):
    # gpt-oss's attention sinks: --softmax-type learnable, one of the choices at the pinned
    # commit (transformer_config.py L170: vanilla, off-by-one, learnable)
    m = cat.get("gpt-oss-20b", "model")
    lay, tr = Layout(tp=1, pp=1, dp=8, ep=8, zero=1), Training(seq_len=4096, global_batch=64)
    args = dict(megatron_arg_list(lay, tr, m, 8)[0])
    assert args["--softmax-type"] == "learnable"
    assert args["--softmax-type"] in OPTIONS["megatron"]["flags"]["--softmax-type"]["choices"]


def test_megatron_rope_model_keeps_its_own_context_as_max_positions(cat):
    # llama-3-8b (RoPE, 8,192-token context) trained at 4,096: max(8192, 4096) = 8192
    m = cat.get("llama-3-8b", "model")
    args = dict(megatron_arg_list(Layout(tp=1, pp=1, dp=8, zero=1),
                                  Training(seq_len=4096, global_batch=64), m, 8)[0])
    assert args["--position-embedding-type"] == "rope"
    assert args["--max-position-embeddings"] == "8192"


def test_torchtitan_float8_all_gather_only_where_fsdp_shards(cat):
    # torchao float8 with FSDP: the float8 all-gather and the precomputed scales apply where
    # FSDP shards the weights (torchtitan docs/float8.md); over DP 1 there is no FSDP (ZeRO-0)
    m = cat.get("llama-3-8b", "model")
    tr = Training(seq_len=4096, global_batch=64, precision=Precision.FP8, fp8_recipe="torchao")
    one, _ = torchtitan_sections(Layout(tp=8, pp=1, dp=1, zero=0), tr, m)
    eight, _ = torchtitan_sections(Layout(tp=1, pp=1, dp=8, zero=3), tr, m)
    f1, f8 = one["quantize"]["linear"]["float8"], eight["quantize"]["linear"]["float8"]
    keys = ("enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp")
    assert [f1[k] for k in keys] == [False, False]
    assert [f8[k] for k in keys] == [True, True]


def test_megatron_fsdp_meta_device_init_only_at_zero3(cat):
    # Megatron-FSDP (arguments.py L1118-1135): ZeRO-2 = optim_grads, ZeRO-3 =
    # optim_grads_params, which alone shards the parameters and so initialises them on the
    # meta device (megatron_export.py _zero_precision)
    m = cat.get("llama-3-70b", "model")
    tr = Training(seq_len=4096, global_batch=64)
    z3 = dict(megatron_arg_list(Layout(tp=2, pp=1, dp=8, zero=3), tr, m, 8)[0])
    z2 = dict(megatron_arg_list(Layout(tp=2, pp=1, dp=8, zero=2), tr, m, 8)[0])
    assert z3["--data-parallel-sharding-strategy"] == "optim_grads_params"
    assert "--init-model-with-meta-device" in z3
    assert z2["--data-parallel-sharding-strategy"] == "optim_grads"
    assert "--init-model-with-meta-device" not in z2


def test_export_names_offered_for_the_frameworks_that_run_a_plan():
    # each framework's --export (Megatron-DeepSpeed writes DeepSpeed's config), in
    # export_choices order, only for the frameworks named
    from optimus_calc.frameworks import exports_for
    assert exports_for(["megatron"]) == ["megatron"]
    assert exports_for(["megatron-deepspeed"]) == ["deepspeed"]
    assert exports_for(["torchtitan", "deepspeed"]) == ["deepspeed", "torchtitan"]


def test_a_reason_names_its_rules_source():
    # the source of Megatron-LM's interleaving rule (frameworks/megatron.py MG_INTERLEAVE_MICRO);
    # OK cites nothing
    assert Reason.MG_INTERLEAVE_MICRO.source == "core/pipeline_parallel/schedules.py L1160-1168"
    assert Reason.OK.source == ""
