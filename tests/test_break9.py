"""Defects found by reading the product cold and trying to break it from the CLI (branch break9):
each test pins the corrected behaviour."""

import re

import pytest


def test_no_fit_names_host_ram_when_gpu_memory_fits(run):
    # gpt-1008b on one DGX A100: the ZeRO-3 layouts that offload weights and optimizer to the
    # CPU fit GPU memory (a few GB per GPU), but their host state does not fit host RAM: the
    # optimizer alone is 1008.04e9 x 12 B = 12.1 TB against dgx-a100's 2,048 GB less the 10%
    # host_reserved_fraction = 1,843.2 GB. The verdict said "the smallest a framework runs needs
    # 8.63 GB per GPU on 76.00 GB usable", a figure that fits: it must name host RAM instead.
    d = run("plan", "gpt-1t", "--nodes", 1, "--format", "json").json()
    assert d["recommended"] is None
    why = d["why"]
    assert "fit GPU memory" in why and why.endswith("fail on: offloaded state exceeds host RAM")
    smallest = float(re.search(r"from ([0-9.]+) GB per GPU", why).group(1))
    assert smallest < 76.0 and d["smallest_gpu_memory_bytes"] == pytest.approx(smallest * 1e9,
                                                                               abs=5e6)
    # the export plans with the exported framework's layouts: DeepSpeed's offload them, so
    # host RAM is what fails; Megatron-LM offloads no weights, so GPU memory is
    r = run("plan", "gpt-1t", "--nodes", 1, "--export", "deepspeed")
    assert r.code == 2 and r.err.count("\n") == 1 and "host RAM" in r.err
    r = run("plan", "gpt-1t", "--nodes", 1, "--export", "megatron")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "the smallest megatron runs needs" in r.err and "host RAM" not in r.err


def test_no_fit_names_gpu_memory_when_nothing_fits_it(run):
    # without offload the smallest gpt-1008b layout on 8 GPUs is ZeRO-3: at least
    # 1008.04e9 x 16 B / 8 = 2,016 GB per GPU of model states alone, far over 76 GB usable
    d = run("plan", "gpt-1t", "--nodes", 1, "--offloads", "none", "--format", "json").json()
    assert d["why"].startswith("no layout fits: the smallest a framework runs needs ")
    assert d["smallest_gpu_memory_bytes"] > 1008.04e9 * 16 / 8
    assert "per GPU on 76.00 GB usable of a100-80gb" in d["why"]


def test_breakeven_catalog_view_says_when_the_layout_does_not_fit(run):
    # `breakeven llama70b` (no --device) studies the planner's CPU layout, TP4 DP2 ZeRO-3, for
    # every device; with a SmartNIC the weights stay on the GPU: 70.55e9 x (2 + 2) B / 8 =
    # 35.28 GB of model states plus 46.54 GB of activations and overheads, 88.56 GB > 76 GB
    # usable (`memory llama70b --tp 4 --dp 2 --zero 3 --offload smartnic` says the same). The
    # table said "yes" for BlueField-3 with no word of it; the one-device view has the note.
    d = run("breakeven", "llama70b", "--format", "json").json()
    bf3 = next(x for x in d["devices"] if x["device"] == "bluefield-3")
    assert not bf3["layout_fits"] and bf3["gpu_memory_bytes"] == pytest.approx(88.56e9,
                                                                               rel=1e-3)
    out = run("breakeven", "llama70b").out
    note = re.search(r"the layout does not fit as it is with ([^(]*)\(", " ".join(out.split()))
    assert note and "bluefield-3" in note.group(1) and "epyc-7742" not in note.group(1)


@pytest.mark.parametrize("args, says", [
    (("step", "llama70b", "--gpu", ""), "error: unknown GPU ''"),
    (("step", "llama70b", "--smartnic", "", "--offload", "smartnic"), "error: unknown SmartNIC ''"),
    (("memory", "llama70b", "--profile", ""), "error: --profile is empty"),
    (("plan", "llama-2-7b", "--offloads", ""), "error: --offloads: '' is not one of"),
    (("plan", "llama-2-7b", "--framework", ""), "error: --framework: '' is not one of"),
    (("sweep", "--models", "llama70b", "--node", "dgx-a100", "--nodes", "1", "--smartnic", ""),
     "error: --smartnic is empty"),
    # an empty item of a list (a doubled or trailing comma) ran as if absent, where --tp 1,,2
    # and --seq-len 2048, were already refused (inputs.parse_ints)
    (("sweep", "--models", "llama-2-7b", "--nodes", "1,,4"),
     "error: --nodes: '1,,4' has an empty item"),
    (("sweep", "--models", "llama-2-7b,", "--nodes", "1"),
     "error: --models: 'llama-2-7b,' has an empty item"),
])
def test_an_empty_flag_value_is_an_error_not_the_default(run, args, says):
    # each ran before as if the flag were absent (the node's GPU, every offload target, ...):
    # an explicit empty value is a typo or an unset shell variable, named as --node '' is
    r = run(*args)
    assert r.code == 2 and r.out == "" and r.err.startswith(says) and r.err.count("\n") == 1


