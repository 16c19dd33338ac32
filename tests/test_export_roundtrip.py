"""Round trips of every catalog model and every Hugging Face fixture through the exporters:
the architecture an export describes, read back with the tool's own counting rules
(specs/model.py), has the planned parameter count; every flag is in the option lists extracted
at the pinned commits; and where DeepSpeed is installed its own DeepSpeedConfig accepts the
JSON on the launch path the file names."""

import json
from pathlib import Path

import pytest

from optimus_calc.frameworks.deepspeed_export import deepspeed_config_dict
from optimus_calc.frameworks.exporting import ExportError
from optimus_calc.frameworks.megatron_export import megatron_arg_list
from optimus_calc.frameworks.torchtitan_export import flavour_of, torchtitan_sections
from optimus_calc.hf_import import load_hf_config
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Layout, Offload, Optimizer, Training

OPTIONS = json.loads((Path(__file__).parent / "data" / "framework_options.json").read_text())
MEG = OPTIONS["megatron"]["flags"]
HF = Path(__file__).parent / "data" / "hf"


def _models():
    from optimus_calc import catalog
    cat = catalog.load(())
    out = [(n, m) for n, m in cat.entries["model"].items()]
    out += [(f"hf/{d.name}", load_hf_config(d / "config.json")) for d in sorted(HF.iterdir())
            if (d / "config.json").exists()]
    return out


MODELS = _models()
IDS = [n for n, _ in MODELS]


def model_from_megatron(args: dict, like: Model) -> Model:
    """The model Megatron's flags describe, as a Model (only the flags are read; ``like`` gives
    the name). Fields no flag sets take Megatron's GPT defaults: two norms per layer, a final
    norm, no embedding norm."""
    f = {"name": like.name + "-from-megatron", "source": "the Megatron-LM flags",
         "layers": int(args["--num-layers"]), "hidden": int(args["--hidden-size"]),
         "ffn_hidden": int(args["--ffn-hidden-size"]),
         "heads": int(args["--num-attention-heads"]), "vocab": int(args["--vocab-size"]),
         "ffn_type": ("swiglu" if "--swiglu" in args else "relu2" if "--squared-relu" in args
                      else "gelu"),
         "rotary_percent": float(args.get("--rotary-percent") or 1.0),
         "norm_zero_centered_gamma": "--apply-layernorm-1p" in args,
         "norm": "rmsnorm" if args["--normalization"] == "RMSNorm" else "layernorm",
         "tied_embeddings": "--untie-embeddings-and-output-weights" not in args,
         "qk_norm": "--qk-layernorm" in args and "--multi-latent-attention" not in args,
         "attention_sinks": "--softmax-type" in args}
    pos = args["--position-embedding-type"]
    f["position_embedding"] = {"learned_absolute": "learned", "yarn": "rope"}.get(pos, pos)
    if pos == "yarn":  # YaRN scales RoPE's frequencies (arguments.py L2400, L3558)
        f.update(rope_yarn_factor=float(args["--rotary-scaling-factor"]),
                 rope_yarn_original_max_position=int(
                     args["--yarn-original-max-position-embeddings"]),
                 rope_yarn_truncate="--no-yarn-correction-range-round-to-int" not in args)
    if pos == "learned_absolute":
        f["max_position"] = int(args["--max-position-embeddings"])
    if "--disable-bias-linear" not in args:
        f.update(attention_bias=True, attention_out_bias=True, mlp_bias=True)
    elif "--add-qkv-bias" in args:
        f["attention_bias"] = True
    if "--multi-latent-attention" in args:
        # Megatron builds MLA's latent norms (which Model counts) only with --qk-layernorm
        # (core/models/gpt/gpt_layer_specs.py L428-429)
        assert "--qk-layernorm" in args, "MLA without --qk-layernorm loses its latent norms"
        f.update(kv_lora_rank=int(args["--kv-lora-rank"]),
                 q_lora_rank=int(args.get("--q-lora-rank") or 0),
                 qk_nope_head_dim=int(args["--qk-head-dim"]),
                 qk_rope_head_dim=int(args["--qk-pos-emb-head-dim"]),
                 v_head_dim=int(args["--v-head-dim"]))
    else:
        f["head_dim"] = int(args["--kv-channels"])
        f["kv_heads"] = int(args.get("--num-query-groups") or f["heads"])
    f["mtp_layers"] = int(args.get("--mtp-num-layers") or 0)
    if "--num-experts" in args:
        f.update(experts=int(args["--num-experts"]), top_k=int(args["--moe-router-topk"]),
                 moe_ffn_hidden=int(args["--moe-ffn-hidden-size"]),
                 # an expert-bias buffer, or the router's bias that Megatron builds with
                 # biased linears (core/transformer/moe/router.py L67-72)
                 router_bias=("--moe-router-enable-expert-bias" in args
                              or "--disable-bias-linear" not in args))
        if "--moe-shared-expert-intermediate-size" in args:
            f.update(shared_experts=1,
                     shared_expert_ffn=int(args["--moe-shared-expert-intermediate-size"]),
                     shared_expert_gate="--moe-shared-expert-gate" in args)
        pattern = json.loads(args.get("--moe-layer-freq") or "[]") or [1] * f["layers"]
        # the model's rule (specs/model.py moe_layers): layer i is MoE when i >= first dense
        # layers and (i - first + 1) % freq == 0; find the (first, freq) that gives the pattern
        n = f["layers"]
        rule = [(first, freq) for first in range(n) for freq in range(1, n + 1)
                if len(pattern) == n and all(
                    int(i >= first and (i - first + 1) % freq == 0) == pattern[i]
                    for i in range(n))]
        assert rule, f"--moe-layer-freq {pattern} is no dense-prefix + every-k-th pattern"
        f["first_dense_layers"], f["moe_layer_freq"] = rule[0]
    return Model(**f)


