"""Defects found by the cold review of round 14 (rev14): each test failed before its fix."""

from optimus_calc.frameworks import Framework, Reason, layout_support
from optimus_calc.frameworks.deepspeed_export import deepspeed_config_dict
from optimus_calc.specs.training import Layout, Training
from tests_support import cli


def test_megatron_deepspeed_moe_pipeline_turns_pipe_partitioning_off(cat):
    # Megatron-DeepSpeed's GPTModelPipe asserts that neither pipe_partitioned nor
    # grad_partitioned is on for an MoE model with PP > 1 and TP > 1 (gpt_model.py L376-384
    # @ 4efb479d): its stages send the MoE loss, which requires grad, beside the activations,
    # and the pipeline engine asserts every tensor after the first is grad-free when it
    # partitions (deepspeed pipe/engine.py L755-760 @ edaa722). DeepSpeed defaults both on
    # (runtime/config.py L435-436), so the export must write them off.
    m = cat.get("mixtral-8x7b", "model")
    lay = Layout(tp=2, pp=2, dp=4, ep=4, zero=1)
    tr = Training(seq_len=4096, global_batch=512, sequence_parallel=True)
    sup = layout_support(lay, tr, m)
    assert sup[Framework.DEEPSPEED] is not Reason.OK  # so the export is Megatron-DeepSpeed's
    assert sup[Framework.MEGATRON_DEEPSPEED] is Reason.OK
    cfg = deepspeed_config_dict(lay, tr, m)
    assert "pretrain_gpt.py" in cfg["_launch"]["command"]
    assert cfg["pipeline"] == {"pipe_partitioned": False, "grad_partitioned": False}
    # a dense model, or an MoE model without TP or without PP, keeps DeepSpeed's defaults
    dense = cat.get("llama-3-8b", "model")
    assert "pipeline" not in deepspeed_config_dict(lay.model_copy(update={"ep": 1}), tr, dense)
    no_tp = Layout(tp=1, pp=2, dp=8, ep=4, zero=1)
    assert "pipeline" not in deepspeed_config_dict(no_tp, tr, m)


def test_bare_count_on_a_step_command_does_not_suggest_model_states_only():
    # step, compare and breakeven time the step, which a bare count cannot have even with
    # --model-states-only (step then refused the flag it had just suggested); memory and fit
    # do take the flag, so they keep the suggestion
    for cmd in ("step", "compare", "breakeven"):
        code, _, err = cli(cmd, "70B")
        assert code == 2
        assert "step time needs an architecture" in err and "--model-states-only" not in err
    code, _, err = cli("memory", "70B")
    assert code == 2 and "add --model-states-only" in err
    code, out, _ = cli("memory", "70B", "--model-states-only")
    assert code == 0 and "1120.0 GB (16 bytes x 70.00B params)" in out  # 16 B x 70e9


def test_plan_export_searches_only_the_exported_frameworks_of_a_framework_list():
    # llama-3-8b on one DGX H100: over Megatron-LM and torchtitan the fastest layout is
    # Megatron-LM's TP 8 (58.63 s), which torchtitan also runs; `--export torchtitan` must write
    # torchtitan's own best as its profile times it (TP 1, FSDP over 8: 59.28 s), as it does
    # without --framework, not Megatron-LM's pick re-labelled
    base = ("plan", "llama-3-8b", "--node", "dgx-h100")
    code, both, err = cli(*base, "--framework", "megatron,torchtitan", "--export", "torchtitan")
    assert code == 0, err
    code, alone, _ = cli(*base, "--framework", "torchtitan", "--export", "torchtitan")
    assert code == 0 and both == alone
    assert "tensor_parallel_degree = 1" in both and "data_parallel_shard_degree = 8" in both
    # a list without the exported framework is an error, not another framework's layout
    code, _, err = cli(*base, "--framework", "deepspeed,torchtitan", "--export", "megatron")
    assert code == 2
    assert "--export megatron" in err and "--framework deepspeed,torchtitan" in err


def test_megatron_deepspeed_refuses_sequence_parallelism_on_a_sequence_tp_does_not_divide(cat):
    # Megatron-DeepSpeed scatters the embedding output over TP along the sequence and
    # _split_along_first_dim asserts dim_size % world_size == 0 (megatron/core/tensor_parallel/
    # mappings.py L56-58 @ 4efb479d), as Megatron-LM does (MG_SP_SEQ): seq 4097 at TP 2 with
    # SP cannot run; 4096 can, and so can 4097 without SP
    m = cat.get("llama-3-8b", "model")
    lay = Layout(tp=2, pp=1, dp=4, zero=1)
    odd = Training(seq_len=4097, global_batch=64, sequence_parallel=True)
    assert layout_support(lay, odd, m)[Framework.MEGATRON_DEEPSPEED] is Reason.MD_SP_SEQ
    even = Training(seq_len=4096, global_batch=64, sequence_parallel=True)
    assert layout_support(lay, even, m)[Framework.MEGATRON_DEEPSPEED] is Reason.OK
    no_sp = Training(seq_len=4097, global_batch=64, sequence_parallel=False)
    assert layout_support(lay, no_sp, m)[Framework.MEGATRON_DEEPSPEED] is Reason.OK


