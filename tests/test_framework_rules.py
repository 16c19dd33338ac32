"""The frameworks' rules (what each framework runs, with the source line of each refusal) and
their counts (split by subject from test_export.py, which checks the exporters)."""

import tomllib
from pathlib import Path

import numpy as np

from optimus_calc.frameworks import (Framework, Reason, framework_support, layout_support,
                                     rejected_counts)
from optimus_calc.specs.training import OFFLOAD_CODES
from optimus_calc.specs.training import Layout, Training


# ---- the rules ---------------------------------------------------------------------------------
def _one(**kw):
    base = dict(tp=1, pp=1, dp=8, cp=1, ep=1, zero=1, offload=0, offload_params=False,
                interleave=1, micro_batch=1, sequence_parallel=True, recompute=0)
    model = dict(heads=64, n_kv=8, experts=0, layers=80)
    for k in list(kw):
        if k in model:
            model[k] = kw.pop(k)
    base.update(kw)
    s = framework_support(**base, **model, global_batch=64)
    return {f: Reason(int(s.reason[f])) for f in Framework}


def test_rules_from_the_sources():
    # DeepSpeed pipe/engine.py L76-77: ZeRO-2/3 with PP asserts
    assert _one(zero=2, pp=2)[Framework.DEEPSPEED] is Reason.DS_ZERO23_PP
    assert _one(zero=3, pp=2, tp=2)[Framework.MEGATRON_DEEPSPEED] is Reason.DS_ZERO23_PP
    assert _one(zero=1, pp=2, tp=2)[Framework.MEGATRON_DEEPSPEED] is Reason.OK
    # DeepSpeed ignores offload at stage 0; Megatron's CPU offload needs the dist. optimizer
    r = _one(zero=0, offload=1)
    assert r[Framework.DEEPSPEED] is Reason.DS_OFFLOAD_ZERO0
    assert r[Framework.MEGATRON] is Reason.MG_OFFLOAD_ZERO0
    assert _one(zero=1, offload=1)[Framework.DEEPSPEED] is Reason.OK
    assert _one(zero=2, offload=2)[Framework.DEEPSPEED] is Reason.DS_NVME_ZERO3
    assert _one(zero=3, offload=2)[Framework.DEEPSPEED] is Reason.OK
    assert _one(zero=2, offload=4)[Framework.DEEPSPEED] is Reason.DS_SUPERCHIP_ZERO3
    assert _one(zero=2, offload=1, offload_params=True)[Framework.DEEPSPEED] \
        is Reason.DS_PARAMS_ZERO3
    # SmartNIC: nobody
    assert set(_one(offload=3, zero=3).values()) == {Reason.SMARTNIC}
    # Megatron transformer_config.py L1460-1463: groups a multiple OR a divisor of TP
    assert _one(tp=16, heads=128, n_kv=8)[Framework.MEGATRON] is Reason.OK
    assert _one(tp=8, heads=96, n_kv=12)[Framework.MEGATRON] is Reason.MG_GROUPS_TP
    assert _one(tp=16, heads=128, n_kv=8, zero=3)[Framework.TORCHTITAN] is Reason.TT_HEADS_TP
    assert _one(tp=16, heads=128, n_kv=8)[Framework.MEGATRON_DEEPSPEED] is Reason.MD_KV_TP
    assert _one(tp=3, heads=64)[Framework.MEGATRON] is Reason.MG_HEADS_TP
    assert _one(ep=3, experts=8)[Framework.MEGATRON] is Reason.MG_EXPERTS_EP
    assert _one(zero=3, pp=2)[Framework.MEGATRON] is Reason.MG_FSDP_PP
    assert _one(zero=1, pp=2)[Framework.MEGATRON] is Reason.OK
    # interleaving: 80 layers over PP 4 x 3 chunks do not divide, which Megatron runs through
    # --pipeline-model-parallel-layout (arguments.py L941-951); 96 chunks of 80 layers leave
    # some without a layer; 64 / (8 x 1) < PP 16
    assert _one(pp=4, dp=2, interleave=3)[Framework.MEGATRON] is Reason.OK
    assert _one(pp=16, dp=1, interleave=6, layers=80)[Framework.MEGATRON] \
        is Reason.MG_INTERLEAVE_LAYERS
    assert _one(pp=16, dp=8, interleave=5)[Framework.MEGATRON] is Reason.MG_INTERLEAVE_MICRO
    assert _one(pp=4, dp=2, interleave=2)[Framework.MEGATRON] is Reason.OK
    assert _one(pp=4, dp=2, interleave=2)[Framework.DEEPSPEED] is Reason.DS_INTERLEAVE
    # torchtitan: no optimizer-only sharding, DDP only 1-D, CPU offload = FSDP2 full offload
    assert _one(zero=1)[Framework.TORCHTITAN] is Reason.TT_ZERO1
    assert _one(zero=0, tp=2, dp=4)[Framework.TORCHTITAN] is Reason.TT_DDP_ND
    assert _one(zero=3, offload=1)[Framework.TORCHTITAN] is Reason.TT_OFFLOAD_FSDP
    assert _one(zero=3, offload=1, offload_params=True)[Framework.TORCHTITAN] is Reason.OK
    # torchtitan under PP: FSDP2's parameters and gradients stay unsharded through the step
    # (torch pipelining stage.py backward_maybe_with_nosync): ZeRO-1, not ZeRO-2/3
    assert _one(zero=2, pp=2, tp=2, cp=2)[Framework.TORCHTITAN] is Reason.TT_FSDP_PP
    assert _one(zero=1, pp=2, tp=2, cp=2)[Framework.TORCHTITAN] is Reason.OK
    s = framework_support(1, 1, 8, 1, 1, 3, 0, False, 1, 1, True, 0, heads=64, n_kv=8,
                          experts=0, layers=80, precision="fp16")
    assert int(s.reason[Framework.TORCHTITAN]) == Reason.TT_FP16
    assert bool(s.ok[Framework.MEGATRON]) and bool(s.ok[Framework.DEEPSPEED])


