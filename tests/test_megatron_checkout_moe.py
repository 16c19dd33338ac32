"""Megatron-LM's own ``validate_args`` and ``TransformerConfig`` on the MoE launch flags of the
Megatron-LM exports (--overlap-moe-expert-parallel-comm, --moe-pad-expert-input-to-capacity,
--moe-dispatcher, --cuda-graph-impl full_iteration): like tests/test_megatron_checkout.py,
from a Megatron-LM checkout at d98e8a64 on PYTHONPATH, outside CI; skipped without one."""

import pytest

from test_framework_parsers import _export
from test_megatron_checkout import CPU_LACKS, HF, _megatron_validate, megatron  # noqa: F401

# ---- --overlap-moe-expert-parallel-comm ---------------------------------------------------

EP_OVERLAP = ("qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", 2, "--ep", 8, "--tp", 1,
              "--framework", "megatron", "--overlap-moe-expert-parallel-comm")
WITH_EP_OVERLAP = "  --overlap-moe-expert-parallel-comm\n"


def _megatron_config(args):
    """The TransformerConfig pretrain_gpt.py's model builder makes of the validated arguments
    (gpt_builders.py through argument_utils.py core_transformer_config_from_args), with the
    job's real TP/PP/EP: its __post_init__ runs transformer_config.py L3002-3041 (which reads
    none of the kernels the CPU lacks)."""
    import copy
    from megatron.training.argument_utils import core_transformer_config_from_args
    a = copy.deepcopy(args)
    for fused in CPU_LACKS:
        setattr(a, fused, False)
    return core_transformer_config_from_args(a)


@pytest.mark.parametrize("pp,vp", [(1, None), (2, 2)], ids=["pp1", "pp2-interleave2"])
def test_megatron_takes_the_exported_ep_overlap(run, tmp_path, monkeypatch, megatron, pp, vp):
    """Qwen3-30B-A3B on 16 H100 (EP 8): the export writes the overlap with the alltoall
    dispatcher, and with PP 2 the 2 model chunks (48 layers / (2 x 2) = 12 per chunk) it needs;
    validate_args and the TransformerConfig accept both."""
    arguments, _ = megatron
    text = _export(run, tmp_path, *EP_OVERLAP, "--pp", pp, "--interleave", vp or 1,
                   "--recompute", "none", "--export", "megatron")
    assert WITH_EP_OVERLAP.strip() in text  # not last: --cross-entropy-loss-fusion follows
    assert text.count("--moe-token-dispatcher-type alltoall") == 1
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    c = _megatron_config(margs)
    assert c.overlap_moe_expert_parallel_comm and c.moe_token_dispatcher_type == "alltoall"
    assert (c.expert_model_parallel_size, c.pipeline_model_parallel_size,
            c.virtual_pipeline_model_parallel_size) == (8, pp, vp)
    assert c.recompute_granularity is None and c.bf16


@pytest.mark.parametrize("args,why,refusal", [
    (("--pp", 2, "--interleave", 1, "--recompute", "none"),
     "PP > 1 needs an interleaved schedule", "virtual_pipeline_model_parallel_size must be"),
    (("--pp", 1, "--recompute", "full"), "full recompute", "disable full recomputation"),
    (("--pp", 1, "--recompute", "none", "--precision", "fp32"), "FP32",
     "only supported with bf16 or fp16"),
], ids=["pp2-no-interleave", "full-recompute", "fp32"])
def test_megatron_refuses_the_ep_overlap_where_the_export_leaves_it_out(
        run, tmp_path, monkeypatch, megatron, args, why, refusal):
    """The export's note names the reason; its script is accepted as written, and the same
    script with the overlap added by hand is refused by Megatron with that reason."""
    arguments, _ = megatron
    text = _export(run, tmp_path, *EP_OVERLAP, *args, "--export", "megatron")
    assert f"# --overlap-moe-expert-parallel-comm left out: {why}" in text
    margs, argv = _megatron_validate(arguments, monkeypatch, text)
    assert "--overlap-moe-expert-parallel-comm" not in argv
    assert not _megatron_config(margs).overlap_moe_expert_parallel_comm
    forced = text.rstrip("\n") + " \\\n" + WITH_EP_OVERLAP
    with pytest.raises(AssertionError, match=refusal):
        _megatron_config(_megatron_validate(arguments, monkeypatch, forced)[0])


# ---- --moe-pad-expert-input-to-capacity ---------------------------------------------------

@pytest.mark.parametrize("args,ep,overlap", [
    (EP_OVERLAP[:-1], 8, False),
    (EP_OVERLAP, 8, True),
    (("qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", 1, "--ep", 1, "--tp", 1,
      "--framework", "megatron"), 1, False),
    ((str(HF / "deepseek_v3"), "--node", "dgx-h100", "--nodes", 64, "--ep", 64,
      "--framework", "megatron"), 64, False),
], ids=["qwen3-ep8", "qwen3-ep8-ep-overlap", "qwen3-ep1", "deepseek-v3-ep64"])
def test_megatron_takes_the_exported_token_drop(run, tmp_path, monkeypatch, megatron, args, ep,
                                               overlap):
    """The export's token drop (--moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-
    capacity, the alltoall dispatcher written once) passes parse_args + validate_args, and the
    TransformerConfig takes it (transformer_config.py L1836-1850 @ d98e8a6: the default
    aux_loss balancing, the alltoall dispatcher): Qwen3-30B-A3B at EP 8 (alone and with the EP
    overlap) and EP 1, DeepSeek-V3's sigmoid router with its expert bias at EP 64."""
    arguments, _ = megatron
    text = _export(run, tmp_path, *args, "--pp", 1, "--recompute", "none",
                   "--moe-pad-expert-input-to-capacity", "--export", "megatron")
    assert text.count("--moe-token-dispatcher-type alltoall") == 1
    c = _megatron_config(_megatron_validate(arguments, monkeypatch, text)[0])
    assert c.moe_expert_capacity_factor == 1.0 and c.moe_pad_expert_input_to_capacity
    assert (c.moe_token_dispatcher_type, c.expert_model_parallel_size) == ("alltoall", ep)
    assert c.overlap_moe_expert_parallel_comm == overlap