def _megatron_layout(m):
    """A layout Megatron-LM runs for any model: TP 1, EP over the experts, ZeRO-1."""
    ep = 8 if m.experts and m.experts % 8 == 0 else 1
    return Layout(tp=1, pp=1, dp=8, ep=ep, zero=1)


def _training(m):
    return Training(seq_len=min(2048, m.max_position or 2048), global_batch=64)


# Known, stated differences: a router bias the model has and Megatron's unbiased router lacks,
# or the reverse; the export says so in a "# router bias" comment.
def _documented_difference(m, notes: list[str]) -> int:
    if any(n.startswith("# router bias") for n in notes):
        if m.router_bias:
            return m.moe_layers * (m.router_params - m.hidden * m.experts)
        return -m.moe_layers * m.experts
    return 0


@pytest.mark.parametrize("name,m", MODELS, ids=IDS)
def test_megatron_export_builds_the_planned_model(name, m):
    lay, tr = _megatron_layout(m), _training(m)
    try:
        args, notes = megatron_arg_list(lay, tr, m, 8)
    except ExportError as e:
        # refused with the reason: an encoder, a block or MLP Megatron's GPT cannot build
        assert any(w in str(e) for w in ("encoder", "parallel attention", "MLP",
                                         "position embeddings", "biases", "Q/K norms")), str(e)
        return
    for flag, value in args:
        assert flag in MEG, f"{flag} is not a Megatron-LM flag at the pinned commit"
        assert (value is None) == (MEG[flag]["type"] == "flag"), flag
    back = model_from_megatron(dict(args), m)
    assert back.total_params == m.total_params - _documented_difference(m, notes), name
    # the MLP, RoPE share and norm the flags build are the model's (a relu2 model read as gelu
    # would count the same parameters)
    assert (back.ffn_type, back.rotary_percent, back.norm_zero_centered_gamma) == (
        m.ffn_type, m.rotary_percent, m.norm_zero_centered_gamma), name
    if m.is_moe:
        assert back.active_params == m.active_params - _documented_difference(m, notes)