def test_an_empty_profile_environment_variable_is_unset(run, monkeypatch):
    # click reads an empty OPTIMUS_CALC_PROFILE as unset: the defaults, exit 0
    monkeypatch.setenv("OPTIMUS_CALC_PROFILE", "")
    assert run("memory", "70e9", "--model-states-only").code == 0


def test_calibrate_absurdly_slow_measurement_is_one_line(run, tmp_path):
    # a step of 1e30 s: prediction / measured = ~1e-30, so 1 + (p/m - 1) rounds to 0.0 and
    # 1 / 0 printed two numpy RuntimeWarnings before the error, and the error said "0x"
    runs = tmp_path / "runs.csv"
    runs.write_text("model,node,measured_step_time_s\nllama-2-7b,dgx-a100,1e30\n")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would be an internal error, exit 1
        r = run("calibrate", str(runs), "-o", str(tmp_path / "p.toml"))
    assert r.code == 2 and r.err.count("\n") == 1 and "no profile written" in r.err
    assert "prediction still below 1e-15x its measurement" in r.err
    assert not (tmp_path / "p.toml").exists()


def test_fit_nodes_finds_node_counts_that_are_not_powers_of_two(run):
    # TP 8 x PP 5 = 40 GPUs runs on multiples of 5 DGX A100 nodes; `memory` says it fits at 5
    # (55.4 GB of 76 GB usable on stage 0). The search doubled over 1, 2, 4, ... 65,536, none a
    # multiple of 5, and answered "no node count up to 100000 fits".
    assert run("memory", "llama70b", "--tp", 8, "--pp", 5, "--nodes", 5,
               "--format", "json").json()["fits"] is True
    d = run("fit", "llama70b", "--solve", "nodes", "--tp", 8, "--pp", 5, "--nodes", 5,
            "--format", "json").json()
    assert d["min_nodes"] == 5


def test_fit_nodes_does_not_refuse_a_layout_larger_than_the_default_node_count(run):
    # TP 8 x PP 16 = 128 GPUs: the fewest DGX A100 nodes holding it are 128 / 8 = 16; without
    # --nodes the layout was checked at --nodes 1 and refused ("does not divide the 8 GPUs")
    # though the node count is what --solve nodes asks for
    r = run("fit", "gpt-1t", "--solve", "nodes", "--tp", 8, "--pp", 16, "--zero", 1,
            "--offload", "cpu", "--format", "json")
    assert r.code == 0, r.err
    assert r.json()["min_nodes"] == 16


def test_breakeven_capacity_column_names_its_unit(run):
    # `memory` and `compare` call it offload_capacity_bytes_per_device; `breakeven` said
    # offload_capacity_per_device, a CSV column without a unit. BlueField-3: 32 GB per card.
    r = run("breakeven", "llama70b", "--format", "csv")
    header = r.out.splitlines()[0].split(",")
    assert "offload_capacity_bytes_per_device" in header
    assert "offload_capacity_per_device" not in header
    d = run("breakeven", "llama70b", "--device", "bluefield-3", "--format", "json").json()
    assert d["offload_capacity_bytes_per_device"] == 32e9


def test_plan_zero_list_above_max_zero_is_an_error(run):
    # `--zero 0,3 --max-zero 1` recommended a ZeRO-3 layout: the list silently won
    r = run("plan", "llama70b", "--zero", "0,3", "--max-zero", 1)
    assert r.code == 2 and r.out == ""
    assert r.err == "error: --zero 3 is above --max-zero 1; give one of them\n"
    d = run("plan", "llama70b", "--zero", "0,1", "--max-zero", 1, "--format", "json").json()
    assert d["recommended"]["zero"] <= 1


