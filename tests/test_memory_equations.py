"""Per-equation tests with hand-computed values (compiled module == sympy expression)."""

import pytest

from optimus_calc.equations import compiled as eq
from optimus_calc.equations.codegen import TARGET, generate
from optimus_calc.equations.registry import load_all

# Korthikanti et al. 2022 Table 2 configuration: s=2048, b=1, h=12288, a=96, t=8 (GPT-3 shape).
S, B, H, A, T = 2048, 1, 12288, 96, 8
SBH = S * B * H  # 25,165,824


def layer(t=T, sigma=0, phi=0, r=0, d=1, q_c=8, m_c=16, c=1):
    return float(eq.memory__activation_layer_bytes(a=A, b=B, c=c, d=d, h=H, m_c=m_c, phi=phi,
                                                   q_c=q_c, r=r, s=S, sigma=sigma, t=t,
                                                   iota=1, x_c=0))


@pytest.mark.parametrize("kwargs,expected", [
    # no parallelism: sbh(34 + 5as/h) = sbh(34 + 80) = 114 sbh = 2,868,903,936
    (dict(t=1), 2_868_903_936),
    # tensor parallel: sbh(10 + 24/8 + 5as/(8h)) = sbh(10 + 3 + 10) = 23 sbh = 578,813,952
    (dict(), 578_813_952),
    # TP + SP: sbh/8 (34 + 80) = 14.25 sbh = 358,612,992
    (dict(sigma=1), 358_612_992),
    # TP + selective recompute: sbh(10 + 24/8) = 13 sbh = 327,155,712
    (dict(r=1), 327_155_712),
    # TP + SP + selective: 34 sbh / 8 = 4.25 sbh = 106,954,752
    (dict(sigma=1, r=1), 106_954_752),
    # full recompute: 2 sbh = 50,331,648 (t does not matter without SP)
    (dict(r=2), 50_331_648),
])
def test_korthikanti_table2_rows(kwargs, expected):
    assert layer(**kwargs) == pytest.approx(expected, rel=1e-12)


def test_flash_attention_removes_the_score_term():
    # TP, FlashAttention: sbh(10 + 3) = 13 sbh, the same as selective recompute
    assert layer(phi=1) == pytest.approx(13 * SBH)


def test_no_dropout_drops_masks():
    # without dropout: replicated 8 (not 10), scores 2as^2b/t (not 5): sbh(8 + 3 + 4) = 15 sbh
    assert layer(d=0) == pytest.approx(15 * SBH)


def test_context_parallel_divides_s():
    # cp=2 with FlashAttention: (s/2) b h (10 + 3) = 6.5 sbh
    assert layer(phi=1, c=2) == pytest.approx(6.5 * SBH)


@pytest.mark.parametrize("z,expected_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.88)])
def test_zero_paper_section5_per_stage(z, expected_gb):
    # ZeRO paper: Psi = 7.5B, N_d = 64, K = 12: 16 Psi; 4 Psi + 12 Psi/64; 2 Psi + 14 Psi/64; 16 Psi/64
    P, nd = 7.5e9, 64
    w = float(eq.memory__weights_bytes(N_d=nd, P=P, W_res=0, Z=z, b_w=2, o_w=0))
    g = float(eq.memory__gradients_bytes(N_d=nd, P=P, Z=z, a_bf=0, b_g=2, b_w=2, k_g=0, o_g=0))
    o = float(eq.memory__optimizer_bytes(N_d=nd, P=P, Z=z, b_o=12, f_k=0, o_o=0))
    assert (w + g + o) / 1e9 == pytest.approx(expected_gb, rel=0.01)


def test_stage_activation_interleaving_factor():
    # 1F1B first stage, p=4, 4 in flight, 20 layers of 1 byte: 80; interleaved v=2: x(1 + 3/8)
    plain = float(eq.memory__stage_activation_bytes(L_s=20, M_layer=1, V=1, b=1, beta_l=0, c=1,
                                                    lambda_l=0, n_f=4, p=4, s=1, t=1, v=1))
    inter = float(eq.memory__stage_activation_bytes(L_s=20, M_layer=1, V=1, b=1, beta_l=0, c=1,
                                                    lambda_l=0, n_f=4, p=4, s=1, t=1, v=2))
    assert (plain, inter) == (80, 110)


def test_logits_on_last_stage():
    # s=4096, b=1, V=128256, 6 bytes, t=8: 4096*128256 = 525,336,576; x 6 / 8 = 394,002,432
    x = float(eq.memory__stage_activation_bytes(L_s=0, M_layer=0, V=128256, b=1, beta_l=6, c=1,
                                                lambda_l=1, n_f=1, p=1, s=4096, t=8, v=1))
    assert x == 394_002_432


def test_spill():
    assert float(eq.memory__spill_bytes(B_dev=52.5e9, C=32e9)) == pytest.approx(20.5e9)
    assert float(eq.memory__spill_bytes(B_dev=10e9, C=32e9)) == 0


def test_compiled_module_is_fresh():
    files = generate()
    assert sorted(p.name for p in TARGET.glob("*.py")) == sorted(files), (
        "equations/compiled/ has other modules than the registry's families: run "
        "python -m optimus_calc.equations.codegen")
    for name, text in files.items():
        assert (TARGET / name).read_text() == text, (
            f"equations/compiled/{name} is stale: run python -m optimus_calc.equations.codegen")


def test_every_equation_has_source_doc_and_documented_symbols():
    for name, e in load_all().items():
        assert len(e.source) > 10 and e.doc and e.unit, name
        for s, meaning in e.symbols.items():
            assert meaning, f"{name}: symbol {s} has no meaning"


def test_lambdified_equals_compiled():
    import inspect
    import random
    rng = random.Random(1)
    compiled = dict(inspect.getmembers(eq, inspect.isfunction))
    registry = load_all()
    # one compiled function per registered equation, and nothing else
    assert set(compiled) == {e.func_name for e in registry.values()}
    for name, e in registry.items():
        vals = {s.name: rng.choice([1, 2, 3, 4, 8]) for s in e.args}
        a = float(e.lambdified()(*[vals[s.name] for s in e.args]))
        b = float(compiled[e.func_name](**vals))
        assert a == pytest.approx(b), name


def test_the_most_loaded_rank_keeps_its_routed_rows_iota_times():
    # memory.activation_layer_bytes' routed term: s b h (iota - 1) x_c / t more. With the
    # module's s, b, h, t and x_c = 42 (Mixtral: 6 x 2 x 14,336 / 4,096), iota 2 adds
    # 42 s b h / t bytes; iota 1 adds nothing
    base = float(eq.memory__activation_layer_bytes(a=A, b=B, c=1, d=1, h=H, m_c=16, phi=0,
                                                   q_c=8, r=0, s=S, sigma=0, t=T, iota=1,
                                                   x_c=42))
    loaded = float(eq.memory__activation_layer_bytes(a=A, b=B, c=1, d=1, h=H, m_c=16, phi=0,
                                                     q_c=8, r=0, s=S, sigma=0, t=T, iota=2,
                                                     x_c=42))
    assert base == layer()
    assert loaded - base == 42 * S * B * H / T