def test_explain_for_on_an_equation_without_scopes_says_to_leave_it_out():
    # step.time is evaluated once, with no scope: the error listed that scope as '' ("is
    # evaluated for '' here"), a value --for cannot take
    code, _, err = cli("explain", "step.time", "llama-3-8b", "--for", "backward")
    assert code == 2
    assert "''" not in err and "leave --for out" in err
    # an equation with scopes still lists them
    code, _, err = cli("explain", "compute.compute_time", "llama-3-8b", "--for", "x")
    assert code == 2 and "'forward'" in err and "'backward'" in err


def test_fit_names_the_framework_profile_it_sized_with():
    # fit applies --framework's physics (Megatron-LM's fp32 gradients: 4 bytes, not 2) but its
    # header said nothing of it, even on a layout the framework refuses; as step and memory,
    # it now names the profile and, here, DeepSpeed's ZeRO-3-with-PP rule
    args = ("fit", "llama-3-8b", "--node", "dgx-h100", "--solve", "micro-batch")
    code, out, _ = cli(*args, "--pp", "2", "--zero", "3", "--framework", "deepspeed")
    assert code == 0
    assert "framework: DeepSpeed profile (--framework deepspeed, although its rules reject" in out
    code, out, _ = cli(*args, "--zero", "1", "--framework", "megatron", "--format", "json")
    d = __import__("json").loads(out)
    assert d["physics_profile"]["framework"] == "megatron"
    assert d["physics_profile"]["applied"]["grad_bytes"] == 4


def test_hf_config_error_names_the_config_json_key(tmp_path):
    # "num_hidden_layers": 0 failed the Model's layers > 0 check and was reported as
    # "field 'layers'", a key the file does not have; the file's key is named now
    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, '
                   '"num_attention_heads": 4, "num_hidden_layers": 0, "vocab_size": 1000}')
    code, _, err = cli("memory", str(cfg))
    assert code == 2
    assert "field 'num_hidden_layers' (the model's layers): Input should be greater than 0" in err


def test_calibrate_memory_runs_of_three_layouts_are_not_one_layout(tmp_path):
    # three GPU-memory runs of three layouts (TP 1, 2, 4) have leave-one-out errors (the
    # table's "left out" column) but give no step-time band; the note said "one layout: no
    # leave-one-out error", contradicting the table. It now gives their mean |error|.
    runs = tmp_path / "mem.csv"
    runs.write_text("model,node,nodes,tp,zero,framework,measured_gpu_memory_bytes\n"
                    "llama-2-7b,dgx-a100,1,1,1,megatron,60e9\n"
                    "llama-2-7b,dgx-a100,1,2,1,megatron,45e9\n"
                    "llama-2-7b,dgx-a100,1,4,1,megatron,38e9\n")
    prof = tmp_path / "p.toml"
    code, out, err = cli("calibrate", str(runs), "-o", str(prof))
    assert code == 0, err
    assert "one layout" not in out
    code, js, _ = cli("calibrate", str(runs), "-o", str(prof), "--format", "json")
    d = __import__("json").loads(js)
    loo = [abs(r["error_loo"]) for r in d["runs"]]
    assert len(loo) == 3 and d["loo_error_low"] is None  # no step-time band
    assert f"leave-one-out: mean |error| {sum(loo) / 3:.1%}, GPU memory runs only" in out


def test_torchtitan_refuses_a_run_with_dropout(cat):
    # torchtitan's models have no dropout layer (llama3 TransformerBlock.forward is
    # x + attention(norm(x)), h + feed_forward(norm(h)): models/llama3/model/model.py
    # L390-414 @ 73a0e69) and its config no dropout key: `plan ... --dropout --export
    # torchtitan` wrote a config that trains without the dropout the plan sized and timed
    m = cat.get("llama-3-8b", "model")
    lay = Layout(tp=1, pp=1, dp=8, zero=3)
    asked = Training(seq_len=4096, global_batch=64, dropout=True)
    assert layout_support(lay, asked, m)[Framework.TORCHTITAN] is Reason.TT_DROPOUT
    assert layout_support(lay, asked, m)[Framework.MEGATRON] is Reason.OK  # it has dropout
    off = Training(seq_len=4096, global_batch=64, dropout=False)
    assert layout_support(lay, off, m)[Framework.TORCHTITAN] is Reason.OK
    base = ("plan", "llama-3-8b", "--node", "dgx-h100", "--export", "torchtitan")
    assert cli(*base)[0] == 0
    code, _, err = cli(*base, "--dropout")
    assert code == 2 and "its models have no dropout" in err


