"""``--format html`` (issue 34): the page parses, is self-contained, shows markup in names as
text, and every number on it equals the JSON's. The browser tests are in test_html_browser.py.
"""

import copy
import math
import re
import string
import xml.etree.ElementTree as ET

import html5lib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from html_support import PAGES, run_main, write_pages
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.report.formats import Format, render
from optimus_calc.report.html import json_at

pytestmark = pytest.mark.xdist_group("html")
GB = 1e9


@pytest.fixture(scope="module")
def pages(html_pages):
    return html_pages  # conftest: written once for this module and test_html_browser.py


def parse(text: str) -> ET.Element:
    """The page through html5lib's strict parser: any parse error raises."""
    return html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(text)


_TREES: dict[str, ET.Element] = {}


def tree(pages, name):
    """The page's tree, parsed once per page text (a strict html5lib parse of the plan page is
    ~0.1 s CPU and a dozen tests read it; a parse error is not kept, so it fails every test
    that reads the page); each test gets its own copy."""
    text = pages[name][0].read_text()
    if text not in _TREES:
        _TREES[text] = parse(text)
    return copy.deepcopy(_TREES[text])


def text_of(el: ET.Element) -> str:
    return "".join(el.itertext()).strip()


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


# ---- the page is well-formed and self-contained ---------------------------------------------

