"""--recompute-modules per layout and per framework (round 22): the list a sweep row or plan
candidate shows, Megatron-LM's launch-flag refusals only where the named framework reads the
flags (physics.unread_dropped), and the re-run clamp passes capped at the clamp's."""

from test_recompute_modules import OSS


def test_sweep_and_plan_show_the_list_only_where_the_layout_runs_it(run):
    # the list is a search setting for its selective layouts (recompute_modules_of): a sweep row
    # or plan candidate shows it only when that layout recomputes selectively under a framework
    # that reads the flag. gpt-oss-120b on 8 x DGX H100: the neutral search recommends
    # DeepSpeed with recompute none (the row once showed "layernorm,moe_act" anyway); under
    # --framework megatron it recommends a selective layout, which runs the list
    args = ("sweep", "--models", "gpt-oss-120b", "--node", "dgx-h100", "--nodes", 8,
            "--recompute-modules", "layernorm,moe_act", "--format", "json")
    neutral = run(*args).json()["rows"][0]
    assert (neutral["framework"], neutral["recompute"]) == ("deepspeed", "none")
    assert neutral["recompute_modules"] == ""
    meg = run(*args, "--framework", "megatron").json()["rows"][0]
    assert (meg["recompute"], meg["recompute_modules"]) == ("selective", "layernorm,moe_act")
    plan = run("plan", "gpt-oss-120b", "--node", "dgx-h100", "--nodes", 8,
               "--recompute-modules", "layernorm,moe_act", "--framework", "megatron",
               "--format", "json").json()["candidates"]
    assert {c["recompute"]: c.get("recompute_modules") for c in plan} == {
        "selective": "layernorm,moe_act", "full": None}