def test_sweep_pins_ep_on_its_moe_models_only():
    # `sweep --models llama-3-8b,mixtral-8x7b --ep 8` stopped at the dense model ("EP > 1
    # needs experts"), whichever came first, as --moe-imbalance no longer does: the pin is the
    # MoE models' (mixtral's row is plan's with --ep 8), the dense one runs EP 1 (plan's row)
    nodes = ("--node", "dgx-h100", "--nodes", "2")
    code, out, err = cli("sweep", "--models", "llama-3-8b,mixtral-8x7b", *nodes, "--ep", "8",
                         "--format", "json")
    assert code == 0, err
    rows = {r["model"]: r for r in __import__("json").loads(out)["rows"]}
    moe = cli("plan", "mixtral-8x7b", *nodes, "--ep", "8", "--format", "json")[1]
    dense = cli("plan", "llama-3-8b", *nodes, "--format", "json")[1]
    for name, plan in (("mixtral-8x7b", moe), ("llama-3-8b", dense)):
        rec = __import__("json").loads(plan)["recommended"]
        assert rows[name]["ep"] == rec["ep"] and rows[name]["step_time_s"] == rec["step_time_s"]
    assert rows["mixtral-8x7b"]["ep"] == 8 and rows["llama-3-8b"]["ep"] == 1
    # dense models alone: --ep 8 is still an error
    code, _, err = cli("sweep", "--models", "llama-3-8b", *nodes, "--ep", "8")
    assert code == 2 and "llama-3-8b is dense" in err


def test_nics_refuses_the_card_count_flags_it_would_ignore():
    # nics solves for the cards per node (memory: ceil(state / card), compute: to hide the
    # step), so --smartnics-per-node 4 and --no-spill left its output byte for byte unchanged
    base = ("nics", "llama70b", "--nodes", "2", "--tp", "8", "--zero", "3")
    assert cli(*base)[0] == 0
    for flag in (("--smartnics-per-node", "4"), ("--no-spill",)):
        code, _, err = cli(*base, *flag)
        assert code == 2 and err.startswith(f"error: {flag[0]}: nics computes the cards")


def test_breakeven_on_the_planners_layout_keeps_the_typed_card_count():
    # without a pinned layout breakeven studies the planner's, which dropped --smartnics-per-node
    # (and --no-spill, --gpu-fraction): 16 BlueField-2 per node gave the 8-card verdict. Now the
    # verdict's step is `step`'s on that layout with 16 cards per node
    import json
    be = ("breakeven", "llama70b", "--nodes", "2", "--device", "bluefield-2", "--format", "json")
    code, out, err = cli(*be, "--smartnics-per-node", "16")
    assert code == 0, err
    d = json.loads(out)
    assert d["devices_per_node"] == 16 and json.loads(cli(*be)[1])["devices_per_node"] == 8
    lay = d["layout"]
    code, out, err = cli("step", "llama70b", "--nodes", "2", "--tp", lay["tp"], "--pp", lay["pp"],
                         "--zero", lay["zero"], "--offload", "smartnic", "--smartnic",
                         "bluefield-2", "--micro-batch", d["training"]["micro_batch"],
                         "--smartnics-per-node", "16", "--format", "json")
    assert code == 0, err
    assert d["step_time_s"] == json.loads(out)["step_time_s"]


def test_assume_with_a_mistyped_name_suggests_the_close_ones():
    # `--assume fragmentaton=0.1` printed the 70-odd assumption names in one ~2,000-character
    # line; catalog names and commands already suggest difflib's close matches
    code, _, err = cli("memory", "llama-3-8b", "--assume", "fragmentaton=0.1")
    assert code == 2
    assert err == "error: --assume 'fragmentaton': unknown assumption; did you mean fragmentation?\n"
    code, _, err = cli("memory", "llama-3-8b", "--assume", "nope=1")
    assert code == 2 and err.count("\n") == 1 and len(err) < 120 and "explain --assumptions" in err


def test_catalog_entry_error_names_every_missing_field(tmp_path):
    # a [[model]] without tied_embeddings and position_embedding said only the first and
    # "(+1 more)": the user had to fix and rerun to learn the second
    (tmp_path / "m.toml").write_text(
        '[[model]]\nname = "tiny-2"\nfamily = "llama"\nlayers = 1\nhidden = 64\nheads = 1\n'
        'kv_heads = 1\nffn_hidden = 128\nffn_type = "swiglu"\nvocab = 100\nnorm = "rmsnorm"\n'
        'source = "test"\n')
    code, _, err = cli("--catalog-dir", str(tmp_path), "catalog", "list")
    assert code == 2
    assert ("field 'tied_embeddings': missing required field (+1 more: 'position_embedding')"
            in err)
