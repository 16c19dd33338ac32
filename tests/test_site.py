"""The documentation site builds with `mkdocs build --strict`: a broken link, a nav entry without
its page or a page the build cannot read fails the tests (issue 36). Built in-process through
mkdocs' own build (what `mkdocs build --strict` runs: a warning aborts it), without a fresh
interpreter."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mkdocs_build_strict(tmp_path, monkeypatch, caplog):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort
    monkeypatch.chdir(ROOT)
    config = load_config(config_file=str(ROOT / "mkdocs.yml"), strict=True,
                         site_dir=str(tmp_path / "site"))
    try:
        build(config)
    except Abort as exc:  # strict: the warnings' count; the warnings are the captured log
        raise AssertionError(f"{exc}: {[r.getMessage() for r in caplog.records]}") from None
    assert (tmp_path / "site" / "guide" / "plan" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "commands" / "index.html").is_file()
