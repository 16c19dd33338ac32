"""Megatron-LM's --recompute-modules layernorm,moe_act under --recompute selective
(transformer_config.py L560-582 @ d98e8a6): the bytes the backward re-runs, the activations the
forward no longer keeps, the errors, the export, the unread-flag note and the public rows."""

import pytest

from optimus_calc.equations import compiled as eq
from test_megatron_checkout import megatron  # noqa: F401  (the checkout's fixture)

# gpt-oss-20b (catalog): h 2880, expert_ffn 2880, top-4 of 32 experts, 24 MoE layers, SwiGLU
# (m_m 3) with the GLU clamp; dgx-h100: HBM 3.35e12 B/s, hbm_efficiency 0.9
OSS = ("gpt-oss-20b", "--node", "dgx-h100", "--ep", "8", "--seq-len", "4096", "--global-batch",
       "8", "--recompute", "selective")


def test_moe_act_recompute_bytes_by_hand():
    # tau_mb k f_x b_a / t x (m_m + 2 n_cf): 4096 x 4 x 2880 x 2 = 94,371,840; gated with the
    # clamp's 4 forward passes of the 2 f_x row: x (3 + 8) = 1,038,090,240
    assert eq.compute__moe_act_recompute_bytes(
        tau_mb=4096, k=4, f_x=2880, b_a=2, t=1, m_m=3, n_cf=4) == 1_038_090_240
    # a 2-matrix MLP without clamp: read and write f_x; TP 2 halves the rows:
    # 4096 x 2 x 1024 x 2 / 2 = 8,388,608, x m_m 2 = 16,777,216
    assert eq.compute__moe_act_recompute_bytes(
        tau_mb=4096, k=2, f_x=1024, b_a=2, t=2, m_m=2, n_cf=0) == 16_777_216


def test_norm_recompute_bytes_by_hand():
    # n_n 2 h b_a tau_mb / t_n: one norm, 2 x 2880 x 2 x 4096 / 1 = 47,185,920 (read + write)
    assert eq.compute__norm_recompute_bytes(n_n=1, h=2880, b_a=2, tau_mb=4096,
                                            t_n=1) == 47_185_920
    # MLA (two norms) at TP 4 with SP: 2 x 2 x 7168 x 2 x 4096 / 4 = 234,881,024 / 4
    # = 58,720,256
    assert eq.compute__norm_recompute_bytes(n_n=2, h=7168, b_a=2, tau_mb=4096,
                                            t_n=4) == 58_720_256


def test_discarded_activation_bytes_by_hand():
    # s b h kappa_k (l_r / (1 + sigma (t - 1)) + x_r / t); l_r 2 (one norm's 2 h bytes), x_r
    # 2 k f_x / h = 2 x 4 x 2880 / 2880 = 8: 4096 x 2880 x 10 = 117,964,800 bytes at t 1 (bf16:
    # kappa_k 1)
    one = dict(b=1, c=1, h=2880, s=4096, l_r=2, x_r=8, kappa_k=1)
    assert eq.memory__discarded_activation_bytes(sigma=0, t=1, **one) == 117_964_800
    # TP 4 with SP shards both: / 4 = 29,491,200; without SP the norm output is whole:
    # 4096 x 2880 x (2 + 8 / 4) = 47,185,920
    assert eq.memory__discarded_activation_bytes(sigma=1, t=4, **one) == 29_491_200
    assert eq.memory__discarded_activation_bytes(sigma=0, t=4, **one) == 47_185_920
    # under FP8 the norm and activation outputs were saved in 1 byte (kappa_k 0.5): 58,982,400
    assert eq.memory__discarded_activation_bytes(sigma=0, t=1, **dict(one, kappa_k=0.5)) == \
        58_982_400
    # a clamped GLU's bf16 second copy, c_k 4 k f_x / h = 16: 4096 x 2880 x 16 = 188,743,680 at
    # t 1, / 2 at TP 2 (TP-sharded as the MLP term)
    assert eq.memory__glu_clamp_copy_bytes(b=1, c=1, h=2880, s=4096, t=1, c_k=16) == 188_743_680
    assert eq.memory__glu_clamp_copy_bytes(b=1, c=1, h=2880, s=4096, t=2, c_k=16) == 94_371_840


