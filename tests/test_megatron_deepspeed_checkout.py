"""Megatron-DeepSpeed's own ``parse_args`` + ``validate_args`` (megatron/arguments.py at the pinned
commit 4efb479d) on the ``pretrain_gpt.py`` command of the DeepSpeed exports that only
Megatron-DeepSpeed runs. Megatron-DeepSpeed is not packaged, so this runs only from its source
tree on PYTHONPATH, outside CI (docs/frameworks.md); without it every test here is skipped with
that reason. Its tokenizer module imports ``six``, ``regex`` and ``transformers`` when
``megatron.arguments`` is imported; the tests build no tokenizer, so a missing ``transformers``
is stood in for by an empty module.
"""

import importlib.util
import json
import shlex
import sys
import types

import pytest

CHECKOUT = ("needs a Megatron-DeepSpeed checkout at 4efb479d on PYTHONPATH (not packaged; run "
            "outside CI, docs/frameworks.md)")


@pytest.fixture
def mds():
    if "transformers" not in sys.modules and importlib.util.find_spec("transformers") is None:
        sys.modules.setdefault("transformers", types.SimpleNamespace(AutoTokenizer=None))
    arguments = pytest.importorskip("megatron.arguments", reason=CHECKOUT)
    if not hasattr(arguments, "_add_network_size_args"):  # Megatron-LM's megatron package
        pytest.skip(CHECKOUT)
    return arguments


def _export(run, tmp_path, *args) -> dict:
    out = tmp_path / "ds_config.json"
    r = run("plan", *args, "-o", out, "--export", "deepspeed")
    assert r.code == 0, r.err
    return json.loads(out.read_text())


# the plans whose DeepSpeed export is Megatron-DeepSpeed's (TP with ZeRO-3, or TP with PP)
@pytest.mark.parametrize("args", [
    ("llama70b", "--nodes", 2),  # the headline plan: TP 4, ZeRO-3
    ("mixtral-8x7b", "--nodes", 2, "--tp", 2, "--zero", 3),  # DeepSpeed-MoE, EP x TP experts
    ("llama-3-70b", "--node", "dgx-h100", "--nodes", 4, "--tp", 4, "--pp", 4, "--zero", 1),
    # FlashAttention-1 named: the launch writes --use-flash-attn-v1 (megatron/arguments.py L927)
    ("llama70b", "--nodes", 2, "--attention-kernel", "fa1"),
], ids=["headline", "mixtral-tp2-z3", "70b-tp4-pp4", "headline-fa1"])
def test_megatron_deepspeed_parses_and_validates_the_export(run, tmp_path, monkeypatch, cat,
                                                            mds, args):
    cfg = _export(run, tmp_path, *args)
    # the layout the export searched: the best of the frameworks --export deepspeed writes for
    # (cli/plan_cmd.py _exported_search), not another framework's best
    from optimus_calc.frameworks import exported_frameworks
    lay = run("plan", *args, "--framework", ",".join(exported_frameworks("deepspeed")),
              "--format", "json").json()["recommended"]
    launch = cfg["_launch"]
    assert launch["launcher"].startswith("Megatron-DeepSpeed")
    words = shlex.split(launch["command"])
    argv = words[words.index("pretrain_gpt.py") + 1:]
    argv = [w for w in argv if w not in ("<data", "arguments>")]  # left to the user
    gpus = int(words[words.index("--num_nodes") + 1]) * int(words[words.index("--num_gpus") + 1])
    (tmp_path / "ds.json").write_text(json.dumps(cfg))
    argv[argv.index("--deepspeed_config") + 1] = str(tmp_path / "ds.json")
    monkeypatch.setenv("WORLD_SIZE", str(gpus))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setattr(sys, "argv", ["pretrain_gpt.py", *argv])
    a = mds.parse_args()
    mds.validate_args(a)
    # the plan's fused kernel (L927-935): FlashAttention-1 when named, else FlashAttention-2
    fa1 = "fa1" in args
    assert (a.use_flash_attn_v1, a.use_flash_attn_v2) == (fa1, not fa1)
    m = cat.get(args[0], "model")
    assert (a.tensor_model_parallel_size, a.pipeline_model_parallel_size,
            a.data_parallel_size) == (lay["tp"], lay["pp"], lay["dp"])
    assert a.zero_stage == lay["zero"]
    assert (a.num_layers, a.hidden_size, a.num_attention_heads) == (m.layers, m.hidden, m.heads)
    assert a.num_key_value_heads == m.n_kv and a.ffn_hidden_size == m.ffn_hidden
    assert a.swiglu and a.normalization == "rmsnorm" and not a.add_bias_linear
    assert a.use_rotary_position_embeddings and not a.add_position_embedding
    assert a.rope_theta == int(m.rope_base)  # Llama 3: 500000; Mixtral: 1000000
    assert a.untie_embeddings_and_output_weights
    assert a.bf16 and cfg["bf16"]["enabled"]  # the model's dtype is the config's
    # the tokenizer's vocabulary padded as Megatron-DeepSpeed pads it: nothing added
    from megatron.tokenizer.tokenizer import _vocab_size_with_padding
    assert _vocab_size_with_padding(m.vocab, a) == m.vocab
    if m.is_moe:  # Mixtral: 8 experts, top-2, every layer
        assert (a.num_experts, a.topk, a.expert_interval) == ([8], 2, 1)
        assert a.moe_expert_parallel_size == lay["ep"]
        assert a.enable_expert_tensor_parallelism and a.create_moe_param_group