def test_reason_texts_cite_a_source():
    for r in Reason:
        if r not in (Reason.OK, Reason.SMARTNIC):
            assert (" L" in r.text and ".py" in r.text) or ".md" in r.text \
                or r in (Reason.DS_CP, Reason.MG_OFFLOAD_PARAMS), r


def test_vectorised_equals_one_at_a_time():
    rng = np.random.default_rng(7)
    n = 4000
    cols = dict(tp=rng.choice([1, 2, 4, 8, 16], n), pp=rng.choice([1, 2, 4, 8], n),
                dp=rng.choice([1, 2, 4, 8], n), cp=rng.choice([1, 2], n),
                ep=rng.choice([1, 2, 4, 8], n), zero=rng.integers(0, 4, n),
                offload=rng.integers(0, 5, n), offload_params=rng.random(n) < 0.2,
                interleave=rng.choice([1, 2, 3], n), micro_batch=rng.choice([1, 2, 4], n),
                sequence_parallel=np.ones(n, bool), recompute=rng.integers(0, 3, n))
    model = dict(heads=64, n_kv=8, experts=8, layers=80)
    s = framework_support(**cols, **model, global_batch=256)
    for i in rng.choice(n, 200, replace=False):
        one = framework_support(**{k: v[i] for k, v in cols.items()}, **model, global_batch=256)
        for f in Framework:
            assert int(one.reason[f]) == int(s.reason[f][i])
    assert s.any().dtype == bool and s.any().shape == (n,)
    assert 0 < s.any().mean() < 1
    assert len(OFFLOAD_CODES) == 5


def test_plan_exports_torchtitan_and_megatron(run):
    r = run("plan", "llama-2-7b", "--nodes", 1, "--offloads", "none", "--export", "megatron")
    assert r.code == 0, r.err
    assert "--swiglu" in r.out and "--normalization RMSNorm" in r.out
    assert "--rotary-base 10000" in r.out  # meta-llama/Llama-2-7b-hf rope_theta
    r = run("plan", "llama-2-7b", "--nodes", 1, "--offloads", "none", "--export", "torchtitan")
    assert r.code in (0, 2), r.err
    if r.code == 0:
        assert tomllib.loads(r.out)["training"]["global_batch_size"] == 512
    else:
        assert "torchtitan" in r.err


def test_rejected_counts():
    # three layouts: ZeRO-3 + PP 2 (DeepSpeed and Megatron refuse, and torchtitan, whose FSDP
    # is ZeRO-1 under PP), SmartNIC (nobody), ZeRO-1 no offload (runs everywhere but torchtitan)
    s = framework_support([1, 1, 1], [2, 1, 1], [4, 8, 8], 1, 1, [3, 3, 1], [0, 3, 0], False,
                          1, 1, True, 0, heads=64, n_kv=8, experts=0, layers=80)
    assert s.any().tolist() == [False, False, True]
    assert rejected_counts(s) == {Reason.SMARTNIC.text: 4,  # one layout, four frameworks
                                  Reason.DS_ZERO23_PP.text: 2, Reason.MG_FSDP_PP.text: 1,
                                  Reason.TT_FSDP_PP.text: 1}
    ds = rejected_counts(s, [Framework.DEEPSPEED])
    assert ds == {Reason.DS_ZERO23_PP.text: 1, Reason.SMARTNIC.text: 1}


