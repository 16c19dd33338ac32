"""`make bench` writes issue 35's targets into docs/speed.md between its markers
(benchmarks/targets.py --write): the block is replaced, the rest of the page kept."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _targets():
    spec = importlib.util.spec_from_file_location(
        "bench_targets", os.path.join(ROOT, "benchmarks", "targets.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_write_replaces_only_the_marked_block(tmp_path):
    t = _targets()
    page = tmp_path / "speed.md"
    page.write_text("# Speed\n\nintro\n<!-- targets -->\nold report\n<!-- /targets -->\n\n"
                    "## Rest\nkept\n")
    t.write_block(str(page), "1. row: 1.00x\n")
    text = page.read_text()
    assert text.startswith("# Speed\n\nintro\n<!-- targets -->\nMeasured ")
    assert "old report" not in text and "```\n1. row: 1.00x\n```\n<!-- /targets -->" in text
    assert text.endswith("<!-- /targets -->\n\n## Rest\nkept\n")
    assert " CPUs, Python " in text and " at commit " in text
    t.write_block(str(page), "2. row: 2.00x\n")  # idempotent on its own output
    assert page.read_text().count("<!-- targets -->") == 1 and "1.00x" not in page.read_text()
    assert not (tmp_path / "speed.md.tmp").exists()


def test_the_speed_page_has_the_markers():
    with open(os.path.join(ROOT, "docs", "speed.md"), encoding="utf-8") as f:
        text = f.read()
    t = _targets()
    assert text.index(t.MARK[0]) < text.index(t.MARK[1])


def test_write_without_markers_is_an_error(tmp_path, capsys):
    page = tmp_path / "p.md"
    page.write_text("no markers\n")
    with pytest.raises(SystemExit) as e:
        _targets().main(["--write", str(page), "--rows", "1"])
    assert e.value.code == 2
    assert "no '<!-- targets -->' line" in capsys.readouterr().err
    assert page.read_text() == "no markers\n"
