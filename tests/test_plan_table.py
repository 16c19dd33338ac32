"""The plan's top-K table tells its rows apart."""


def _header(text: str) -> list[str]:
    return next(line for line in text.splitlines() if line.startswith("#   framework")).split()


def test_interleave_column_when_rows_interleave(run):
    # plan llama70b --nodes 2: rows 1 and 2 are one layout at v 1 and v 2 (JSON `interleave`),
    # which the table showed as two identical rows before the v column was kept
    d = run("plan", "llama70b", "--nodes", 2, "--format", "json").json()
    assert any(c["interleave"] > 1 for c in d["candidates"])
    assert "v" in _header(run("plan", "llama70b", "--nodes", 2).out)


def test_no_interleave_column_without_interleaving(run):
    # PP 1 everywhere: no row interleaves, the 120-column table keeps its width
    d = run("plan", "llama-2-7b", "--pp", 1, "--format", "json").json()
    assert all(c["interleave"] == 1 for c in d["candidates"])
    assert "v" not in _header(run("plan", "llama-2-7b", "--pp", 1).out)


def test_sp_column_when_rows_differ_in_sequence_parallelism(run):
    # plan llama-3-8b --node dgx-h100 --framework megatron --tp 2 --pp 1 --zero 1: rows 1 and 2
    # are one layout with SP on and off (JSON `sequence_parallel`), identical in the table
    # before (torchtitan, the earlier example, runs TP only with SP: TT_TP_SP)
    args = ("plan", "llama-3-8b", "--node", "dgx-h100", "--nodes", 1, "--framework",
            "megatron", "--tp", 2, "--pp", 1, "--zero", 1)
    d = run(*args, "--format", "json").json()
    assert len({c["sequence_parallel"] for c in d["candidates"]}) == 2
    assert "SP" in _header(run(*args).out)
    # ... and the headline plan, whose rows share SP, keeps its width
    d = run("plan", "llama70b", "--nodes", 2, "--format", "json").json()
    assert len({c["sequence_parallel"] for c in d["candidates"]}) == 1
    assert "SP" not in _header(run("plan", "llama70b", "--nodes", 2).out)
