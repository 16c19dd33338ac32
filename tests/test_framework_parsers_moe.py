"""megatron-core's TransformerConfig on the MoE flags of the Megatron-LM export (`make
test-frameworks`, docs/frameworks.md): its __post_init__ checks them as Megatron-LM would at
start-up."""

import re

import pytest

from test_framework_parsers import _export, _need


def _config(run, tmp_path, *args):
    """(the TransformerConfig class, the export's text, the MoE keyword arguments it gives)."""
    _need("megatron.core.transformer.transformer_config")
    from megatron.core.transformer.transformer_config import TransformerConfig
    text = _export(run, tmp_path, *args, "--framework", "megatron", "--export", "megatron")

    def flag(name):
        return re.search(rf"--{name}\s+(\S+)", text).group(1)
    kw = dict(num_layers=int(flag("num-layers")), hidden_size=int(flag("hidden-size")),
              num_attention_heads=int(flag("num-attention-heads")),
              num_moe_experts=int(flag("num-experts")),
              moe_router_topk=int(flag("moe-router-topk")),
              expert_model_parallel_size=int(flag("expert-model-parallel-size")))
    return TransformerConfig, text, flag, kw


def test_megatron_core_takes_the_exported_token_drop(run, tmp_path):
    """The Megatron-LM export's token drop on Qwen3-30B-A3B (EP 8), its MoE flags given to
    megatron-core's TransformerConfig, whose __post_init__ checks them (transformer_config.py
    L1836-1850 @ d98e8a6: the padding needs a capacity factor, the capacity factor the default
    aux_loss balancing): accepted as written, refused without the capacity factor."""
    TransformerConfig, text, flag, kw = _config(
        run, tmp_path, "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", 1, "--ep", 8, "--tp", 1,
        "--pp", 1, "--moe-pad-expert-input-to-capacity")
    kw.update(moe_ffn_hidden_size=int(flag("moe-ffn-hidden-size")),
              moe_token_dispatcher_type=flag("moe-token-dispatcher-type"),
              moe_pad_expert_input_to_capacity="--moe-pad-expert-input-to-capacity" in text)
    c = TransformerConfig(**kw, moe_expert_capacity_factor=float(
        flag("moe-expert-capacity-factor")))
    assert (c.moe_expert_capacity_factor, c.moe_pad_expert_input_to_capacity,
            c.moe_token_dispatcher_type, c.expert_model_parallel_size) == (1.0, True,
                                                                             "alltoall", 8)
    with pytest.raises(ValueError, match="moe_expert_capacity_factor must be set"):
        TransformerConfig(**kw)


def test_megatron_core_takes_the_exported_group_limited_routing(run, tmp_path):
    """DeepSeek-V3's router as the Megatron-LM export writes it from the model (8 groups, 4 a
    token, scaling 2.5, sigmoid scores with the expert bias), given to megatron-core's
    TransformerConfig, whose __post_init__ checks the groups (transformer_config.py L2671-2688
    @ d98e8a6: the experts divisible by the groups, at most that many a token)."""
    TransformerConfig, text, flag, kw = _config(
        run, tmp_path, "deepseek-v3", "--node", "dgx-h100", "--nodes", 32, "--pp", 4, "--ep", 64,
        "--tp", 1, "--moe-dispatcher", "deepep")
    kw.update(moe_router_num_groups=int(flag("moe-router-num-groups")),
              moe_router_group_topk=int(flag("moe-router-group-topk")),
              moe_router_topk_scaling_factor=float(flag("moe-router-topk-scaling-factor")),
              moe_router_score_function=flag("moe-router-score-function"),
              moe_router_enable_expert_bias="--moe-router-enable-expert-bias" in text)
    c = TransformerConfig(**kw)
    assert (c.moe_router_num_groups, c.moe_router_group_topk, c.moe_router_topk_scaling_factor,
            c.num_moe_experts) == (8, 4, 2.5, 256)
    with pytest.raises(AssertionError, match="moe_router_group_topk"):
        TransformerConfig(**{**kw, "moe_router_group_topk": 9})
