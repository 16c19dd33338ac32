"""`explain` reads every equation the evaluator computed (issue 18): one equation's result is the
figure the command reports, and `explain --all` over ordinary layouts covers the registry."""

import pytest

from optimus_calc.equations.registry import load_all

CPU_LAYOUT = ["llama-2-7b", "--nodes", 1, "--zero", 2, "--offload", "cpu"]

# the Done-when layouts of issue 18
LAYOUTS = {
    "dense TP/PP": ["llama70b", "--nodes", 2, "--tp", 4, "--pp", 2, "--zero", 1],
    "CPU offload": CPU_LAYOUT,
    "NVMe + params": ["llama-2-7b", "--nodes", 1, "--zero", 3, "--offload", "nvme",
                      "--offload-params"],
    "SmartNIC": ["llama-2-7b", "--nodes", 2, "--zero", 1, "--offload", "smartnic"],
    "per-step alpha rings": ["llama70b", "--nodes", 2, "--tp", 4, "--pp", 2, "--zero", 1,
                             "--assume", "nccl_latency_model=0"],
    "GH200 superchip": ["llama-3-8b", "--node", "gh200", "--nodes", 4, "--zero", 2,
                        "--offload", "superchip"],
    "Mixtral EP": ["mixtral-8x7b", "--nodes", 2, "--tp", 2, "--ep", 8, "--zero", 1],
    "DeepSeek-V3 DeepEP over 8 nodes, group-limited": [
        "deepseek-v3", "--node", "dgx-h100", "--nodes", 32, "--pp", 4, "--interleave", 8,
        "--ep", 64, "--zero", 1, "--global-batch", 512, "--seq-len", 4096,
        "--moe-dispatcher", "deepep"],
    "Llama-3-8B CP 4 at 128K": ["llama-3-8b", "--nodes", 2, "--cp", 4, "--tp", 4,
                                "--seq-len", 131072, "--zero", 1, "--tokens", "1e12",
                                "--gpu-hour-price", 2],
    "interleaved PP, selective": ["llama70b", "--nodes", 4, "--tp", 4, "--pp", 4,
                                  "--interleave", 2, "--recompute", "selective"],
    "FP8 (TE) on H100": ["llama-2-7b", "--node", "dgx-h100", "--nodes", 1, "--zero", 1,
                         "--precision", "fp8"],
    "Megatron FP8 parameters, current scaling": [
        "llama-2-7b", "--node", "dgx-h100", "--nodes", 1, "--zero", 1, "--precision", "fp8",
        "--fp8-recipe", "te-current", "--framework", "megatron"],
    "gpt-oss sliding window, unfused": ["gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1,
                                        "--ep", 8, "--zero", 1, "--no-flash-attn"],
    "gpt-oss selective modules": ["gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1, "--ep", 8,
                                  "--zero", 1, "--recompute", "selective",
                                  "--recompute-modules", "layernorm,moe_act"],
}


def test_explain_offload_step_time_equals_step_optimizer_s(run):
    e = run("explain", "offload.step_time", *CPU_LAYOUT, "--format", "json")
    assert e.code == 0, e.err
    s = run("step", *CPU_LAYOUT, "--format", "json").json()
    assert s["optimizer_s"] > 0
    assert e.json()["result"] == pytest.approx(s["optimizer_s"], rel=1e-12)
    v = e.json()["values"]  # the seven phases add up (offload.step_time is their sum)
    assert sum(v.values()) == pytest.approx(s["optimizer_s"], rel=1e-12)
    table = run("explain", "offload.step_time", *CPU_LAYOUT)
    assert table.code == 0 and "T_ad" in table.out and "result: offload.step_time" in table.out


# CPU_LAYOUT is ZeRO-2: its exposed step is ZeRO-1/2's (offload_schedules.py; issue 19), where
# the gradient copies overlap the backward; ZeRO-3's offload.exposed_zero_offload does not bind
@pytest.mark.parametrize("name,term", [("offload.exposed_zero12_offload", "optimizer_exposed_s"),
                                       ("step.dp_exposed_time", "dp_comm_exposed_s")])
def test_explain_other_phases_equal_step(run, name, term):
    e = run("explain", name, *CPU_LAYOUT, "--format", "json")
    assert e.code == 0, e.err
    s = run("step", *CPU_LAYOUT, "--format", "json").json()
    assert e.json()["result"] == pytest.approx(s[term], rel=1e-12)