def test_deepseek_v3_megatron_has_mla_dense_layers_and_its_router():
    m = load_hf_config(HF / "deepseek_v3" / "config.json")
    args = dict(megatron_arg_list(_megatron_layout(m), _training(m), m, 8)[0])
    # deepseek-ai/DeepSeek-V3 config.json: q_lora_rank 1536, kv_lora_rank 512, qk_nope 128,
    # qk_rope 64, v_head_dim 128, first_k_dense_replace 3 of 61 layers, sigmoid scoring with
    # the noaux_tc bias, 8 groups of which 4 are routed to, routed_scaling_factor 2.5
    assert "--multi-latent-attention" in args and args["--q-lora-rank"] == "1536"
    assert (args["--kv-lora-rank"], args["--qk-head-dim"], args["--qk-pos-emb-head-dim"],
            args["--v-head-dim"]) == ("512", "128", "64", "128")
    assert args["--moe-layer-freq"] == "[" + ",".join(["0"] * 3 + ["1"] * 58) + "]"
    assert args["--moe-router-score-function"] == "sigmoid"
    assert "--moe-router-enable-expert-bias" in args
    assert (args["--moe-router-num-groups"], args["--moe-router-group-topk"]) == ("8", "4")
    assert args["--mtp-num-layers"] == "1"
    # the latent norms q_a_layernorm (1536) and kv_a_layernorm (512): Megatron builds them
    # only with --qk-layernorm; without it 61 x 2048 + 2048 (MTP) parameters were missing
    assert "--qk-layernorm" in args
    back = model_from_megatron(args, m)
    assert round(back.total_params / 1e9, 1) == 671.0  # the published 671B


def test_qwen15_moe_shared_expert_is_5632_wide_and_gated():
    m = load_hf_config(HF / "qwen2_moe" / "config.json")
    args = dict(megatron_arg_list(_megatron_layout(m), _training(m), m, 8)[0])
    # Qwen/Qwen1.5-MoE-A2.7B config.json: shared_expert_intermediate_size 5632, a sigmoid gate
    assert args["--moe-shared-expert-intermediate-size"] == "5632"
    assert "--moe-shared-expert-gate" in args
    # norm_topk_prob false: softmax over all 60 experts, the top-4 weights not renormalised
    assert "--moe-router-pre-softmax" in args


def test_top1_routers_are_ones_megatron_accepts():
    # Megatron refuses softmax after a top-1 choice (transformer_config.py L2661-2669):
    # Llama-4 routes top-1 through a sigmoid (its config.json, transformers Llama4TextMoe)
    m = load_hf_config(HF / "llama4" / "config.json")
    args = dict(megatron_arg_list(_megatron_layout(m), _training(m), m, 8)[0])
    assert m.top_k == 1 and args["--moe-router-score-function"] == "sigmoid"
    one = m.model_copy(update={"family": "other"})
    args = dict(megatron_arg_list(_megatron_layout(one), _training(one), one, 8)[0])
    assert "--moe-router-pre-softmax" in args


def test_glm45_routers_are_sigmoid_with_expert_bias_and_their_scaling():
    # GLM-4.5 routes by sigmoid scores with e_score_correction_bias (transformers
    # Glm4MoeTopkRouter): Megatron's sigmoid score function with its expert bias; the scaling
    # factor is each config.json's routed_scaling_factor: 2.5 (355B), 1.0 (Air: no flag)
    for name, scaling in (("glm4_moe_355b", "2.5"), ("glm4_moe", None)):
        m = load_hf_config(HF / name / "config.json")
        args = dict(megatron_arg_list(_megatron_layout(m), _training(m), m, 8)[0])
        assert args["--moe-router-score-function"] == "sigmoid"
        assert "--moe-router-enable-expert-bias" in args
        assert args.get("--moe-router-topk-scaling-factor") == scaling