@pytest.mark.parametrize("args,backend,version", [
    (("--attention-kernel", "fa3"), "flash", 3),
    (("--attention-kernel", "fa2"), "flash", 2),
    (("--attention-kernel", "cudnn"), "fused", None),
    (("--no-flash-attn",), "unfused", None),
], ids=["fa3", "fa2", "cudnn", "unfused"])
def test_megatron_takes_the_exported_attention_kernel(run, tmp_path, monkeypatch, megatron,
                                                      args, backend, version):
    """The export pins the kernel the plan assumed (megatron_export.BACKENDS): parse_args and
    validate_args take --attention-backend (transformer_config.py L151, enums.py AttnBackend)
    and --flash-attention-version (L157, L3194-3197), and the TransformerConfig carries them."""
    arguments, _ = megatron
    text = _export(run, tmp_path, "llama-3-8b", "--node", "dgx-h100", "--nodes", "1",
                   "--framework", "megatron", *args, "--export", "megatron")
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    c = _megatron_config(margs)
    assert (c.attention_backend.name, c.flash_attention_version) == (backend, version)


# ---- --moe-dispatcher deepep | hybridep ----------------------------------------------------

@pytest.mark.parametrize("backend,extra", [
    ("deepep", ()), ("hybridep", ()), ("hybridep", ("--overlap-moe-expert-parallel-comm",)),
    ("hybridep", ("--moe-pad-expert-input-to-capacity",)),
], ids=["deepep", "hybridep", "hybridep-ep-overlap", "hybridep-token-drop"])
def test_megatron_takes_the_exported_flex_dispatcher(run, tmp_path, monkeypatch, megatron,
                                                     backend, extra):
    """--moe-dispatcher writes the flex dispatcher with its backend once (transformer_config.py
    L891, L898 @ d98e8a6), with the EP overlap and HybridEP's padding to capacity where
    Megatron takes them (L1754-1761 refuses padding on DeepEP only)."""
    arguments, _ = megatron
    text = _export(run, tmp_path, *EP_OVERLAP[:-1], "--pp", 1, "--recompute", "none",
                   "--moe-dispatcher", backend, *extra, "--export", "megatron")
    assert text.count("--moe-token-dispatcher-type") == 1
    c = _megatron_config(_megatron_validate(arguments, monkeypatch, text)[0])
    assert (c.moe_token_dispatcher_type, c.moe_flex_dispatcher_backend) == ("flex", backend)
    assert c.overlap_moe_expert_parallel_comm == ("--overlap-moe-expert-parallel-comm" in extra)
    assert c.moe_pad_expert_input_to_capacity == ("--moe-pad-expert-input-to-capacity" in extra)


def test_megatron_takes_the_exported_full_iteration_cuda_graph(run, tmp_path, monkeypatch,
                                                               megatron):
    """--cuda-graph-impl full_iteration on Qwen3-30B-A3B with HybridEP: the flags
    docs/user-guide/features/cuda_graph.md L162-182 asks for pass validate_args (arguments.py
    L1237: the NaN check off) and the TransformerConfig (paged stash with its capacity)."""
    arguments, _ = megatron
    text = _export(run, tmp_path, *EP_OVERLAP[:-1], "--pp", 1, "--recompute", "none",
                   "--moe-dispatcher", "hybridep", "--cuda-graph-impl", "full_iteration",
                   "--export", "megatron")
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    assert margs.cuda_graph_impl == "full_iteration" and not margs.check_for_nan_in_loss_and_grad
    c = _megatron_config(margs)
    assert (c.moe_paged_stash, c.moe_expert_rank_capacity_factor) == (True, 1.5)
    assert (c.moe_token_dispatcher_type, c.moe_flex_dispatcher_backend) == ("flex", "hybridep")


# ---- --fp8-param-gather ----------------------------------------------------------------------

@pytest.mark.parametrize("recipe,name,grads", [("te-delayed", "delayed", ()),
                                               ("te-current", "tensorwise", ("--grad-bytes", "2"))])
def test_megatron_takes_the_exported_fp8_parameters(run, tmp_path, monkeypatch, megatron, recipe,
                                                    name, grads):
    """With the distributed optimizer the export writes --fp8-param-gather, as NVIDIA's FP8
    recipes set it (Megatron-Bridge training/mixed_precision.py L218, L289 @ v0.3.0):
    validate_args takes it (arguments.py L1095-1097) and the TransformerConfig carries it as
    fp8_param (L2357)."""
    arguments, _ = megatron
    text = _export(run, tmp_path, "llama-3-8b", "--node", "dgx-h100", "--nodes", "1",
                   "--framework", "megatron", "--precision", "fp8", "--fp8-recipe", recipe,
                   "--zero", "1", *grads, "--export", "megatron")
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    assert (margs.fp8_param_gather, margs.fp8_recipe) == (True, name)
    assert _megatron_config(margs).fp8_param
    # --grad-bytes 2: bf16 gradients, no fp32 accumulation (arguments.py L1213-1214)
    assert margs.accumulate_allreduce_grads_in_fp32 == (not grads)