@pytest.mark.parametrize("target", ["none", "smartnic"])
def test_offload_params_on_a_target_that_keeps_the_weights_is_an_error(run, target):
    # `memory llama70b --zero 3 --offload-params` (no --offload) printed 17.64 GB of weights
    # per GPU (70.55e9 x 2 B / 8) and "offload_params": true in its JSON: the flag was ignored
    r = run("memory", "llama70b", "--zero", 3, "--offload-params", "--offload", target)
    assert r.code == 2 and r.out == ""
    assert r.err == ("error: --offload-params needs an offload target that moves the weights "
                     f"(cpu, nvme); --offload {target} keeps them on the GPU\n")


def test_offload_params_still_moves_the_weights_where_it_can(run):
    # to the CPU: the GPU keeps only the gathered buffers, 0.58 GB of weights instead of
    # 70.55e9 x 2 B / 8 = 17.64 GB; compare keeps applying it to cpu and nvme only
    d = run("memory", "llama70b", "--zero", 3, "--offload-params", "--offload", "cpu",
            "--format", "json").json()
    assert d["per_gpu"]["weights_bytes"] < 17.64e9 / 10
    c = run("compare", "llama70b", "--zero", 3, "--offload-params", "--format", "json")
    assert c.code == 0


@pytest.mark.parametrize("flag", ["--ep", "--etp"])
def test_expert_degrees_on_a_dense_model_are_an_error(run, flag):
    # `step llama70b --etp 2` ran (same step time as without) and listed DeepSpeed as
    # rejecting the layout for its --etp; `--ep 8` said "must divide the 0 experts"
    r = run("step", "llama70b", flag, 2)
    assert r.code == 2 and r.err == (f"error: {flag} 2: llama-3-70b is dense (no experts); "
                                     "expert parallelism applies to MoE models\n")
    assert run("step", "mixtral", "--ep", 8, "--etp", 1, "--tp", 2).code == 0


# step's breakdown rows, JSON key -> the row's equation (the table's "equation" column)
_ROWS = {"elementwise_s": "step.elementwise_time", "tp_comm_s": "step.tp_comm_time",
         "cp_comm_s": "step.cp_comm_time", "pp_comm_s": "step.pp_comm_time",
         "dp_comm_exposed_s": "step.dp_exposed_time"}


@pytest.mark.parametrize("layout, exposed_eq", [
    (("--nodes", 4, "--tp", 8, "--cp", 2, "--pp", 2), "compute.exposed_time"),
    (("--nodes", 2, "--tp", 4, "--zero", 1, "--offload", "cpu"),
     "offload.exposed_zero12_offload"),
    (("--nodes", 2, "--tp", 4, "--zero", 3, "--offload", "nvme"), "offload.exposed_zero_offload"),
    (("--nodes", 2, "--tp", 4, "--zero", 3, "--offload", "smartnic"), "optimusnic.exposed_time"),
])
def test_every_step_row_names_an_equation_explain_shows(run, layout, exposed_eq):
    # the table named comm.ring_all_gather_time for the TP and CP rows, compute.exposed_time
    # for the DP and (every target's) optimizer rows and memory.activation_layer_bytes for
    # the element-wise one: `explain NAME MODEL [layout]` answered "not evaluated for this
    # configuration" or showed another quantity
    d = run("step", "llama70b", *layout, "--format", "json").json()
    table = run("step", "llama70b", *layout).out
    for key, name in {**_ROWS, "optimizer_exposed_s": exposed_eq}.items():
        # the element-wise row is its forward and backward calls together, with the loss over
        # the logits on the last stage (its own equation, compute.loss_time)
        calls = ([(n, s) for n in (name, "compute.loss_time") for s in ("forward", "backward")]
                 if key == "elementwise_s" else [(name, None)])
        total = 0.0
        for what, scope in calls:
            e = run("explain", what, "llama70b", *layout, *(("--for", scope) if scope else ()),
                    "--format", "json")
            assert e.code == 0, (what, e.err)
            total += e.json()["result"]
        assert total == pytest.approx(d[key], rel=1e-9, abs=1e-12), name
        assert name in table


