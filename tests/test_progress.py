"""The sweep's progress bar (issue 20): the core reports (done, total) through a callback; the
CLI draws a rich bar on stderr only when stderr is a terminal and the work has run about a
second; stdout (JSON/CSV) and captured output never carry it."""

import io

from optimus_calc.cli import progress as progress_mod
from optimus_calc.cli.progress import progress_bar


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_core_reports_every_point(cat, monkeypatch):
    from optimus_calc.analyses import sweep as sweep_mod
    from optimus_calc.analyses.sweep import SweepSpec
    monkeypatch.setattr(sweep_mod, "point_inputs", lambda cat, spec, *a: a)
    monkeypatch.setattr(sweep_mod, "_point", lambda cat, a, objective: a)
    calls = []
    # 2 models x 2 sequence lengths x 1 node type x 3 node counts = 12 points
    spec = SweepSpec(None, ("a", "b"), ("dgx-a100",), (1, 2, 4), seq_lens=(2048, 4096))
    pts = sweep_mod.sweep(cat, spec, progress=lambda d, t: calls.append((d, t)))
    assert len(pts) == 12 and calls == [(i, 12) for i in range(1, 13)]


def test_bar_drawn_on_a_terminal_after_the_delay(monkeypatch):
    fake = _Tty()
    monkeypatch.setattr("sys.stderr", fake)
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)
    with progress_bar("sweep") as cb:
        for i in range(1, 4):
            cb(i, 4)
    text = fake.getvalue()
    assert "sweep" in text and "3/4" in text


def test_no_bar_when_quick_or_not_a_terminal(monkeypatch):
    fake = _Tty()
    monkeypatch.setattr("sys.stderr", fake)
    with progress_bar("sweep") as cb:      # DELAY_S 1 s: a quick search never shows a bar
        cb(1, 2)
        cb(2, 2)
    assert fake.getvalue() == ""
    plain = io.StringIO()                  # not a terminal (a pipe, a file, pytest's capture)
    monkeypatch.setattr("sys.stderr", plain)
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)
    with progress_bar("sweep") as cb:
        cb(1, 2)
    assert plain.getvalue() == ""


def test_sweep_csv_and_stderr_carry_no_bar(run):
    r = run("sweep", "--models", "llama-2-7b", "--nodes", "1,2", "--format", "csv")
    assert r.code == 0 and r.out.startswith("model,node,nodes")
    for stream in (r.out, r.err):
        assert "\x1b" not in stream and "\u2501" not in stream
