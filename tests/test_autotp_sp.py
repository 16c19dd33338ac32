"""DeepSpeed's AutoTP (plain DeepSpeed with TP > 1, config-only tensor_parallel.autotp_size) has
no sequence parallelism: its row-parallel LinearAllreduce all-reduces the full sequence in the
forward (RowParallel, deepspeed/module_inject/layers.py L159-188 @ edaa722), its column-parallel
layers all-reduce the input gradient in the backward (ColumnParallel, L220-247), and the
training config (TPTrainingConfig, runtime/tensor_parallel/config.py L38-58) has no switch to
shard the sequence. The rule DS_AUTOTP_SP reads the SP axis: `plan` offers DeepSpeed only SP-off
rows, `step --framework deepspeed` models SP off and refuses a typed --sp; Megatron-DeepSpeed
keeps Megatron's sequence parallelism."""

import json

from optimus_calc.frameworks import Reason
from tests_support import cli, cli_json

SP_TEXT = Reason.DS_AUTOTP_SP.text
H100 = ("llama-3-8b", "--node", "dgx-h100", "--nodes", "1")
# llama-3-8b: 32 layers, hidden 4096, seq 8192, no dropout; TP 2, ZeRO-1, micro-batch 1, PP 1
LAYOUT = ("--tp", "2", "--zero", "1")


def _mem(*args):
    return cli_json("memory", *H100, *LAYOUT, *args)


def test_step_models_what_deepspeed_runs_sp_off():
    # --sp/--no-sp left out: the layout runs on DeepSpeed only without SP, so SP is off and the
    # header says why; the numbers equal a typed --no-sp's
    d = cli_json("step", *H100, *LAYOUT, "--framework", "deepspeed")
    assert d["training"]["sequence_parallel"] is False
    code, out, _ = cli("step", *H100, *LAYOUT, "--framework", "deepspeed")
    assert code == 0 and "sequence parallelism off (--sp/--no-sp not given)" in out
    assert "although its rules reject" not in out
    typed = cli_json("step", *H100, *LAYOUT, "--framework", "deepspeed", "--no-sp")
    assert typed["step_time_s"] == d["step_time_s"]


def test_autotp_activations_are_not_sequence_sharded():
    # Korthikanti et al. 2022 Table 2: the replicated part of a layer's activations is 8 s b h
    # bytes without dropout (equations/memory.activation_layer_bytes), sharded over t only with
    # SP. TP 2: 8 sbh without SP, 8/2 = 4 sbh with it; difference 4 x 8192 x 1 x 4096
    # = 134,217,728 bytes per layer x 32 layers (PP 1, one micro-batch in flight)
    # = 4,294,967,296 bytes; the 5% allocator overhead on activations (framework-neutral and
    # DeepSpeed alike) adds 214,748,364.8
    ds = _mem("--framework", "deepspeed")["per_gpu"]
    sp_on = _mem("--framework", "megatron-deepspeed")["per_gpu"]  # Megatron's SP: kept
    assert abs(ds["activations_bytes"] - sp_on["activations_bytes"] - 4_294_967_296) < 1
    assert abs(ds["overhead_bytes"] - sp_on["overhead_bytes"] - 214_748_364.8) < 1
    # the same physics profile (the DeepSpeed engine's) on both: only SP differs
    assert abs(ds["total_bytes"] - sp_on["total_bytes"] - 4_509_715_660.8) < 1
    neutral = _mem("--no-sp")["per_gpu"]
    assert neutral["activations_bytes"] == ds["activations_bytes"]


def test_step_refuses_a_typed_sp_for_deepspeed_autotp():
    code, out, err = cli("step", *H100, *LAYOUT, "--framework", "deepspeed", "--sp")
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line
    assert line.startswith("error: --sp with --framework deepspeed and --tp 2: ")
    assert SP_TEXT in line and "module_inject/layers.py" in line
    # TP 1: nothing to shard, --sp is moot and not refused
    assert cli("step", *H100, "--tp", "1", "--zero", "1", "--framework", "deepspeed",
               "--sp")[0] == 0


def test_megatron_deepspeed_and_auto_keep_sequence_parallelism():
    d = cli_json("step", *H100, *LAYOUT, "--framework", "megatron-deepspeed")
    assert d["training"]["sequence_parallel"] is True
    assert cli_json("step", *H100, *LAYOUT, "--framework", "megatron-deepspeed",
                    "--no-sp")["training"]["sequence_parallel"] is False
    # auto picks the first framework that runs the layout as given (SP on by default):
    # DeepSpeed refuses it now, Megatron-LM runs it
    code, out, _ = cli("step", *H100, *LAYOUT, "--framework", "auto")
    assert code == 0 and "Megatron-LM profile (--framework auto" in out
    assert "sequence parallelism off" not in out


def test_plan_offers_deepspeed_only_sp_off_rows():
    # one grid point (TP 2, PP 1, DP 4, micro-batch 1, no offload, no recompute) x ZeRO 0-3 x
    # SP off/on = 8 layouts. DeepSpeed refuses ZeRO-3 with AutoTP (DS_AUTOTP_ZERO3, both SP
    # values: 2) and, of ZeRO 0-2, SP on (DS_AUTOTP_SP: 3); of the 3 SP-off layouts ZeRO-0 does
    # not fit: its Adam state, 12 B x 8.03 B params / TP 2 = 48.2 GB unsharded, is 36.1 GB more
    # than ZeRO-1's quarter over DP 4, on top of ZeRO-1's 58.3 GB: 94 GB > 76 GB usable. So 2
    # are offered, both SP off. Before the rule, the SP-on rows were offered too
    d = cli_json("plan", *H100, "--framework", "deepspeed", "--tp", "2", "--pp", "1",
                 "--micro-batch", "1", "--offloads", "none", "--recompute", "none",
                 "--global-batch", "8")
    assert d["layouts"] == 8 and d["feasible"] == 2
    assert sorted((c["zero"], c["sequence_parallel"]) for c in d["candidates"]) == [
        (1, False), (2, False)]
    rej = d["framework_rejections"]
    assert rej[SP_TEXT] == 3 and rej[Reason.DS_AUTOTP_ZERO3.text] == 2


def test_plan_and_export_of_the_reviewers_command():
    # plan llama-3-8b --node dgx-h100 --framework deepspeed --tp 2: every row SP off; its
    # export is AutoTP's config, which has no sequence-parallel key
    d = cli_json("plan", "llama-3-8b", "--node", "dgx-h100", "--framework", "deepspeed",
                 "--tp", "2")
    assert d["candidates"] and all(not c["sequence_parallel"] for c in d["candidates"])
    code, out, err = cli("plan", "llama-3-8b", "--node", "dgx-h100", "--framework", "deepspeed",
                         "--tp", "2", "--export", "deepspeed")
    assert code == 0, err
    cfg = json.loads(out)
    assert cfg["tensor_parallel"] == {"autotp_size": 2}
    assert cfg["_launch"]["launcher"].startswith("DeepSpeed (AutoTP")
    assert "sequence" not in json.dumps({k: v for k, v in cfg.items() if k != "_launch"})