def test_step_backward_elementwise_grows_by_hand(run):
    a = run("step", *OSS, "--format", "json")
    b = run("step", *OSS, "--recompute-modules", "moe_act", "--format", "json")
    assert a.code == b.code == 0, (a.err, b.err)
    # 24 layers x 1,038,090,240 bytes x 1 micro-batch (8 / (dp 8 x 1)) / (3.35e12 x 0.9)
    # = 24,914,165,760 / 3.015e12 = 0.0082634 s
    grow = b.json()["elementwise_s"] - a.json()["elementwise_s"]
    assert grow == pytest.approx(24 * 1_038_090_240 / (3.35e12 * 0.9), rel=1e-9)
    # the list replaces core_attn: the attention core is not re-run, less compute
    assert b.json()["compute_s"] < a.json()["compute_s"]
    assert b.json()["training"]["recompute_modules"] == "moe_act"


def test_memory_decrease_by_hand(run):
    a = run("memory", *OSS, "--format", "json")
    b = run("memory", *OSS, "--recompute-modules", "moe_act", "--format", "json")
    c = run("memory", *OSS, "--recompute-modules", "layernorm,moe_act", "--format", "json")
    act = [r.json()["per_gpu"]["activations_bytes"] for r in (a, b, c)]
    # moe_act: the activation output, 2 k f_x bytes per token and layer = 2 x 4 x 2880 x 4096
    # = 94,371,840, and GPT-OSS's clamped second copy of the fc1 output, 4 k f_x = 188,743,680
    # (fused_bias_geglu.py L326-327, L424-432), per layer x 24 layers x 1 micro-batch in flight
    # = 2,264,924,160 + 4,529,848,320 = 6,794,772,480
    assert act[0] - act[1] == pytest.approx(6_794_772_480)
    # layernorm adds the pre_mlp_layernorm output 2 h per token: 2 x 2880 x 4096 x 24
    # = 566,231,040
    assert act[1] - act[2] == pytest.approx(566_231_040)


@pytest.mark.parametrize("extra, message", [
    (("--recompute", "none", "--recompute-modules", "moe_act"),
     "--recompute-modules needs --recompute selective (got --recompute none)"),
    (("--recompute-modules", "core_attn"),
     "--recompute-modules: 'core_attn' is not one of layernorm, moe_act"),
    (("--recompute-modules", "moe_act", "--precision", "fp8", "--framework", "megatron"),
     "--recompute-modules with --fp8-recipe te-delayed: Megatron-LM refuses them"),
    (("--recompute-modules", "layernorm", "--no-flash-attn"),
     "--recompute-modules with --no-flash-attn: not modelled"),
])
def test_errors_one_line_exit_2(run, extra, message):
    r = run("step", *OSS, *extra)
    assert r.code == 2
    assert message in r.err and len(r.err.strip().splitlines()) == 1


def test_te_current_runs_under_megatron(run):
    r = run("step", *OSS, "--recompute-modules", "moe_act", "--precision", "fp8",
            "--fp8-recipe", "te-current", "--framework", "megatron", "--format", "json")
    assert r.code == 0, r.err


def test_torchtitan_reports_it_unread_and_moves_nothing(run):
    base = ("gpt-oss-20b", "--node", "dgx-h100", "--ep", "8", "--seq-len", "4096",
            "--global-batch", "8", "--recompute", "selective", "--framework", "torchtitan",
            "--format", "json")
    a = run("step", *base)
    b = run("step", *base, "--recompute-modules", "layernorm,moe_act")
    assert a.code == b.code == 0, (a.err, b.err)
    assert b.json()["step_time_s"] == a.json()["step_time_s"]
    assert "--recompute-modules layernorm,moe_act: Megatron-LM launch flag" in \
        b.json()["unread_launch_flags"]
    # framework-neutral physics reads it: no note
    c = run("step", *OSS, "--recompute-modules", "moe_act", "--format", "json")
    assert "unread_launch_flags" not in c.json()