def test_delayed_scaling_refusal_is_megatrons_only(run):
    # Megatron-LM refuses --recompute-modules under delayed FP8 scaling (transformer_config.py
    # L2001-2006 @ d98e8a6); a framework whose profile does not read the flag drops it with a
    # note (physics._read) instead of refusing the run. Neutral physics and any search that
    # may pick Megatron-LM (no --framework, each, a list naming it) still refuse, one line
    flags = ("--recompute", "selective", "--recompute-modules", "moe_act", "--precision", "fp8",
             "--fp8-recipe", "te-delayed", "--format", "json")
    for fw in ("torchtitan", "deepspeed"):
        r = run("step", *OSS, *flags, "--framework", fw)
        assert r.code == 0, (fw, r.err)
        assert "--recompute-modules moe_act: Megatron-LM launch flag" in \
            r.json()["unread_launch_flags"]
    search = ("gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1, *flags[2:])
    ok = [run("plan", *search, "--framework", "torchtitan,deepspeed"),
          run("sweep", "--models", *search, "--framework", "torchtitan")]
    assert [r.code for r in ok] == [0, 0], [r.err for r in ok]
    refused = [run("step", *OSS, *flags, *x) for x in ((), ("--framework", "megatron"))]
    refused += [run("plan", *search, *x) for x in ((), ("--framework", "each"),
                                                  ("--framework", "torchtitan,megatron"))]
    for r in refused:
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
        assert "Megatron-LM refuses them under delayed scaling" in r.err


def test_the_re_run_clamp_passes_follow_the_clamp_passes(run):
    # moe_act_clamp_forward_passes (4) are the forward's part of moe_act_clamp_passes (11.5):
    # a fused kernel's 0 there (--assume moe_act_clamp_passes=0) re-runs no eager clamp under
    # --recompute-modules moe_act, as if both were 0 (before: the 4 passes stayed)
    base = ("step", *OSS, "--recompute", "selective", "--recompute-modules", "moe_act",
            "--assume", "moe_act_clamp_passes=0", "--format", "json")
    a = run(*base).json()["step_time_s"]
    b = run(*base, "--assume", "moe_act_clamp_forward_passes=0").json()["step_time_s"]
    assert a == b
    # at the default 4 passes the re-run clamp costs, by hand (compute.moe_act_recompute_bytes'
    # 2 n_cf share): tau_mb 4096 x k 4 x f_x 2880 x b_a 2 x 2 x 4 passes x 24 MoE layers, one
    # micro-batch, over HBM 3.35e12 B/s x 0.9 = 18,119,393,280 / 3.015e12 = 6.0097 ms of
    # element-wise time (so the equality above is not vacuous)
    on = ("step", *OSS, "--recompute", "selective", "--recompute-modules", "moe_act")
    d = run(*on, "--format", "json").json()["elementwise_s"]
    e = run(*on, "--assume", "moe_act_clamp_forward_passes=0", "--format", "json").json()
    assert abs((d - e["elementwise_s"]) - 18_119_393_280 / (3.35e12 * 0.9)) < 1e-9


def test_review_the_list_per_row_everywhere_and_refusals_in_order(run):
    # a cold review of round 22's change: (1) Megatron-LM's dropout + full-iteration-graph
    # refusal reads the list as typed (a list given lifts it), not as DeepSpeed's profile drops
    # it; (2) plan's CSV rows carry each candidate's list, not the search's; (3) a sweep row
    # where nothing fits shows none; (4) a dense model's row drops moe_act; (5) a bad
    # framework name is named before any refusal that depends on the name
    r = run("step", "llama-3-8b", "--node", "dgx-h100", "--tp", 1, "--seq-len", 4096,
            "--global-batch", 8, "--recompute", "selective", "--cuda-graph-impl",
            "full_iteration", "--dropout", "--recompute-modules", "layernorm",
            "--framework", "deepspeed")
    assert r.code == 0, r.err
    import csv
    import io
    out = run("plan", "gpt-oss-120b", "--node", "dgx-h100", "--nodes", 8, "--recompute",
              "selective", "--recompute-modules", "layernorm,moe_act", "--framework", "each",
              "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out.out)))
    assert {(x["framework"], x["recompute_modules"]) for x in rows} == {
        ("deepspeed", ""), ("megatron", "layernorm,moe_act")}
    none = run("sweep", "--models", "gpt-oss-120b", "--node", "dgx-a100", "--nodes", 1,
               "--recompute-modules", "layernorm,moe_act", "--framework", "megatron",
               "--format", "json").json()["rows"]
    assert [(x["fits"], x["recompute_modules"]) for x in none] == [(False, "")]
    mixed = run("sweep", "--models", "llama-3-8b,gpt-oss-20b", "--node", "dgx-h100", "--nodes",
                1, "--recompute", "selective", "--recompute-modules", "layernorm,moe_act",
                "--framework", "megatron", "--format", "json").json()["rows"]
    assert [(x["model"], x["recompute_modules"]) for x in mixed] == [
        ("llama-3-8b", "layernorm"), ("gpt-oss-20b", "layernorm,moe_act")]
    bad = run("plan", "gpt-oss-20b", "--node", "dgx-h100", "--recompute", "selective",
              "--recompute-modules", "moe_act", "--precision", "fp8", "--fp8-recipe",
              "te-delayed", "--framework", "torchtitan,foo")
    assert bad.code == 2 and bad.err.startswith("error: --framework: 'foo' is not one of")


def test_megatron_refusals_only_where_its_flags_are_read(run):
    # Megatron-LM's other launch-flag refusals follow the same rule as the te-delayed one: a
    # --framework whose profile does not read the flags (torchtitan, DeepSpeed: they declare
    # neither --cuda-graph-impl nor --moe-pad-expert-input-to-capacity) runs the layout and notes
    # them unread; Megatron-LM and framework-neutral physics refuse, one line, exit 2
    base = ("step", "qwen3-30b-a3b", "--node", "dgx-h100", "--ep", 8, "--seq-len", 4096,
            "--global-batch", 8)
    graph = ("--cuda-graph-impl", "full_iteration")
    pad = ("--moe-pad-expert-input-to-capacity", "--moe-dispatcher", "deepep")
    for flags, msg in ((graph, "needs --moe-dispatcher hybridep"),
                       (pad, "refuses padding on its DeepEP backend")):
        ok = run(*base, *flags, "--framework", "torchtitan", "--format", "json")
        assert ok.code == 0, ok.err
        assert "Megatron-LM launch flag" in ok.json()["unread_launch_flags"]
        assert run(*base, *flags, "--framework", "deepspeed").code == 0
        for fw in ((), ("--framework", "megatron")):
            r = run(*base, *flags, *fw)
            assert r.code == 2 and msg in r.err and len(r.err.strip().splitlines()) == 1


def test_plan_and_sweep_name_the_flags_no_searched_profile_reads(run):
    # as `step` does (report.common.unread_flags_note): a search names the launch flags none of
    # the profiles it applies reads (--framework NAMES: theirs; each: all four, so Megatron-LM
    # reads them; any: framework-neutral physics, which reads only --recompute-modules)
    base = ("gpt-oss-20b", "--node", "dgx-h100", "--nodes", 1, "--recompute", "selective",
            "--recompute-modules", "moe_act", "--format", "json")
    tt = run("plan", *base, "--framework", "torchtitan").json()["unread_launch_flags"]
    assert tt == ("--recompute-modules moe_act: Megatron-LM launch flag, which the torchtitan "
                  "(FSDP2) profile does not read (it moves no number here; --framework "
                  "megatron reads it)")
    assert "unread_launch_flags" not in run("plan", *base, "--framework", "each").json()
    assert "unread_launch_flags" not in run("plan", *base, "--framework", "any").json()
    neutral = run("plan", *base, "--framework", "any", "--no-overlap-grad-reduce").json()
    assert neutral["unread_launch_flags"].startswith(
        "--no-overlap-grad-reduce: Megatron-LM launch flag, which framework-neutral physics "
        "does not read")
    sw = run("sweep", "--models", *base, "--framework", "torchtitan,deepspeed").json()
    assert "which the torchtitan (FSDP2) and the DeepSpeed profiles do not read" in \
        sw["unread_launch_flags"]


def test_compare_and_nics_name_unread_flags_and_nics_says_why_no_card_count_hides(run):
    # compare and nics note the launch flags their profile does not read, as step does; and a
    # nics row whose optimizer step no card count hides ('-': none of 1..16 per GPU, analyses/
    # nics.py MAX_CARDS_PER_GPU) no longer blames a bare parameter count: gpt-oss-20b's
    # planner-mode layout under DeepSpeed keeps 250.98 GB of state per GPU (ZeRO-0)
    flags = ("--recompute", "selective", "--recompute-modules", "layernorm,moe_act",
             "--framework", "deepspeed")
    msg = ("--recompute-modules layernorm,moe_act: Megatron-LM launch flag, which the DeepSpeed "
           "profile does not read")
    cmp = run("compare", "gpt-oss-20b", "--node", "dgx-h100", "--tp", 1, "--ep", 8,
              "--seq-len", 4096, "--global-batch", 8, *flags, "--format", "json")
    assert cmp.code == 0 and cmp.json()["unread_launch_flags"].startswith(msg), cmp.err
    nics = run("nics", "gpt-oss-20b", "--node", "dgx-h100", "--seq-len", 4096, *flags)
    assert nics.code == 0, nics.err
    text = " ".join(nics.out.split())
    assert msg in text and "bare parameter counts" not in text
    assert "no count up to 16 cards per GPU hides the optimizer step" in text


def test_explain_says_why_a_recompute_module_equation_did_not_run(run):
    # under a profile that drops --recompute-modules (torchtitan) the module's equations do not
    # run; explain names the condition instead of its generic "not evaluated" message
    args = ("gpt-oss-20b", "--node", "dgx-h100", "--ep", 8, "--tp", 1, "--seq-len", 4096,
            "--global-batch", 8, "--recompute", "selective", "--recompute-modules", "moe_act")
    r = run("explain", "compute.moe_act_recompute_bytes", *args, "--framework", "torchtitan")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "it runs only with --recompute selective --recompute-modules moe_act" in r.err
    assert run("explain", "compute.moe_act_recompute_bytes", *args).code == 0
    n = run("explain", "compute.norm_recompute_bytes", *args)  # moe_act only: no norm re-run
    assert n.code == 2 and "--recompute-modules layernorm" in n.err


def test_compare_shows_the_list_per_strategy(run):
    # compare --framework auto: DeepSpeed runs the GPU, CPU and NVMe rows and drops the list;
    # the SmartNIC what-ifs, which no framework runs, are framework-neutral physics and run it.
    # Each row (JSON and CSV) says which
    import csv
    import io
    args = ("compare", "gpt-oss-20b", "--node", "dgx-h100", "--tp", 1, "--ep", 8, "--seq-len",
            4096, "--global-batch", 8, "--recompute", "selective", "--recompute-modules",
            "moe_act", "--framework", "auto")
    js = run(*args, "--format", "json").json()["strategies"]
    assert {(r["framework"], r.get("recompute_modules")) for r in js} == {
        ("deepspeed", None), ("neutral", "moe_act")}
    rows = list(csv.DictReader(io.StringIO(run(*args, "--format", "csv").out)))
    assert {(r["framework"], r["recompute_modules"]) for r in rows} == {
        ("deepspeed", ""), ("neutral", "moe_act")}


def test_explain_the_discarded_activations_need_an_moe_model(run):
    # memory.discarded_activation_bytes runs for an MoE model only (engine._activations): a
    # dense model with --recompute-modules layernorm gets its condition, not the generic message
    r = run("explain", "memory.discarded_activation_bytes", "llama-3-8b", "--node", "dgx-h100",
            "--recompute", "selective", "--recompute-modules", "layernorm")
    assert r.code == 2 and "layernorm or moe_act, on an MoE model" in r.err
