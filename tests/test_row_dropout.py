"""validate runs each public row with the dropout of the run it scores: the model's own config,
as `step` reads it (inputs.dropout_of), unless the row's source says otherwise. Before, every
row ran with dropout masks (Training's default), which no Llama, MPT or NeMo GPT-3 175B run has."""

from optimus_calc.equations import compiled as eq
from optimus_calc.public_cases import public_rows
from optimus_calc.validate_public import setup


def _row(label_start):
    return next(r for r in public_rows() if r.label.startswith(label_start))


def test_mpt_rows_store_no_dropout_masks(cat):
    # MPTConfig resid/emb/attn pdrop default 0.0 (configuration_mpt.py L37-38 @ 8c8dd48)
    s = setup(cat, _row("MPT-3B seq 8192, 8 x H100 80GB BF16, micro-batch 3"))
    assert s.training.dropout is False
    # Korthikanti et al. 2022 eq. 2 with FlashAttention, no TP, no recompute: 34 s b h bytes
    # with dropout, minus the two 1-byte s b h masks (attention output, MLP output) = 32 s b h;
    # MPT-3B: s 8192, b 3, h 2560 -> 32 x 8192 x 3 x 2560 = 2,013,265,920 bytes
    got = float(eq.memory__activation_layer_bytes(
        a=s.model.heads, b=3, c=1, d=int(s.training.dropout), h=s.model.hidden, s=8192, t=1,
        sigma=0, phi=1, r=0, q_c=8, m_c=16, iota=1, x_c=0))
    assert abs(got - 2_013_265_920) < 1


def test_rows_follow_their_sources_dropout(cat):
    # Llama 3 has none in its config (catalog llama-3-8b); FlashAttention-2's GPT-3 runs use
    # GPT2Config's 0.1 (gpt3s-flash.yaml, fused_dropout_add_ln); NeMo's GPT-3 175B sets 0.0
    # (GPTConfig175B, base.py L550-551 @ 8cfedd7) although the catalog's gpt3-175b assumes 0.1
    assert setup(cat, _row("Llama 3.1 8B FSDP 8, 8 GPUs")).training.dropout is False
    assert setup(cat, _row("gpt3-1.3b seq 2k, FlashAttention-2")).training.dropout is True
    nemo = _row("H100 GPT3-175B FP8 TP4 PP8 VP6, 512 GPUs")
    assert nemo.dropout is False and setup(cat, nemo).training.dropout is False
    assert cat.get("gpt3-175b", "model").has_dropout