def test_megatron_export_writes_the_list():
    from optimus_calc import catalog
    from optimus_calc.frameworks.megatron_export import megatron_args
    from optimus_calc.specs.training import Layout, Training
    m = catalog.load(()).get("gpt-oss-20b", "model")
    tr = Training(seq_len=4096, global_batch=64, recompute="selective",
                  recompute_modules=("layernorm", "moe_act"))
    text = megatron_args(Layout(tp=1, pp=1, dp=8, ep=8, zero=1), tr, m, 8)
    # Megatron's nargs list, one word each; moe_act needs --moe-grouped-gemm (L1964-1967),
    # which every MoE export writes (the grouped GEMM the step times)
    assert "--recompute-granularity selective \\\n  --recompute-modules layernorm moe_act " \
           "\\\n" in text and "  --moe-grouped-gemm \\\n" in text
    plain = megatron_args(Layout(tp=1, pp=1, dp=8, ep=8, zero=1),
                          tr.model_copy(update={"recompute_modules": ()}), m, 8)
    assert "--recompute-modules" not in plain


def test_megatron_parses_the_export(monkeypatch, megatron):
    """Megatron-LM's own parse_args + validate_args on the exported list (a checkout only)."""
    from test_megatron_checkout import _megatron_validate
    from optimus_calc import catalog
    from optimus_calc.frameworks.megatron_export import megatron_args
    from optimus_calc.specs.training import Layout, Training
    arguments, _ = megatron
    m = catalog.load(()).get("gpt-oss-20b", "model")
    tr = Training(seq_len=4096, global_batch=64, recompute="selective",
                  recompute_modules=("layernorm", "moe_act"))
    text = megatron_args(Layout(tp=1, pp=1, dp=8, ep=8, zero=1), tr, m, 8)
    margs, _ = _megatron_validate(arguments, monkeypatch, text)
    assert margs.recompute_granularity == "selective"
    assert margs.recompute_modules == ["layernorm", "moe_act"]
    assert margs.moe_grouped_gemm


def test_gpt_oss_public_rows_run_the_modules():
    from optimus_calc.public_cases import public_rows
    oss = [r for r in public_rows() if "moe_act" in r.recompute_modules]
    assert oss and all(r.recompute == "selective" and r.model.startswith("gpt-oss")
                       for r in oss)
    # DeepSeek-V3's mla_up_proj / mlp stay not modelled: recompute none
    assert all(r.recompute == "none" for r in public_rows() if "mla_up_proj" in r.assumed)


def test_fit_hint_may_drop_the_modules_for_full_recompute(run):
    # full recomputation needs no module list (--recompute-modules needs selective): the hint
    # resolves its --recompute full candidate without the list, as for the same layout without it
    args = ("step", "gpt-oss-20b", "--node", "dgx-h100", "--ep", "8", "--zero", "3",
            "--micro-batch", "2", "--seq-len", "8192", "--global-batch", "16", "--recompute",
            "selective", "--format", "json")
    a = run(*args).json()["fit_hint"]
    b = run(*args, "--recompute-modules", "layernorm,moe_act").json()["fit_hint"]
    assert a["flags"] == b["flags"] == "--recompute full"
    assert a["step_time_s"] == b["step_time_s"]