def test_explain_elementwise_shows_the_activations_call(run):
    # a dense model's zero-byte routing call, made last, was the one `explain` showed:
    # L_stage 0, M_l 0, result 0 s, while step's element-wise row is 12.54 s. Backward: 3 HBM
    # passes x 80 layers x 2.24815e9 B x 32 micro-batches / (2,039 GB/s x 0.9) = 9.4086 s;
    # the forward's 1 pass a third of it: 3.1362 s, 12.5448 s together. The row adds the loss
    # over the logits of the one stage (compute.loss_time of compute.loss_bytes, forward and
    # backward): (38 + 14) B x 8,192 tokens x 128,256 logits x 32 micro-batches
    # / (2,039 GB/s x 0.9) = 0.6962 + 0.2565 s
    v = run("explain", "step.elementwise_time", "llama70b", "--nodes", 2,
            "--format", "json").json()
    assert v["values"]["L_stage"] == 80 and v["values"]["n_pass"] == 3
    assert v["result"] == pytest.approx(3 * 80 * 2.24815e9 * 32 / (2039e9 * 0.9), rel=1e-5)
    loss = run("explain", "compute.loss_time", "llama70b", "--nodes", 2, "--for",
               "forward", "--format", "json").json()
    assert loss["values"]["M_loss"] == 38 * 8192 * 128256 and loss["values"]["lambda_h"] == 1
    assert loss["result"] == pytest.approx(38 * 8192 * 128256 * 32 / (2039e9 * 0.9), rel=1e-9)
    st = run("step", "llama70b", "--nodes", 2, "--format", "json").json()
    assert st["elementwise_s"] == pytest.approx(
        v["result"] * 4 / 3 + (38 + 14) * 8192 * 128256 * 32 / (2039e9 * 0.9), rel=1e-9)


@pytest.mark.parametrize("flag", [("--smartnics-per-node", 2), ("--no-spill",),
                                  ("--smartnic", "bluefield-2")])
def test_smartnic_only_flags_without_the_smartnic_offload_are_an_error(run, flag):
    # `memory llama70b --smartnics-per-node 2` (no --offload smartnic) printed the memory of
    # the layout without offload, the flag silently ignored; so did `step ... --offload cpu
    # --smartnic bluefield-2` (705.93 s with and without it)
    r = run("memory", "llama70b", *flag)
    assert r.code == 2 and r.err == (f"error: {flag[0]} applies to --offload smartnic (got "
                                     "--offload none)\n")
    ok = run("memory", "llama70b", "--zero", 3, "--offload", "smartnic", *flag)
    assert ok.code == 0, ok.err


@pytest.mark.parametrize("flag, value", [("--for", "tp"), ("--stage", "1")])
def test_explain_value_pickers_without_a_model_are_an_error(run, flag, value):
    # `explain step.tp_comm_time --stage 1` printed the bare equation, the flag ignored
    r = run("explain", "step.tp_comm_time", flag, value)
    assert r.code == 2 and r.out == "" and r.err == (
        f"error: {flag} picks values of a layout: give MODEL (explain step.tp_comm_time MODEL "
        "[layout options])\n")


def test_small_training_budget_figures_are_not_printed_as_zero(run):
    # llama-3-8b on one DGX A100, 1e9 tokens: 238.4 steps of 139.76 s = 0.386 days, 8 GPUs x
    # 9.26 h = 74 GPU-hours x 400 W x PUE 1.2 = 0.0355 MWh; the table printed "0.0 MWh"
    r = run("step", "llama-3-8b", "--tokens", "1e9", "--gpu-hour-price", 2)
    d = run("step", "llama-3-8b", "--tokens", "1e9", "--gpu-hour-price", 2,
            "--format", "json").json()
    assert d["energy_MWh"] == pytest.approx(d["gpu_hours"] * 400 * 1.2 / 1e6, rel=1e-9)
    assert d["energy_MWh"] == pytest.approx(0.0355, abs=5e-4)
    text = " ".join(r.out.split())
    assert "0.036 MWh" in text and "0.39 days" in text and "0.0 MWh" not in text


def test_breakeven_save_scale_nan_is_an_input_error(run, tmp_path):
    # click's FloatRange lets NaN through its bounds: an internal error (exit 1,
    # "cannot convert float NaN to integer") instead of naming the flag
    card = tmp_path / "card.toml"
    r = run("breakeven", "llama70b", "--device", "bluefield-3", "--save-scale", "nan",
            "--save-card", str(card))
    assert r.code == 2 and r.err.count("\n") == 1
    assert "--save-scale" in r.err and "not a finite number" in r.err
    assert not card.exists()


