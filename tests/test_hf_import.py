import json
from pathlib import Path

import pytest

from optimus_calc.errors import InputError
from optimus_calc.hf_import import MAPPERS, load_hf_config

DATA = Path(__file__).parent / "data" / "hf"

# model_type -> catalog entry whose shape the fixture config.json reproduces
EXPECTED = {
    "llama": "llama-3-70b", "mistral": "mistral-7b", "mixtral": "mixtral-8x7b",
    "qwen2": "qwen2-7b", "qwen3": "qwen3-14b", "qwen3_moe": "qwen3-30b-a3b",
    "phi3": "phi-4", "gpt_oss": "gpt-oss-120b", "gpt2": "gpt2-xl", "gpt_neox": "pythia-6.9b",
    "bloom": "bloom-7b1", "opt": "opt-6.7b",
}


def test_every_supported_type_has_a_fixture():
    assert set(EXPECTED) == set(MAPPERS)


@pytest.mark.parametrize("mtype", sorted(EXPECTED))
def test_import_reproduces_catalog_count(cat, mtype):
    m = load_hf_config(DATA / mtype / "config.json")
    ref = cat.get(EXPECTED[mtype], "model")
    assert m.total_params == ref.total_params
    assert m.active_params == ref.active_params


def test_import_via_cli(run):
    r = run("catalog", "show", "--kind", "model", "llama-3-70b", "--format", "json")
    assert r.code == 0 and r.json()["derived"]["total_params"] == 70_553_706_496


def _cfg(tmp_path, text):
    p = tmp_path / "config.json"
    p.write_text(text)
    return p


def test_not_json(tmp_path):
    with pytest.raises(InputError, match=r"not valid JSON \(line 1"):
        load_hf_config(_cfg(tmp_path, "{nope"))


def test_missing_field_is_named(tmp_path):
    with pytest.raises(InputError, match="missing field 'num_hidden_layers'"):
        load_hf_config(_cfg(tmp_path, json.dumps({"model_type": "llama", "hidden_size": 8})))


def test_unsupported_model_type(tmp_path):
    with pytest.raises(InputError, match="unsupported model_type 't5'"):
        load_hf_config(_cfg(tmp_path, json.dumps({"model_type": "t5"})))