def test_plan_takes_the_list_for_its_selective_layouts(run):
    # the planner searches --recompute modes; --recompute-modules applies to its selective
    # layouts and needs selective among them (a one-line error otherwise); the Megatron-LM
    # export of a selective plan writes the list and --moe-grouped-gemm
    base = ("plan", "gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1, "--ep", 8, "--tp", 1,
            "--pp", 1, "--framework", "megatron")
    bad = run(*base, "--recompute", "full", "--recompute-modules", "moe_act")
    assert bad.code == 2 and len(bad.err.strip().splitlines()) == 1
    assert bad.err.startswith("error: --recompute-modules needs selective among the --recompute "
                              "modes searched (got --recompute full)")
    out = run(*base, "--recompute", "selective", "--recompute-modules", "layernorm,moe_act",
              "--export", "megatron")
    assert out.code == 0, out.err
    assert ("--recompute-granularity selective \\\n  --recompute-modules layernorm moe_act "
            "\\\n") in out.out and "  --moe-grouped-gemm \\\n" in out.out
    # the same layout searched without the list times the selective layout with core_attn,
    # i.e. differently: the list reaches the plan's evaluation
    js = [run(*base, "--recompute", "selective", *x, "--format", "json").json()["recommended"]
          for x in ((), ("--recompute-modules", "moe_act"))]
    assert js[0]["step_time_s"] != js[1]["step_time_s"]


def test_layernorm_at_tp2_counts_the_sequence_parallel_shard(run):
    # qwen3-30b-a3b (48 MoE layers, h 2048) on 2 x DGX H100, TP 2 with SP, EP 8, DP 8, one
    # 4096-token micro-batch per GPU: the pre-MLP norm re-run reads and writes the GPU's
    # 2048 tokens: 1 x 2 x 2048 x 2 x 4096 / 2 = 16,777,216 bytes per layer (compute.
    # norm_recompute_bytes), x 48 / (3350e9 x 0.9) = 2.6710e-4 s; the discarded norm output
    # 2 h bytes per token, sequence-sharded: 4096 x 2048 x 2 / 2 x 48 layers = 402,653,184
    q = ("qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", 2, "--tp", 2, "--ep", 8,
         "--seq-len", 4096, "--micro-batch", 1, "--global-batch", 8, "--recompute",
         "selective", "--format", "json")
    a, b = (run("step", *q, *x).json() for x in ((), ("--recompute-modules", "layernorm")))
    assert b["elementwise_s"] - a["elementwise_s"] == pytest.approx(
        48 * 16_777_216 / (3350e9 * 0.9), rel=1e-6)
    m0, m1 = (run("memory", *q, *x).json()["per_gpu"]["activations_bytes"]
              for x in ((), ("--recompute-modules", "layernorm")))
    assert m0 - m1 == pytest.approx(402_653_184)


def test_every_moe_export_runs_the_grouped_gemm_and_dense_models_refuse_moe_act(run):
    # the step times the routed experts as a grouped GEMM: without --moe-grouped-gemm Megatron-LM
    # builds SequentialMLP (models/gpt/moe_module_specs.py L43, L82 @ d98e8a6); a dense export
    # has no experts and no flag; moe_act on a dense model is a one-line error
    moe = run("plan", "qwen3-30b-a3b", "--node", "dgx-h100", "--nodes", 2, "--framework",
              "megatron", "--export", "megatron").out
    assert "  --moe-grouped-gemm \\\n" in moe
    dense = run("plan", "llama-3-8b", "--node", "dgx-h100", "--nodes", 1, "--framework",
                "megatron", "--export", "megatron").out
    assert "--moe-grouped-gemm" not in dense
    r = run("step", "llama-3-8b", "--recompute", "selective", "--recompute-modules", "moe_act")
    assert r.code == 2 and r.err.strip() == ("error: --recompute-modules moe_act: llama-3-8b is "
                                             "dense (no experts); it recomputes the routed "
                                             "experts' activation")


