"""The catalog ships inside the wheel and is found from a non-editable install elsewhere."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# one worker builds the wheel once for both tests (make test: pytest -n 2 --dist loadgroup)
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    # the build backend installed with the test extra builds in this environment (a third of
    # the time); without it pip builds in an isolated environment, as a user's pip does
    try:
        import hatchling  # noqa: F401
        isolation = ["--no-build-isolation"]
    except ImportError:
        isolation = []
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *isolation,
                        "-w", str(out), str(ROOT)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.fail(f"wheel build failed: {p.stderr[-2000:]}")
    return next(out.glob("optimus_calc-*.whl"))


def test_wheel_contains_catalog(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "optimus_calc/hardware_catalog/gpus/nvidia.toml" in names
    assert any(n.startswith("optimus_calc/hardware_catalog/models/") for n in names)
    # the HTML page's template, style and script (report/html.py loads them as package data)
    for part in ("page.html.j2", "page.css", "page.js"):
        assert f"optimus_calc/report/templates/{part}" in names


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """The wheel installed (not editable) in a directory of its own, once for both tests."""
    target = tmp_path_factory.mktemp("installed") / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    return target


def test_installed_wheel_lists_catalog_from_tmp(installed):
    target = installed
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = ("import optimus_calc, sys; assert optimus_calc.__file__.startswith(sys.argv[1]), "
            "optimus_calc.__file__; from optimus_calc.cli.main import main; "
            "main(['catalog', 'list', '--kind', 'node', '--format', 'csv'])")
    p = subprocess.run([sys.executable, "-c", code, str(target)], cwd="/tmp", env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "dgx-a100" in p.stdout and "xe8545" in p.stdout


def test_installed_wheel_writes_an_html_page(installed):
    # the template is found as package data of an installed (not editable) copy
    target = installed
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = ("import optimus_calc, sys; assert optimus_calc.__file__.startswith(sys.argv[1]), "
            "optimus_calc.__file__; from optimus_calc.cli.main import main; "
            "main(['memory', 'llama70b', '--nodes', '1', '--tp', '8', '--format', 'html'])")
    p = subprocess.run([sys.executable, "-c", code, str(target)], cwd="/tmp", env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("<!DOCTYPE html>") and "memory: llama-3-70b" in p.stdout