@pytest.mark.parametrize("name", list(PAGES))
def test_page_parses_and_makes_no_request(pages, name):
    doc = tree(pages, name)  # strict: raises on the first parse error
    for el in doc.iter():
        for attr in ("src", "href", "action", "srcset", "poster", "data"):
            v = el.get(attr)
            assert v is None or v.startswith(("#", "data:")), (name, el.tag, attr, v)
        if el.tag == "link":
            assert el.get("rel") == "icon" and el.get("href") == "data:,"
    assert [s.get("src") for s in doc.iter("script")] == [None]  # one inline script
    assert len(list(doc.iter("style"))) == 1
    csp = [m.get("content") for m in doc.iter("meta")
           if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and csp[0].startswith("default-src 'none'")  # the browser would refuse a fetch
    text = pages[name][0].read_text()
    assert "http://" not in text.replace("http://www.w3.org/", "") and "https://" not in text


@pytest.mark.parametrize("name", list(PAGES))
def test_tables_have_headers_and_numbers_align_right(pages, name):
    doc = tree(pages, name)
    tables = list(doc.iter("table"))
    assert tables
    for t in tables:
        heads = t.findall("./thead/tr/th")
        assert heads and all(h.get("scope") == "col" for h in heads)
        for td in t.iter("td"):
            if td.get("data-sort") is not None:
                assert "num" in td.get("class").split()


# ---- every number equals the JSON's ---------------------------------------------------------

def check_cards(doc, data) -> int:
    n = 0
    for card in doc.iter("div"):
        path = card.get("data-json")
        if path is None or card.get("class") != "card":
            continue
        value = float(card.get("data-value"))
        assert close(value, json_at(data, path)), path
        figure = next(e for e in card.iter("span") if e.get("class") == "figure")
        assert text_of(figure) == format(value / float(card.get("data-div")),
                                         card.get("data-fmt")), path
        n += 1
    return n


def test_plan_headline_equals_json(pages):
    doc, data = tree(pages, "plan"), pages["plan"][1]
    assert check_cards(doc, data) == 4  # step, throughput, MFU, GPU memory
    rec = data["recommended"]
    cards = {text_of(c.find("div")): c for c in doc.iter("div") if c.get("class") == "card"}
    # the table format's rounding: step s .2f, tokens/s ,.0f, MFU .1%, GB .1f
    assert text_of(cards["step time"].find("div[@class='value']/span")) == \
        f"{rec['step_time_s']:,.2f}"
    assert text_of(cards["throughput"].find("div[@class='value']/span")) == \
        f"{rec['tokens_per_s']:,.0f}"
    assert text_of(cards["MFU"].find("div[@class='value']/span")) == f"{rec['mfu']:.1%}"
    assert text_of(cards["GPU memory"].find("div[@class='value']/span")) == \
        f"{rec['gpu_memory_bytes'] / GB:,.1f}"
    # the recommended layout's step and memory parts (as `step` and `memory` print them)
    assert close(float(cells(rows_of(doc, "step-0")[-1])["s"].get("data-sort")),
                 rec["step_time_s"])
    total = next(r for r in rows_of(doc, "mem-0") if text_of(r[0]) == "total")
    assert close(float(cells(total)["value"].get("data-sort")), rec["gpu_memory_bytes"] / GB)
    lead = next(e for e in doc.iter("strong") if e.get("class") == "layout")
    assert text_of(lead).startswith(f"TP {rec['tp']} · PP {rec['pp']} · DP {rec['dp']}")


def rows_of(doc, table_id):
    t = next(t for t in doc.iter("table") if t.get("id") == table_id)
    return t.findall("./tbody/tr")


def cells(row) -> dict:
    return {c.get("data-key"): c for c in row if c.get("data-key")}


def test_plan_layouts_table_equals_json(pages):
    doc, data = tree(pages, "plan"), pages["plan"][1]
    rows = rows_of(doc, "t0")
    assert len(rows) == len(data["candidates"]) == 5
    same = ("tp", "pp", "dp", "zero", "micro_batch", "interleave", "global_batch",
            "step_time_s", "mfu", "tokens_per_s")
    for row, cand in zip(rows, data["candidates"]):
        c = cells(row)
        for key in same:
            assert close(float(c[key].get("data-sort")), cand[key]), key
        assert close(float(c["gpu_GB"].get("data-sort")), cand["gpu_memory_bytes"] / GB)
        assert close(float(c["headroom_GB"].get("data-sort")),
                     cand["gpu_headroom_bytes"] / GB)
        assert text_of(c["step_time_s"]) == f"{cand['step_time_s']:.2f}"
        assert text_of(c["gpu_GB"]) == f"{cand['gpu_memory_bytes'] / GB:.1f}"
        assert text_of(c["framework"]) == cand["framework"]
        assert text_of(c["recompute"]) == cand["recompute"]


def test_plan_what_if_and_rejections_equal_json(pages):
    doc, data = tree(pages, "plan"), pages["plan"][1]
    rows = rows_of(doc, "t1")
    assert len(rows) == len(data["smartnics"]) > 0
    for row, nic in zip(rows, data["smartnics"]):
        c = cells(row)
        assert text_of(c["smartnic"]) == nic["smartnic"]
        assert close(float(c["card_GB"].get("data-sort")), nic["memory_bytes"] / GB)
        assert close(float(c["opt_GB"].get("data-sort")), nic["optimizer_bytes_per_gpu"] / GB)
    rej = rows_of(doc, "rejections-table")
    assert [(text_of(r[1]), int(float(r[0].get("data-sort")))) for r in rej] == \
        list(data["framework_rejections"].items())
    # each rule names its source lines (frameworks/<name>.py), e.g. "engine.py L76-77"
    assert all(re.search(r"\.(py|md)\b.* L\d+", text_of(r[1])) for r in rej)


def test_step_page_equals_json(pages):
    doc, data = tree(pages, "step"), pages["step"][1]
    assert check_cards(doc, data) == 7  # step, throughput, MFU, memory, days, GPU-h, cost
    # the breakdown table: step_view.BREAKDOWN's terms in order, then the step time
    from optimus_calc.report.step_view import BREAKDOWN
    rows = rows_of(doc, "step-0") if any(t.get("id") == "step-0" for t in doc.iter("table")) \
        else rows_of(doc, "t0")
    seconds = [float(cells(r)["s"].get("data-sort")) for r in rows]
    assert seconds == [data[k] for k, _, _ in BREAKDOWN] + [data["step_time_s"]]
    assert [text_of(cells(r)["s"]) for r in rows[-1:]] == [f"{data['step_time_s']:.4f}"]
    # hidden beside the step: DP communication and the optimizer step beyond what is exposed
    hidden = [float(r[1].get("data-sort")) for r in rows_of(doc, "hidden")]
    b = data["breakdown"]
    assert close(hidden[0], b["dp_comm_s"] - b["dp_comm_exposed_s"])
    assert close(hidden[1], max(0.0, b["optimizer_s"] + b["offload_transfer_s"]
                                - b["optimizer_exposed_s"]))


def test_memory_page_equals_json(pages):
    doc, data = tree(pages, "memory"), pages["memory"][1]
    assert check_cards(doc, data) >= 3
    per = data["per_gpu"]
    parts = ["weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
             "overhead_bytes", "total_bytes", "capacity_bytes", "usable_bytes"]
    shown = [float(cells(r)["value"].get("data-sort")) for r in rows_of(doc, "t0")]
    assert all(close(s, per[k] / GB) for s, k in zip(shown, parts))
    offload = [t for t in doc.iter("table") if text_of(t.find("caption")) == "offload: cpu"]
    assert offload, "the offload device's table"


def _numbers(obj, out):
    if isinstance(obj, dict):
        for v in obj.values():
            _numbers(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _numbers(v, out)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out.append(float(obj))
    return out


@pytest.mark.parametrize("name", ["compare", "breakeven"])
def test_compare_and_breakeven_numbers_are_the_jsons(pages, name):
    doc, data = tree(pages, name), pages[name][1]
    known = _numbers(data, [])
    shown = [float(td.get("data-sort")) for t in doc.iter("table") if t.get("id", "")[:1] == "t"
             for td in t.iter("td") if td.get("data-sort") is not None]
    assert len(shown) >= 10
    for v in shown:  # as in the JSON, or the JSON's bytes in GB
        assert any(close(v, k) or close(v * GB, k) for k in known), v


# ---- the equations of the recommended layout, folded by stage -------------------------------

def test_plan_equations_are_the_recommended_layouts(pages, tmp_path):
    doc, data = tree(pages, "plan"), pages["plan"][1]
    rec = data["recommended"]
    folds = [d for d in doc.iter("details") if d.get("data-stage")]
    assert folds and all(d.get("open") is None for d in folds)  # folded by default
    eqs = {(d.get("data-stage"), r.get("data-name"), r.get("data-scope")):
           float(r.findall("td")[1].get("data-sort"))
           for d in folds for r in d.iter("tr") if r.get("class") == "eq"}
    # the evaluator's own step time and GPU memory for this layout are the plan's
    assert close(eqs[("composition", "step.time", "")], rec["step_time_s"])
    assert close(eqs[("memory", "memory.gpu_total_bytes", "")], rec["gpu_memory_bytes"])
    assert close(eqs[("composition", "step.tokens_per_s", "")], rec["tokens_per_s"])
    # the same equations `explain --all` lists for that layout under that framework's physics
    import json
    layout = ["llama70b", "--nodes", "2", "--tp", rec["tp"], "--pp", rec["pp"], "--dp",
              rec["dp"], "--zero", rec["zero"], "--offload", rec["offload"], "--interleave",
              rec["interleave"], "--micro-batch",
              rec["micro_batch"], "--recompute", rec["recompute"], "--framework",
              rec["framework"], *(["--offload-params"] if rec["offload_params"] else []),
              "--format", "json", "-o"]
    js = tmp_path / "explain.json"
    assert run_main("explain", "--all", *layout, js) == 0
    listed = json.loads(js.read_text())["equations"]
    # the page's step part is `optimus-calc step` of that layout, row by row
    assert run_main("step", *layout, tmp_path / "step.json") == 0
    step = json.loads((tmp_path / "step.json").read_text())
    from optimus_calc.report.step_view import BREAKDOWN
    assert [float(cells(r)["s"].get("data-sort")) for r in rows_of(doc, "step-0")] == \
        [step[k] for k, _, _ in BREAKDOWN] + [step["step_time_s"]]
    assert len(eqs) == len(listed)
    for e in listed:
        assert close(eqs[(e["stage"], e["name"], e["scope"])], e["result"]), e["name"]
    stages = [text_of(d.find("summary/span")) for d in folds]
    assert stages == list(dict.fromkeys(e["stage"] for e in listed))
    # each row shows its expression, values, unit and source
    row = next(r for d in folds for r in d.iter("tr") if r.get("data-name") == "step.time")
    assert row.find(".//code[@class='expr']").text and row.findall(".//ul/li")
    assert text_of(row.findall("td")[2]) == "s" and text_of(row.findall("td")[3])


def test_plan_export_and_command(pages, tmp_path):
    doc, data = tree(pages, "plan"), pages["plan"][1]
    from optimus_calc.frameworks import exports_for
    # the page's first export is the first --export target of the recommended layout's frameworks
    target = exports_for(data["recommended"]["frameworks"])[0]
    out = tmp_path / "export.txt"
    assert run_main(*PAGES["plan"], "--export", target, "-o", out) == 0
    pres = {p.get("id"): text_of(p) for p in doc.iter("pre")}
    assert pres["export-1"] == out.read_text().strip()
    from optimus_calc import __version__
    assert pres["command"] == ("optimus-calc plan llama70b --nodes 2 --format html -o "
                               f"{pages['plan'][0]}")
    assert f"optimus-calc {__version__}" in text_of(doc.find(".//section[@id='reproduce']"))


# ---- markup in any text is text -------------------------------------------------------------

MARKUP = st.lists(st.sampled_from(list("<>&\"'/=` ;") + list(string.ascii_letters)
                                  + ["<script>", "</table>", "<!--", "]]>", "\u202e", "&amp;",
                                     "{{ x }}", "{% if %}"]),
                  min_size=1, max_size=20).map("".join)


@settings(max_examples=60, deadline=None)
@given(name=MARKUP, cell=MARKUP, note=MARKUP)
def test_markup_in_a_document_shows_as_text(name, cell, note):
    doc = Document(
        title=f"plan: {name}", header=[("model", name)], notes=[note],
        data={"why": name},
        tables=[Table(title=name, columns=[Column("m", name, align="left"),
                                           Column("x", "x s", ".2f")],
                      rows=[{"m": cell, "x": 1.5}])],
        html={"kind": "other", "command": f"optimus-calc step {name}", "version": "0",
              "exports": {"deepspeed": cell},
              "equations": [{"name": name, "stage": note, "scope": cell, "inputs": {name: 2.0},
                             "result": 3.0, "unit": cell, "expression": note,
                             "source": name, "doc": note}]})
    page = parse(render(doc, Format.HTML))
    assert [s.get("src") for s in page.iter("script")] == [None]
    assert text_of(page.find(".//h1")) == f"plan: {name}".strip()
    assert text_of(page.find(".//table[@id='t0']/tbody/tr/th")) == cell.strip()
    assert text_of(page.find(".//pre[@id='command']")) == f"optimus-calc step {name}".strip()
    assert text_of(page.find(".//pre[@id='export-1']")) == cell.strip()
    assert text_of(page.find(".//ul[@class='notes']/li")) == note.strip()


def test_an_output_name_with_markup_is_text(tmp_path):
    # the only user text that reaches a page verbatim: the command line (-o's file name)
    name = tmp_path / "a<img src=x onerror=alert(1)><script>&\"'.html"
    assert run_main("memory", "llama70b", "--nodes", "1", "--tp", "8", "--format", "html",
                    "-o", name) == 0
    page = parse(name.read_text())
    assert [s.get("src") for s in page.iter("script")] == [None]
    assert list(page.iter("img")) == []
    import shlex
    assert text_of(page.find(".//pre[@id='command']")).endswith(shlex.join(["-o", str(name)]))


@pytest.mark.parametrize("argv", [
    ["catalog", "list"], ["explain"],
    ["explain", "--all", "llama70b", "--nodes", "1", "--tp", "8"],
    ["nics", "llama70b", "--nodes", "1"],
    ["optimizer-step", "--params", "70e9", "--device", "epyc-7742"],
    ["sweep", "--models", "llama-2-7b", "--nodes", "1,2"]])
def test_every_other_command_writes_a_generic_page(tmp_path, argv):
    # --format is shared: a command without a page of its own writes its tables and notes
    page = tmp_path / "p.html"
    assert run_main(*argv, "--format", "html", "-o", page) == 0
    doc = parse(page.read_text())
    assert list(doc.iter("table")) and [s.get("src") for s in doc.iter("script")] == [None]


def test_plan_assumptions_are_the_jsons(pages):
    # the values the recommended row was timed with: the plan's own (``assumed``) with its
    # framework's profile over them (a cold review: the page showed the plan's neutral values
    # as "the values this answer used" for a row timed under Megatron's, tp_overlap 0 for 1)
    doc, data = tree(pages, "plan"), pages["plan"][1]
    profile = data["recommended"]["physics_profile"]["applied"]
    own = data["assumed"]["assumptions"]
    used = {**own, **{k: v for k, v in profile.items() if k in own}}  # (grad_bytes: training)
    assert profile["tp_overlap"] == 1 != own["tp_overlap"]
    rows = rows_of(doc, "assumptions-table")
    assert len(rows) == len(used) >= 45  # every named assumption (45 before this round's)
    for r in rows:
        name = text_of(r[0])
        assert text_of(r[1]) == f"{used[name]:g}", name  # nothing given with --assume here
        assert text_of(r[3]), name  # its source or meaning


def test_a_given_assumption_is_tagged(pages):
    doc, data = tree(pages, "step"), pages["step"][1]
    rows = {text_of(r[0]): r for r in rows_of(doc, "assumptions-table")}
    assert text_of(rows["hbm_efficiency"][1]) == "0.85 given" == \
        f"{data['assumptions']['hbm_efficiency']:g} given"
    assert text_of(rows["hbm_efficiency"][2]) == "0.9"  # the default (specs/assumptions.py)
    assert [n for n, r in rows.items() if r.get("class") == "changed"] == ["hbm_efficiency"]