def test_the_clamped_copy_is_memory_kept_unless_recomputed(run):
    # GPT-OSS's eager clamp: the clamps keep the fc1 output and WeightedBiasQuickGeGLUFunction
    # the clamped cat (fused_bias_geglu.py L326-327, L377-380): a second 2 f_x bf16 copy per
    # routed row, 4 x 4 x 2880 x 4096 = 188,743,680 bytes a layer x 24 = 4,529,848,320 on the
    # layout above without recompute (memory.glu_clamp_copy_bytes), kept by selective
    # recompute, not by full recompute (the layer input only) nor by moe_act's checkpoint
    base = ("gpt-oss-20b", "--node", "dgx-h100", "--ep", 8, "--seq-len", 4096,
            "--global-batch", 8, "--format", "json")
    copy = 4_529_848_320

    def act(*x):
        r = run("memory", *base, *x)
        assert r.code == 0, r.err
        return r.json()["per_gpu"]["activations_bytes"]
    assert act("--assume", "moe_act_clamp_passes=0") == act()  # a time parameter only
    sel = act("--recompute", "selective")
    mods = act("--recompute", "selective", "--recompute-modules", "moe_act")
    assert sel - mods == pytest.approx(copy + 2_264_924_160)
    # the step time does not count the copy again (its traffic is the clamp's 11.5 passes)
    t = [run("step", *base, *x).json()["elementwise_s"]
         for x in ((), ("--assume", "moe_act_clamp_passes=0"))]
    assert t[0] - t[1] == pytest.approx(2 * 24 * 5.75 * 4 * 4096 * 2 * 2880 * 2
                                        / (3350e9 * 0.9), rel=1e-6)


def test_plan_under_deepspeed_ignores_the_list(run):
    # DeepSpeed reads no --recompute-modules: its profile's search drops it as `step` does, so
    # the plan's layouts are timed and sized as without it (Megatron's change)
    args = ("plan", "gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1, "--recompute",
            "selective", "--format", "json")
    ds = [run(*args, "--framework", "deepspeed", *x).json()["recommended"]
          for x in ((), ("--recompute-modules", "layernorm,moe_act"))]
    assert (ds[0]["gpu_memory_bytes"], ds[0]["step_time_s"]) == (
        ds[1]["gpu_memory_bytes"], ds[1]["step_time_s"])


def test_the_gpt_oss_export_says_its_clamp_has_no_flag(run):
    # activation_func_clamp_value and glu_linear_offset are TransformerConfig fields with no
    # pretrain_gpt.py flag (transformer_config.py L231-237 @ d98e8a6; Megatron-Bridge sets
    # them, gpt_oss_provider.py L79-84 @ v0.3.0): the script runs --swiglu and says so; a model
    # without the clamp gets no such note
    args = ("--node", "dgx-h100", "--nodes", 1, "--framework", "megatron", "--export",
            "megatron")
    oss = run("plan", "gpt-oss-20b", *args).out
    assert "activation_func_clamp_value 7.0" in oss and "has no pretrain_gpt.py flag" in oss
    qwen = run("plan", "qwen3-30b-a3b", *args[:2], "--nodes", 2, *args[4:])
    assert qwen.code == 0 and "--swiglu" in qwen.out
    assert "activation_func_clamp_value" not in qwen.out


def test_the_clamped_copy_by_hand_and_where_it_is_not_kept(cat):
    # gpt-oss-20b against the same model without its clamp, one DGX H100, EP 8, one 4096-token
    # micro-batch: the copy is 4 k f_x bytes per token and MoE layer, 4 x 4 x 2880 x 4096 x 24
    # = 4,529,848,320 without recompute and under Korthikanti's selective; none under full
    # recompute (the layer input only) nor under torchtitan's op SAC (selective_policy 1: mm
    # outputs saved, element-wise ops re-run)
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.evaluate.memory import estimate_memory
    from optimus_calc.specs.assumptions import Assumptions
    from optimus_calc.specs.training import Layout, Training, ZeroStage
    oss = cat.get("gpt-oss-20b", "model")
    plain = oss.model_copy(update={"glu_clamp": False})
    hw = resolve_hardware(cat, "dgx-h100", 1)
    lay = Layout(dp=8, ep=8, zero=ZeroStage.OS)

    def copy(rc, asm=Assumptions()):
        tr = Training(seq_len=4096, global_batch=8, recompute=rc)
        a, b = (estimate_memory(m, hw, lay, tr, asm).worst.activations_bytes
                for m in (oss, plain))
        return a - b
    assert copy("none") == pytest.approx(4_529_848_320)
    assert copy("selective") == pytest.approx(4_529_848_320)
    assert copy("full") == 0
    assert copy("selective", Assumptions(selective_policy=1)) == 0

