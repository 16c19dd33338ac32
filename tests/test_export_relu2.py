"""Squared-ReLU models (Nemotron-4) in the exports: Megatron-LM builds them from flags the
export writes, torchtitan has no flavour for them (round 25's review)."""

import pytest

from optimus_calc.frameworks.exporting import ExportError
from optimus_calc.frameworks.megatron_export import megatron_arg_list
from optimus_calc.frameworks.torchtitan_export import flavour_of, torchtitan_sections
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Layout, Training

_TR = Training(seq_len=2048, global_batch=64)


def _variant(m: Model, **changes) -> Model:
    """``m`` with ``changes``, validated as a catalog entry would be."""
    return Model.model_validate({**m.model_dump(), **changes})


def test_squared_relu_exports_megatron_builds(cat):
    # Megatron-LM d98e8a6: --squared-relu sets activation_func squared_relu (training/
    # argument_utils.py L320-322); bias-GeLU fusion is on by default (arguments.py L2892) and
    # off only with --disable-bias-linear (L1605-1606), and TransformerConfig refuses it with
    # squared ReLU (transformer_config.py L2420-2425): the export turns it off itself
    base = cat.get("llama-3-8b", "model")
    biased = _variant(base, name="relu2-biased", ffn_type="relu2", mlp_bias=True,
                      attention_bias=True, attention_out_bias=True)
    args = dict(megatron_arg_list(Layout(tp=1, pp=1, dp=8, zero=1), _TR, biased, 8)[0])
    assert "--squared-relu" in args and "--no-bias-gelu-fusion" in args
    assert "--swiglu" not in args and "--disable-bias-linear" not in args
    # under a full-iteration graph an MoE layer's fused grouped MLP asserts it is supported,
    # which for squared ReLU needs use_fused_weighted_squared_relu (moe/experts.py L287-289,
    # L417-421; transformer_config.py L516)
    moe = _variant(cat.get("qwen3-30b-a3b", "model"), name="relu2-moe", ffn_type="relu2")
    tr = _TR.model_copy(update=dict(cuda_graph_full_iteration=True))
    lay = Layout(tp=1, pp=1, dp=8, ep=8, zero=1)
    args = dict(megatron_arg_list(lay, tr, moe, 8)[0])
    assert "--use-transformer-engine-op-fuser" in args
    assert "--use-fused-weighted-squared-relu" in args
    # Nemotron-4's half-rotary RoPE and zero-centred LayerNorm gamma (NeMo nemotron.py L46,
    # L50 @ 8e3d65dcfe) as Megatron's flags
    n = cat.get("nemotron-4-340b", "model")
    args = dict(megatron_arg_list(Layout(tp=1, pp=1, dp=8, zero=1), _TR, n, 8)[0])
    assert args["--rotary-percent"] == "0.5" and "--apply-layernorm-1p" in args


def test_torchtitan_has_no_flavour_for_another_mlp_of_a_flavours_shape(cat):
    # every torchtitan flavour's MLP is SwiGLU (llama3/model/model.py L343 @ 73a0e697): a
    # squared-ReLU model with Llama 3 8B's shape is not the llama3 8B flavour
    r2 = _variant(cat.get("llama-3-8b", "model"), name="r2", ffn_type="relu2")
    assert flavour_of(cat.get("llama-3-8b", "model"))[:2] == ("llama3", "8B")
    assert flavour_of(r2) is None
    with pytest.raises(ExportError, match="no model flavour"):
        torchtitan_sections(Layout(tp=1, pp=1, dp=8, zero=3), _TR, r2)
