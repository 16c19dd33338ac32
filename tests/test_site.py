"""The documentation site builds with `mkdocs build --strict`: a broken link, a nav entry without
its page or a page the build cannot read fails the tests (issue 36)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mkdocs_build_strict(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "guide" / "plan" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "commands" / "index.html").is_file()
