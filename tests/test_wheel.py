"""The catalog ships inside the wheel and is found from a non-editable install elsewhere."""

import json
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
    # the build backend installed with the test extra builds in this process, through the PEP 517
    # hook pip calls (`pip wheel --no-build-isolation` took 0.66 s CPU more, starting pip);
    # without it pip builds in an isolated environment, as a user's pip does
    try:
        from hatchling.build import build_wheel
    except ImportError:
        build_wheel = None
    if build_wheel is not None:
        here = os.getcwd()
        os.chdir(ROOT)  # the hook builds the project in the working directory
        try:
            return out / build_wheel(str(out))
        finally:
            os.chdir(here)
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
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
    # A pure-Python wheel (Root-Is-Purelib, no .data directory) installs by unpacking it (the
    # wheel spec, PEP 427 "Installing a wheel"): what `pip install --target` does for it, without
    # starting pip (0.8 s CPU). A wheel that needs more fails here instead of being unpacked.
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        assert "Root-Is-Purelib: true" in zf.read(info).decode(), "not a pure-Python wheel"
        assert not [n for n in names if n.split("/", 1)[0].endswith(".data")], names
        zf.extractall(target)
    return target


# Both checks of the installed copy in one fresh interpreter (it must not see this checkout):
# each command's exit status and output, with the copy the process imported.
RUN_INSTALLED = """
import contextlib, io, json, sys
import optimus_calc
from optimus_calc.cli.main import main
out = {"file": optimus_calc.__file__}
for name, args in json.loads(sys.argv[2]).items():
    buf, code = io.StringIO(), 0
    with contextlib.redirect_stdout(buf):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code
    out[name] = [code, buf.getvalue()]
print(json.dumps(out))
"""
COMMANDS = {"catalog": ["catalog", "list", "--kind", "node", "--format", "csv"],
            "html": ["memory", "llama70b", "--nodes", "1", "--tp", "8", "--format", "html"]}


@pytest.fixture(scope="module")
def from_installed(installed):
    """What each of COMMANDS printed when run from the installed copy, from /tmp."""
    env = {**os.environ, "PYTHONPATH": str(installed)}
    p = subprocess.run([sys.executable, "-c", RUN_INSTALLED, str(installed),
                        json.dumps(COMMANDS)], cwd="/tmp", env=env, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["file"].startswith(str(installed)), out["file"]
    return out


def test_installed_wheel_lists_catalog_from_tmp(from_installed):
    code, stdout = from_installed["catalog"]
    assert code == 0
    assert "dgx-a100" in stdout and "xe8545" in stdout


def test_installed_wheel_writes_an_html_page(from_installed):
    # the template is found as package data of an installed (not editable) copy
    code, stdout = from_installed["html"]
    assert code == 0
    assert stdout.startswith("<!DOCTYPE html>") and "memory: llama-3-70b" in stdout