def test_a_registered_framework_takes_part_in_the_rules_and_the_counts():
    # adding a framework is one module and one register() line: its rows run in
    # framework_support and its rejections are counted under its rule's text
    from optimus_calc.frameworks import FrameworkPlugin, Rule, plugins, register
    from optimus_calc.frameworks.registry import unregister
    rule = Rule("TOY_TP", "toy: no tensor parallelism (toy/engine.py L1)", "toy/engine.py L1",
                lambda x: x.tp > 1)
    register(FrameworkPlugin(key="toy", label="Toy", repo="example/toy", commit="0" * 40,
                             rules=(rule,), launch="toy-run"))
    try:
        assert "toy" in [p.key for p in plugins()]
        s = framework_support([1, 2], 1, 8, 1, 1, 1, 0, False, 1, 1, True, 0, heads=64, n_kv=8,
                              experts=0, layers=80)
        assert s.ok["toy"].tolist() == [True, False]
        assert rejected_counts(s, ["toy"]) == {rule.text: 1}
    finally:
        unregister("toy")
    assert "toy" not in [p.key for p in plugins()]


def test_a_plugin_rule_may_answer_with_a_python_number(cat):
    # a plug-in's rule that holds for the whole run may return a plain True or 1 (run_rules
    # writes it as a mask, np.copyto's where=1); one layout's scan (registry.first_rule) reads
    # it the same way: the toy refuses every fp32 layout, and no bf16 one
    from optimus_calc.frameworks import FrameworkPlugin, Rule, register
    from optimus_calc.frameworks.registry import rule_of, unregister
    rule = Rule("TOY_FP32", "toy: no fp32 (toy/engine.py L2)", "toy/engine.py L2",
                lambda x: 1 if x.precision == "fp32" else None)
    register(FrameworkPlugin(key="toy32", label="Toy", repo="example/toy", commit="0" * 40,
                             rules=(rule,), launch="toy-run"))
    try:
        model, lay = cat.get("llama-2-7b", "model"), Layout(tp=1, dp=8)
        got = {str(getattr(f, "value", f)): int(r) for f, r in layout_support(
            lay, Training(seq_len=4096, precision="fp32"), model).items()}
        assert got["toy32"] != 0 and rule_of(got["toy32"]) is rule
        got = {str(getattr(f, "value", f)): int(r) for f, r in layout_support(
            lay, Training(seq_len=4096), model).items()}
        assert got["toy32"] == 0
    finally:
        unregister("toy32")


def test_every_rule_row_names_its_source_in_its_text():
    from optimus_calc.frameworks import plugins
    for p in plugins():
        for rule in p.rules:
            assert rule.source in rule.text, (p.key, rule.name)
            assert rule.name in Reason.__members__


def test_export_and_framework_choices_come_from_the_registry():
    from optimus_calc.cli.plan_cmd import plan_cmd
    from optimus_calc.frameworks import export_choices, plugins
    opt = next(o for o in plan_cmd.params if o.name == "export")
    assert list(opt.type.choices) == export_choices() == ["deepspeed", "megatron", "torchtitan"]
    assert [f.value for f in Framework] == [p.key for p in plugins()]


def test_architecture_rules_need_the_model(cat):
    from optimus_calc.hf_import import load_hf_config
    tr = Training(seq_len=4096, global_batch=64, dropout=False)  # Llama's (torchtitan has none)
    lay = Layout(tp=1, pp=1, dp=8, zero=3)
    # torchtitan v0.2.2 has llama3 8B/70B/405B but no Llama-2 flavour (llama3/__init__.py)
    assert layout_support(lay, tr, cat.get("llama-2-7b", "model"))[Framework.TORCHTITAN] \
        is Reason.TT_NO_FLAVOUR
    assert layout_support(lay, tr, cat.get("llama-3-8b", "model"))[Framework.TORCHTITAN] \
        is Reason.OK
    falcon = load_hf_config(Path(__file__).parent / "data" / "hf" / "falcon" / "config.json")
    assert layout_support(Layout(tp=1, pp=1, dp=8, zero=1), tr, falcon)[Framework.MEGATRON] \
        is Reason.MG_ARCH
    # without the model (a bare shape) the architecture rules are skipped
    assert _one(zero=3)[Framework.TORCHTITAN] is Reason.OK