def test_explain_all_json_and_stages(run):
    r = run("explain", "--all", *CPU_LAYOUT, "--format", "json")
    assert r.code == 0, r.err
    rows = r.json()["equations"]
    assert {"name", "unit", "result", "inputs", "stage"} <= set(rows[0])
    s = run("step", *CPU_LAYOUT, "--format", "json").json()
    step = [x for x in rows if x["name"] == "offload.step_time"]
    assert len(step) == 1 and step[0]["stage"] == "optimizer"
    assert step[0]["result"] == pytest.approx(s["optimizer_s"], rel=1e-12)
    total = [x for x in rows if x["name"] == "step.time"]
    assert total[0]["stage"] == "composition"
    assert total[0]["result"] == pytest.approx(s["step_time_s"], rel=1e-12)
    order = [x["stage"] for x in rows]  # grouped: each stage's rows together, in stage order
    assert order.index("memory") < order.index("compute") < order.index("optimizer")
    assert len(list(dict.fromkeys(order))) == len(set(order))


def test_explain_all_pipeline_stage(run):
    args = LAYOUTS["dense TP/PP"]
    first = run("explain", "--all", *args, "--stage", 0, "--format", "json").json()
    last = run("explain", "--all", *args, "--stage", 1, "--format", "json").json()
    lam = lambda d: [x for x in d["equations"] if x["name"] == "step.forward_flops"][0]  # noqa
    # the logits run on the last stage only (lambda_h = 1 there)
    assert lam(first)["inputs"]["lambda_h"] == 0 and lam(last)["inputs"]["lambda_h"] == 1
    bad = run("explain", "--all", *args, "--stage", 2)
    assert bad.code == 2 and "--stage 2" in bad.err


def test_explain_all_covers_the_registry(run):
    names = set()
    for label, args in LAYOUTS.items():
        r = run("explain", "--all", *args, "--format", "json")
        assert r.code == 0, (label, r.err)
        names |= {x["name"] for x in r.json()["equations"]}
    registry = set(load_all())
    assert names <= registry
    missing = registry - names
    assert len(names) / len(registry) >= 0.95, sorted(missing)


DENSE = LAYOUTS["dense TP/PP"]


def _result(run, name, *extra):
    r = run("explain", name, *DENSE, *extra, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def test_glue_equations_by_hand(run):
    # Llama 3 70B (its 8192-token context), TP 4: one TP message is s x b x h x 2 bytes
    # = 8192 x 1 x 8192 x 2
    assert _result(run, "step.tp_message_bytes")["result"] == 134_217_728
    # ZeRO-1 reduces 8.82e9 params x 2 B in buckets of 5e8 elements x 2 B: ceil(17.6) = 18
    assert _result(run, "step.gradient_buckets")["result"] == 18
    # A100 80 GB less the 5% headroom: the usable memory `memory` reports
    mem = run("memory", *DENSE, "--format", "json").json()
    assert _result(run, "memory.usable_gpu_bytes")["result"] == pytest.approx(76e9)
    assert mem["per_gpu"]["usable_bytes"] == pytest.approx(76e9)


def test_explain_for_picks_one_evaluation(run):
    # NCCL's Simple ring (the default latency model): TP all-gather over 4 ranks, bus factor
    # 3/4; DP over 2 ranks, 1/2
    name = "comm.nccl_pipelined_time"
    tp = _result(run, name, "--for", "tp")
    dp = _result(run, name, "--for", "dp")
    assert tp["values"]["F"] == 0.75 and tp["values"]["z"] == 134_217_728
    assert dp["values"]["F"] == 0.5 and dp["result"] != tp["result"]
    table = run("explain", name, *DENSE)
    assert "evaluated for tp, cp, dp; shown: dp" in table.out
    bad = run("explain", name, *DENSE, "--for", "ep")
    assert bad.code == 2 and "evaluated for 'tp', 'cp', 'dp'" in bad.err


def test_explain_training_and_collectives_outside_the_evaluator(run):
    e = _result(run, "train.days", "--tokens", "1e12")
    s = run("step", *DENSE, "--tokens", "1e12", "--format", "json").json()
    assert e["result"] == pytest.approx(s["train_days"], rel=1e-12)
    # the collectives `comm` compares: one GPU's gradients over all 16 GPUs, as `comm` times it
    # (the per-step alpha model's tree: NCCL's latency model, the default, times it otherwise)
    off = ("--assume", "nccl_latency_model=0")
    tree = _result(run, "comm.tree_all_reduce_time", *off)
    assert tree["values"]["n"] == 16 and tree["result"] > 0
    c = run("comm", "all-reduce", "--size", str(tree["values"]["z"]), "--nodes", 2, "--algo",
            "tree", *off, "--format", "json").json()
    assert c["time_s"] == pytest.approx(tree["result"], rel=1e-9)


def _reimport(monkeypatch, order) -> dict[str, list[str]]:
    """The equation modules imported again, in ``order``, into an empty registry as in a fresh
    interpreter (monkeypatch then puts the modules and registry back): per module, the
    equations its import added."""
    import importlib
    import sys
    from optimus_calc import equations
    from optimus_calc.equations import registry as R
    for m in R.MODULES:
        # set first, so undo also removes a module this test imports that was not imported
        # before (delitem/delattr record nothing for a missing key): left behind, it is
        # registered only in this test's registry, and load_all() would miss its equations
        name = f"optimus_calc.equations.{m}"
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name))
        monkeypatch.delitem(sys.modules, name)
        monkeypatch.setattr(equations, m, getattr(equations, m, None), raising=False)
        monkeypatch.delattr(equations, m)
    monkeypatch.setattr(R, "REGISTRY", {})
    monkeypatch.setattr(R, "_MEANINGS", {})
    added = {}
    for m in order:
        before = set(R.REGISTRY)
        importlib.import_module("optimus_calc.equations." + m)
        added[m] = sorted(set(R.REGISTRY) - before)
    return added