def test_falcon_parallel_attention_is_refused():
    m = load_hf_config(HF / "falcon" / "config.json")
    with pytest.raises(ExportError, match="parallel attention"):
        megatron_arg_list(_megatron_layout(m), _training(m), m, 8)


# ---- torchtitan ---------------------------------------------------------------------------

def _torchtitan_layout(m):
    ep = 8 if m.experts and m.experts % 8 == 0 else 1
    return Layout(tp=1, pp=1, dp=8, ep=ep, zero=3)


@pytest.mark.parametrize("name,m", MODELS, ids=IDS)
def test_torchtitan_names_a_flavour_or_refuses(name, m):
    lay, tr = _torchtitan_layout(m), _training(m)
    found = flavour_of(m)
    try:
        sec, _ = torchtitan_sections(lay, tr, m)
    except ExportError as e:
        assert found is None
        assert "no model flavour" in str(e) or "torchtitan" in str(e)
        return
    assert found is not None and sec["model"] == {"name": found[0], "flavor": found[1]}


def test_torchtitan_mixtral_refused_qwen3_moe_named(cat):
    tr = Training(seq_len=4096, global_batch=64)
    mix = cat.get("mixtral-8x7b", "model")
    with pytest.raises(ExportError, match="no model flavour.*mixtral-8x7b"):
        torchtitan_sections(_torchtitan_layout(mix), tr, mix)
    q = cat.get("qwen3-30b-a3b", "model")
    sec, _ = torchtitan_sections(_torchtitan_layout(q), tr, q)
    assert sec["model"] == {"name": "qwen3", "flavor": "30B-A3B"}  # qwen3/__init__.py L145


# ---- DeepSpeed ----------------------------------------------------------------------------

def test_deepspeed_mixtral_keeps_ep_in_the_config(cat):
    # AutoEP (DeepSpeed 0.19.8 runtime/engine.py L816-877) has a mixtral preset
    # (module_inject/auto_ep_presets/registry.py L20-29): 8 experts / EP 4 = 2 per GPU
    m = cat.get("mixtral-8x7b", "model")
    cfg = deepspeed_config_dict(Layout(tp=1, pp=1, dp=16, ep=4, zero=2), Training(
        seq_len=4096, global_batch=64), m)
    assert cfg["expert_parallel"] == {"enabled": True, "autoep_size": 4}
    notes = " ".join(cfg["_launch"]["notes"])
    assert "2 of 8 experts per GPU" in notes and "mixtral" in notes
    # the pipeline engine keeps DeepSpeed-MoE in the model code (no AutoEP there)
    cfg = deepspeed_config_dict(Layout(tp=1, pp=2, dp=8, ep=4, zero=1), Training(
        seq_len=4096, global_batch=64), m)
    assert "expert_parallel" not in cfg
    assert "ep_size=4" in " ".join(cfg["_launch"]["notes"])


def test_deepspeed_sgd_with_offload_keys(cat):
    m = cat.get("llama-2-7b", "model")
    tr = Training(seq_len=4096, global_batch=64, optimizer=Optimizer.SGD)
    cfg = deepspeed_config_dict(Layout(tp=1, pp=1, dp=8, zero=2, offload=Offload.CPU), tr, m)
    # runtime/engine.py L2040-2044 (offload with a non-DeepSpeed optimizer), L1987-1990
    assert cfg["zero_force_ds_cpu_optimizer"] is False
    assert cfg["zero_allow_untested_optimizer"] is True