def test_autotp_with_zero3_is_not_offered_to_deepspeed():
    # DeepSpeed's AutoTP training tutorial lists ZeRO stages 0-2 only
    # (docs/_tutorials/autotp-training.md L20 @ edaa722): TP 2 with ZeRO-3 is refused, ZeRO-2 runs
    # (without sequence parallelism, which AutoTP lacks: the next test)
    assert _one(tp=2, dp=4, zero=3)[Framework.DEEPSPEED] is Reason.DS_AUTOTP_ZERO3
    assert _one(tp=2, dp=4, zero=2, sequence_parallel=False)[Framework.DEEPSPEED] is Reason.OK
    assert _one(tp=1, dp=8, zero=3)[Framework.DEEPSPEED] is Reason.OK


def test_autotp_has_no_sequence_parallelism():
    # AutoTP's row-parallel LinearAllreduce all-reduces the full sequence (RowParallel.forward,
    # module_inject/layers.py L170-181 @ edaa722) and TPTrainingConfig has no sequence-parallel
    # field (runtime/tensor_parallel/config.py L38-58): TP 2 with SP is refused, without it runs;
    # TP 1 has nothing to shard (the SP switch is moot); Megatron-DeepSpeed has Megatron's SP
    assert _one(tp=2, dp=4, zero=2)[Framework.DEEPSPEED] is Reason.DS_AUTOTP_SP
    assert _one(tp=2, dp=4, zero=2, sequence_parallel=False)[Framework.DEEPSPEED] is Reason.OK
    assert _one(tp=1, dp=8, zero=2)[Framework.DEEPSPEED] is Reason.OK
    assert _one(tp=2, dp=4, zero=2)[Framework.MEGATRON_DEEPSPEED] is Reason.OK
    assert _one(tp=2, dp=4, zero=2)[Framework.MEGATRON] is Reason.OK


def test_deepspeed_autoep_rules_with_autotp():
    # AutoEP folded over AutoTP (DeepSpeed 0.19.8): no ZeRO offload (module_inject/
    # auto_ep_folding.py L248-250); experts a multiple of autoep_size = EP x TP
    # (module_inject/auto_ep_config.py L378-383): 64 experts over EP 4 x TP 2 = 8 fit,
    # 12 experts over 8 ranks do not
    assert _one(tp=2, dp=4, ep=4, experts=64, sequence_parallel=False)[Framework.DEEPSPEED] \
        is Reason.OK
    assert _one(tp=2, dp=4, ep=4, experts=12)[Framework.DEEPSPEED] is Reason.DS_AUTOEP_TP_EXPERTS
    assert _one(tp=1, dp=8, ep=4, experts=12)[Framework.DEEPSPEED] is Reason.OK  # 12 / 4
    assert _one(tp=2, dp=4, ep=4, experts=64, offload=1)[Framework.DEEPSPEED] \
        is Reason.DS_AUTOEP_TP_OFFLOAD
    assert _one(tp=1, dp=8, ep=4, experts=64, offload=1)[Framework.DEEPSPEED] is Reason.OK
    # Megatron-DeepSpeed builds its expert groups from its own mpu: not these rows
    assert _one(tp=2, dp=4, ep=4, experts=12)[Framework.MEGATRON_DEEPSPEED] is not \
        Reason.DS_AUTOEP_TP_EXPERTS


def test_squared_relu_models_run_and_export_on_megatron(run):
    # Megatron-LM builds Nemotron-4's squared-ReLU MLP from --squared-relu (megatron/training/
    # arguments.py L2448, argument_utils.py L320-322 @ d98e8a6); NeMo's 24.07 table runs the
    # 340B as TP 8 PP 8 VP 12 on 128 H100 (public_cases_nemo2407.py), so the rules take it
    r = run("step", "nemotron-4-340b", "--node", "dgx-h100", "--nodes", 16, "--tp", 8, "--pp", 8,
            "--interleave", 12, "--global-batch", 32, "--framework", "megatron", "--format",
            "json")
    assert r.code == 0, r.err
    assert r.json()["frameworks"]["megatron"] == "runs"  # was: cannot build the architecture
    r = run("plan", "nemotron-4-340b", "--node", "dgx-h100", "--nodes", 16, "--tp", 8, "--pp",
            8, "--global-batch", 32, "--export", "megatron")
    assert r.code == 0, r.err
    assert "--squared-relu" in r.out and "--swiglu" not in r.out
    assert "--normalization LayerNorm" in r.out