def test_each_equation_module_registers_only_its_own_prefix(monkeypatch):
    # `explain memory.x` imports equations/memory.py alone (registry.load_module): that is
    # right only while every module names its equations after itself
    from optimus_calc.equations import registry as R
    added = _reimport(monkeypatch, R.MODULES)
    assert sum(len(v) for v in added.values()) >= 120
    for module, names in added.items():
        assert names and all(n.split(".", 1)[0] == module for n in names), module


def test_the_generated_text_does_not_depend_on_the_import_order(monkeypatch):
    # comm's m (GPUs per node) and step's m (micro-batches) share a name: the meanings were
    # whichever module wrote last when an equation was defined, so importing fp8, train, ...
    # memory (a reverse order) gave another compiled/text.py and the freshness test failed
    # in a worker where a test had imported the modules in another order
    from optimus_calc.equations import registry as R
    from optimus_calc.equations.codegen import TARGET, _text
    _reimport(monkeypatch, tuple(reversed(R.MODULES)))
    assert _text(R.REGISTRY) == (TARGET / "text.py").read_text()


def test_explain_without_a_model_refuses_layout_flags(run):
    # `explain NAME --tp 4` printed the bare equation and dropped --tp (review11's finding)
    r = run("explain", "step.time", "--tp", "4")
    assert r.code == 2 and r.err.strip() == (
        "error: --tp sets the values of a layout: give MODEL (explain step.time MODEL [layout "
        "options]); without it the equation has no values")
    assert run("explain", "step.time", "--format", "json").code == 0
    assert run("explain", "step.time", "llama-3-8b", "--tp", "2", "--format", "json").code == 0


def test_a_collectives_equation_names_the_algorithm_it_was_evaluated_for(run):
    """`explain comm.ring_all_reduce_time MODEL --nodes 2` printed n = 2 and 0.0749 s with no
    word that this is the hierarchical all-reduce's inter-node leg, next to `comm`'s flat ring
    of 140,392 us over the 16 GPUs (a cold review). Each algorithm's calls now carry its name:
    over 2 DGX A100 the ring equation runs inside the hierarchical all-reduce (n = 2 nodes,
    beta of 8 x 25 GB/s x 0.9: 2 x 1/2 x 1.348e10 / 180e9 = 0.0749 s, plus 2 x 3 us), and
    the flat ring's own time is NCCL's (comm.nccl_pipelined_time, scope "ring all-reduce")."""
    out = " ".join(run("explain", "comm.ring_all_reduce_time", "llama-2-7b", "--nodes",
                       2).out.split())
    assert "evaluated for hierarchical all-reduce; shown: hierarchical all-reduce" in out
    rows = run("explain", "--all", "llama-2-7b", "--nodes", 2, "--format", "json").json()
    rows = rows["equations"] if "equations" in rows else rows["rows"]
    flat = [r for r in rows if r["name"] == "comm.nccl_pipelined_time"
            and r["scope"] == "ring all-reduce"]
    c = run("comm", "all-reduce", "--size", 13476831232, "--nodes", 2, "--format",
            "json").json()
    assert len(flat) == 1 and flat[0]["result"] == pytest.approx(c["time_s"], rel=1e-9)
    leg = [r for r in rows if r["name"] == "comm.ring_all_reduce_time"]
    assert [r["scope"] for r in leg] == ["hierarchical all-reduce"]
    assert leg[0]["result"] == pytest.approx(1.3476831232e10 / 180e9 + 6e-6, rel=1e-6)