def _deepspeed_accepts(cfg: dict, gpus: int, dp: int) -> None:
    """DeepSpeed's own DeepSpeedConfig on the file, on the launch path it names: no mpu for
    plain DeepSpeed / AutoTP (DeepSpeed counts every GPU), Megatron-DeepSpeed's mpu (the DP
    ranks) otherwise."""
    dsc = pytest.importorskip("deepspeed.runtime.config")
    mp = pytest.MonkeyPatch()
    mp.setattr(dsc.dist, "get_rank", lambda *a, **k: 0)
    mp.setattr(dsc.dist, "get_world_size", lambda *a, **k: gpus)

    class MPU:  # Megatron-DeepSpeed's mpu answers the data-parallel size
        def get_data_parallel_world_size(self):
            return dp
    try:
        # Megatron-DeepSpeed passes its mpu; a PipelineModule's topology is one as well
        mpu = MPU() if cfg["_launch"]["launcher"].startswith(
            ("Megatron-DeepSpeed", "DeepSpeed (pipeline")) else None
        c = dsc.DeepSpeedConfig(json.loads(json.dumps(cfg)), mpu=mpu)
        assert c.train_micro_batch_size_per_gpu * c.gradient_accumulation_steps * dp \
            == cfg["train_batch_size"] // (gpus // dp if mpu is None else 1)
    finally:
        mp.undo()


def test_deepspeed_validates_the_headline_plan(run, tmp_path):
    out = tmp_path / "ds.json"
    r = run("plan", "llama70b", "--nodes", 2, "--export", "deepspeed", "-o", out)
    assert r.code == 0, r.err
    cfg = json.loads(out.read_text())
    lay = run("plan", "llama70b", "--nodes", 2, "--format", "json").json()["recommended"]
    assert cfg["_launch"]["launcher"]  # the file names its launcher
    _deepspeed_accepts(cfg, 16, lay["dp"])


@pytest.mark.parametrize("lay", [
    Layout(tp=4, pp=1, dp=4, zero=2, offload=Offload.CPU),     # AutoTP, config only
    Layout(tp=4, pp=1, dp=4, zero=3, offload=Offload.CPU),     # Megatron-DeepSpeed
    Layout(tp=1, pp=1, dp=16, zero=3, offload=Offload.NVME, offload_params=True),
    Layout(tp=2, pp=2, dp=4, zero=1),                           # Megatron-DeepSpeed with PP
    Layout(tp=1, pp=4, dp=4, zero=1),                           # DeepSpeed's pipeline engine
], ids=["autotp-z2", "mds-z3", "nvme", "mds-pp", "ds-pipe"])
def test_deepspeed_config_accepts_each_path(cat, lay):
    m = cat.get("llama-3-70b", "model")
    cfg = deepspeed_config_dict(lay, Training(seq_len=4096, global_batch=512), m)
    _deepspeed_accepts(cfg, lay.gpus, lay.dp)


def test_405b_pp16_export_splits_as_the_plan_evaluated(run):
    args = ("plan", "llama-3-405b", "--node", "dgx-h100", "--nodes", 16, "--tp", 8, "--pp", 16,
            "--zero", 1, "--offloads", "none", "--framework", "megatron")
    r = run(*args, "--format", "json")
    assert r.code == 0, r.err
    planned = r.json()["recommended"]["stage_layers"]
    # 126 layers + the embedding and the loss = 128 = 16 x 8: 7 on the first and the last
    # stage (Megatron-LM's account_for_*_in_pipeline_split, transformer_block.py L147-203)
    assert planned == [7] + [8] * 14 + [7]
    r = run(*args, "--export", "megatron")
    assert r.code == 0, r.err
    layout = next(w for w in r.out.split() if w.startswith("'Et*"))
    stages = layout.strip("'").replace("E", "").replace("L", "").split("|")
    assert [int(s[2:]) for s in stages] == planned


# ---- Megatron-DeepSpeed (pretrain_gpt.py @ 4efb479d, megatron/arguments.py) ------------------

def _md_args(cfg: dict) -> dict[str, str | None]:
    import shlex
    words = shlex.split(cfg["_launch"]["command"])
    words = words[words.index("pretrain_gpt.py") + 1:words.index("<data")]
    out: dict[str, str | None] = {}
    for i, w in enumerate(words):
        if w.startswith("--"):
            nxt = words[i + 1] if i + 1 < len(words) else "--"
            out[w] = None if nxt.startswith("--") else nxt
    return out


