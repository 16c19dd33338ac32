"""The error contract: input errors exit 2 with one `error:` line; internal errors exit 1 with a
--debug hint; no traceback without --debug; user text is never evaluated."""

import pytest

from optimus_calc.cli.main import main

BATTERY = [
    (["memory", "llama7b"], "did you mean"),
    (["memory", "llama70b", "--node", "dgx-a1000"], "unknown node 'dgx-a1000'; did you mean"),
    (["memory", "llama70b", "--gpu", "h1000"], "unknown GPU"),
    (["memory", "llama70b", "--nodes", "0"], "'--nodes': 0 is not in the range"),
    (["memory", "llama70b", "--nodes", "-3"], "'--nodes'"),
    (["memory", "llama70b", "--tp", "nan"], "'--tp'"),
    (["memory", "llama70b", "--gpu-fraction", "nan", "--offload", "superchip"],
     "not a finite number"),
    (["memory", "llama70b", "--gpu-fraction", "inf"], "not a finite number"),
    (["memory", "1e400", "--model-states-only"], "not a finite number"),
    (["memory", "1e17", "--model-states-only"], "larger than"),
    (["memory", "gpt2-xl", "--tp", "2", "--gpus-per-node", "2"], "does not divide the 25"),
    (["memory", "bert-large", "--nodes", "4", "--pp", "32"], "larger than the 24 layers"),
    (["memory", "llama70b", "--tp", "2", "--pp", "2", "--dp", "3"], "is not the 8 GPUs"),
    (["memory", "llama70b", "--global-batch", "7"], "is not a multiple of --dp"),
    (["memory", "llama70b", "--offload-params"], "--offload-params needs --zero 3"),
    (["memory", "gpt-oss-120b", "--ep", "3"], "--ep 3 must divide"),
    (["memory", "llama70b", "--assume", "gemm_efficiency=nan"], "not a number"),
    (["memory", "llama70b", "--assume", "nope=1"], "unknown assumption"),
    (["memory", "llama70b", "--assume", "fragmentation=2"], "less than or equal to 1"),
    (["memory", "llama70b", "--assume", "fragmentation"], "expected NAME=VALUE"),
    (["comm", "all-reduce", "--size", "1.5GB", "--ranks", "12"], "not a multiple"),
    # round 30: a gradient of 3 bytes is no dtype; SuperOffload needs a superchip's Grace
    (["step", "llama-2-7b", "--grad-bytes", "3"], "3 is not a gradient dtype's size"),
    (["memory", "llama-2-7b", "--zero", "3", "--offload", "superchip"],
     "dgx-a100 is not a superchip node"),
    (["breakeven", "llama70b", "--nodes", "2", "--tp", "8", "--zero", "3", "--offload",
      "superchip", "--sensitivity"], "dgx-a100 is not a superchip node"),
    (["step", "llama70b", "--node", "gh200", "--nodes", "16", "--tp", "1", "--zero", "3",
      "--offload", "nvme"], "--offload nvme: gh200 has no NVMe drives"),
    (["comm", "all-reduce", "--size", "abc"], "'abc' is not a size"),
    (["comm", "all-reduce", "--size", "1e"], "'1e' is not a size"),
    (["comm", "all-reduce", "--size", "-1GB"], "--size '-1GB' must be > 0"),
    (["comm", "all-reduce", "--size", "1e400"], "not a finite number"),
    (["comm", "all-reduce", "--size", "1GB", "--alpha-us", "nan"], "not a finite number"),
    (["comm", "gather", "--size", "1GB"], "'gather' is not one of"),
    (["optimizer-step", "--params", "0", "--device", "bf3"], "must be > 0"),
    (["optimizer-step", "--params", "302M", "--device", "nonesuch"], "unknown device"),
    (["optimizer-step", "--params", "302M", "--device", "connectx-7"], "is a nic"),
    (["plan", "70e9"], "bare parameter count"),
    (["plan", "llama70b", "--offloads", "superchip"], "does not offer it"),
    (["sweep", "--models", "llama-2-7b", "--nodes", "1,-2"], "not a positive whole number"),
    (["step", "70e9", "--model-states-only"], "bare parameter count"),
    (["fit", "llama70b"], "Missing option '--solve'"),
    (["explain", "nonsense_eq"], "unknown equation"),
    (["step", "llama-2-7b", "--node", "dgx-2"], "v100-32gb has no bf16 peak in the catalog; "
                                                "use --precision fp16"),
    (["plan", "llama-2-7b", "--node", "dgx-2"], "use --precision fp16"),
    (["memory", "llama70b", "-o", "/nonexistent-dir/x.json"], "does not exist"),
    (["memory", "llama70b", "-o", "/tmp"], "is a directory"),
    (["catalog", "show"], "Missing argument 'NAME'"),
    (["--catalog-dir", "/nonexistent-dir", "catalog", "list"], "does not exist"),
]


@pytest.mark.parametrize("args,msg", BATTERY, ids=[" ".join(a)[:60] for a, _ in BATTERY])
def test_bad_input_battery(run, args, msg):
    r = run(*args)
    assert r.code == 2, (r.code, r.err)
    assert r.err.startswith("error: ") and r.err.count("\n") == 1, r.err
    assert msg in r.err, r.err
    assert "Traceback" not in r.err and r.out == ""


@pytest.mark.parametrize("text", ['__import__("os").system("echo pwned")',
                                  "exec('print(1)')", "1+1", "${HOME}"])
def test_user_text_is_never_evaluated(run, text):
    for args in (["memory", text], ["comm", "all-reduce", "--size", text],
                 ["optimizer-step", "--params", text, "--device", "bf3"],
                 ["memory", "llama70b", "--assume", f"fragmentation={text}"]):
        r = run(*args)
        assert r.code == 2 and "pwned" not in r.out and r.out == ""


def test_no_eval_or_sympify_in_source():
    import re
    from pathlib import Path
    src = Path(__file__).resolve().parents[1] / "src"
    pat = re.compile(r"\b(eval|exec|sympify|parse_expr)\(")
    hits = [f"{p}:{i}" for p in src.rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pat.search(line)]
    assert hits == []


def test_internal_error_exit_1_with_debug_hint(run, monkeypatch):
    import optimus_calc.evaluate.memory as M

    def boom(*a, **k):
        raise ZeroDivisionError("simulated")
    monkeypatch.setattr(M, "estimate_memory", boom)
    r = run("memory", "llama70b")
    assert r.code == 1 and "internal error" in r.err and "--debug" in r.err
    assert "Traceback" not in r.err and r.err.count("\n") == 1
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "memory", "llama70b"])


def test_huge_model_stays_finite(run):
    # a 1e15-parameter model: 1.6e16 bytes per replica, no overflow and no inf
    d = run("memory", "1e15", "--model-states-only", "--format", "json").json()
    assert d["per_gpu"]["total_bytes"] == pytest.approx(16e15)
    assert d["fits"] is False


def test_bad_hf_configs(run, tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    r = run("memory", str(p))
    assert r.code == 2 and "not valid JSON (line 1" in r.err
    p.write_text('{"model_type": "llama", "hidden_size": 8}')
    r = run("memory", str(p))
    assert r.code == 2 and "missing field 'num_hidden_layers'" in r.err
    p.write_text('{"model_type": "t5"}')
    r = run("memory", str(p))
    assert r.code == 2 and "unsupported model_type 't5'" in r.err
    r = run("memory", str(tmp_path / "missing.json"))
    assert r.code == 2 and "no such file" in r.err