def test_optimizer_step_sockets_on_a_card_is_an_error(run):
    # --sockets "CPU sockets (CPUs only)" was ignored on a SmartNIC (0.4207 s either way),
    # while --threads on a GPU is refused; on a CPU two sockets halve the step: 0.1808 s ->
    # 0.0904 s for 1B parameters on EPYC 7742 (twice the memory bandwidth)
    r = run("optimizer-step", "--params", "1B", "--device", "bluefield-3", "--sockets", 2)
    assert r.code == 2 and r.err == "error: --sockets applies to CPUs; bluefield-3 is a dpu\n"
    one, two = (run("optimizer-step", "--params", "1B", "--device", "epyc-7742", "--sockets",
                    k, "--format", "json").json()["time_s"] for k in (1, 2))
    assert two == pytest.approx(one / 2, rel=1e-9)


@pytest.mark.parametrize("args, rule", [
    (("llama-2-7b", "--micro-batch", 513), "a micro-batch must divide the global batch / DP"),
    (("mixtral", "--ep", 16, "--nodes", 2), "EP must divide the experts and DP x CP"),
    (("llama70b", "--ep", 2), "EP > 1 needs experts: llama-3-70b is dense"),
])
def test_plan_without_layouts_names_the_rule_of_the_pinned_column(run, args, rule):
    # the hint was "(TP must divide the heads and the node's GPUs)" whatever was pinned: the
    # default batch gives 512 / DP sequences per replica, which 513 does not divide; Mixtral
    # has 8 experts, which EP 16 does not divide
    r = run("plan", *args)
    assert r.code == 2 and r.err.startswith("error: no layout of ")
    assert f"({rule}" in r.err
    # TP's rule only where TP is pinned (a cold review: it was named whatever was pinned)
    assert "TP must divide" not in r.err


@pytest.mark.parametrize("command, says", [
    ("compare", "compare evaluates every offload target in turn; leave it out"),
    ("nics", "nics sizes the SmartNIC offload of the layout; leave it out"),
])
def test_offload_flag_that_a_command_ignores_is_an_error(run, command, says):
    # `compare llama70b --offload cpu` printed every target as without it; nics sized the
    # SmartNICs of the layout whatever --offload said
    r = run(command, "llama70b", "--offload", "cpu")
    assert r.code == 2 and r.err == f"error: --offload cpu: {says}\n"
    assert run(command, "llama70b", "--format", "json").code == 0


# The fresh process's `validate` reads its cases from the test session (conftest.py computes
# them once per worker): this test is about its entry point, output and exit, and the cases'
# ~3 s of computation are other tests' subject. The same values; the callables behind the
# leave-one-source-out refits, which the document does not show, are not carried over.
CHILD = """import pickle, runpy, sys
from optimus_calc import validate
cases, missing = pickle.loads(open(sys.argv.pop(1), "rb").read())
validate.run_all = lambda *args: cases
validate.not_expressed = lambda *args: missing
runpy.run_module("optimus_calc", run_name="__main__", alter_sys=True)
"""


def test_a_reader_that_stops_early_ends_the_run_quietly(tmp_path, cat):
    # `optimus-calc validate | head -1`: validate writes 520 kB, more than a pipe holds; the
    # broken pipe reached click's main, which exits 1 (the internal-error status) without a
    # word, although cli/main.py meant exit 0 for it
    import os
    import pickle
    import subprocess
    import sys
    from dataclasses import replace
    from pathlib import Path

    from optimus_calc import validate
    cases = [replace(c, fit=None, host=None) for c in validate.run_all(cat)]
    (tmp_path / "cases").write_bytes(pickle.dumps((cases, validate.not_expressed(cat))))
    src = Path(__file__).resolve().parents[1] / "src"
    env = dict(os.environ, PYTHONPATH=str(src))
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "cases"), "validate"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert p.stdout.read(100).startswith(b"validate: ")
    p.stdout.close()  # what `head` does after its line
    err = p.stderr.read()
    assert p.wait(timeout=120) == 0 and err == b""


def test_catalog_dir_empty_or_a_file_is_named_as_such(run, tmp_path, monkeypatch):
    # `--catalog-dir ''` loaded the current directory (Path('') is '.'): here a stray TOML
    # file there broke every command; a file given as the directory "does not exist"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stray.toml").write_text("[[profile]]\n")
    r = run("--catalog-dir", "", "memory", "70e9", "--model-states-only")
    assert r.code == 2 and r.err == ("error: --catalog-dir is empty; give a directory of "
                                     "catalog TOML files\n")
    r = run("--catalog-dir", "stray.toml", "memory", "70e9", "--model-states-only")
    assert r.code == 2 and r.err == "error: catalog directory 'stray.toml' is not a directory\n"