def test_megatron_deepspeed_export_writes_the_model_in_its_dialect(cat):
    # Llama 3 70B config.json: 80 layers, 8192 hidden, 28672 SwiGLU, 64 heads / 8 KV heads,
    # rope_theta 500000, RMSNorm, no biases, untied, vocab 128256 = 96 x TP 4 x 334 (no pad)
    m = cat.get("llama-3-70b", "model")
    lay = Layout(tp=4, pp=1, dp=4, zero=3)  # TP with ZeRO-3: only Megatron-DeepSpeed runs it
    cfg = deepspeed_config_dict(lay, Training(seq_len=8192, global_batch=512), m)
    assert cfg["_launch"]["launcher"].startswith("Megatron-DeepSpeed")
    assert "<model and data arguments>" not in cfg["_launch"]["command"]
    a = _md_args(cfg)
    assert {k: a[k] for k in ("--num-layers", "--hidden-size", "--ffn-hidden-size",
                              "--num-attention-heads", "--num-key-value-heads",
                              "--rotary-position-embeddings-theta", "--normalization",
                              "--make-vocab-size-divisible-by")} == {
        "--num-layers": "80", "--hidden-size": "8192", "--ffn-hidden-size": "28672",
        "--num-attention-heads": "64", "--num-key-value-heads": "8",
        "--rotary-position-embeddings-theta": "500000", "--normalization": "rmsnorm",
        "--make-vocab-size-divisible-by": "96"}
    for switch in ("--use-rotary-position-embeddings", "--no-position-embedding", "--swiglu",
                   "--disable-bias-linear", "--untie-embeddings-and-output-weights",
                   "--no-pipeline-parallel", "--bf16"):
        assert switch in a and a[switch] is None, switch
    # Megatron-LM's spellings are not this dialect's (arguments.py L623-637)
    assert "--group-query-attention" not in a and "--position-embedding-type" not in a
    assert a["--zero-stage"] == "3" and a["--tensor-model-parallel-size"] == "4"


def test_megatron_deepspeed_moe_flags_follow_deepspeed_moe(cat):
    # Mixtral 8x7B: 8 experts, top-2, MoE in every layer (--expert-interval 1; its default is 2,
    # arguments.py L614); experts sharded over EP x TP as planned
    m = cat.get("mixtral-8x7b", "model")
    cfg = deepspeed_config_dict(Layout(tp=2, pp=1, dp=8, ep=4, zero=3),
                                Training(seq_len=4096, global_batch=64), m)
    a = _md_args(cfg)
    assert (a["--num-experts"], a["--topk"], a["--expert-interval"],
            a["--moe-expert-parallel-size"]) == ("8", "2", "1", "4")
    assert "--enable-expert-tensor-parallelism" in a and "--create-moe-param-group" in a


@pytest.mark.parametrize("fixture,why", [
    ("cohere", "parallel attention"),      # Command-R: use_parallel_attention-style blocks
    ("qwen2", "--disable-bias-linear"),    # QKV-only biases
    ("deepseek_v3", "multi-latent"),       # MLA
    ("llama4", "shared experts"),          # Llama 4 Scout: one shared expert
])
def test_megatron_deepspeed_refuses_what_it_cannot_build(fixture, why):
    from optimus_calc.frameworks import Framework, Reason, layout_support
    m = load_hf_config(HF / fixture / "config.json")
    tr = Training(seq_len=2048, global_batch=64)
    lay = Layout(tp=2, pp=1, dp=4, zero=3)
    assert layout_support(lay, tr, m)[Framework.MEGATRON_DEEPSPEED] is Reason.MD_ARCH
    with pytest.raises(ExportError, match=why):
        from optimus_calc.frameworks.megatron_deepspeed_export import model_args
        model_args(lay, tr, m)

