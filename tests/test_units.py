import pytest

from optimus_calc.errors import InputError
from optimus_calc.units import fmt_bytes, gbps_to_bytes_per_s, parse_count, parse_size


@pytest.mark.parametrize("text,expected", [
    ("4096", 4096.0),
    ("1.5GB", 1.5e9),           # decimal GB = 1e9
    ("256MiB", 256 * 2**20),    # binary MiB = 2^20
    ("1GiB", 2**30),
    ("1KB", 1e3),
    ("8 GB", 8e9),
    (".5GB", 5e8),
    ("2e3", 2000.0),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["abc", "1e", "1e400", "-1", "0", "nan", "inf", "1GiiB",
                                  '__import__("os").system("echo pwned")', "1.2.3GB", ""])
def test_parse_size_rejects(text):
    with pytest.raises(InputError):
        parse_size(text)


@pytest.mark.parametrize("text,expected", [("70e9", 70e9), ("70B", 70e9), ("302M", 302e6),
                                           ("1.5T", 1.5e12), ("7000", 7000.0)])
def test_parse_count(text, expected):
    assert parse_count(text) == expected


def test_line_rate_bits_to_bytes():
    # 200 Gb/s = 200e9 bits/s / 8 = 25e9 bytes/s (ConnectX-6 HDR: 25 GB/s per direction)
    assert gbps_to_bytes_per_s(200) == 25e9


def test_fmt_bytes_decimal_and_binary():
    assert fmt_bytes(52.5e9) == "52.50 GB"
    assert fmt_bytes(2**30, binary=True) == "1.00 GiB"


def test_less_than_one_byte_or_one_parameter_is_refused(run):
    # a message is at least one byte and a model at least one parameter: 0.5 of either is an
    # input error naming the flag (exit 2), where 1.5GB = 1.5e9 bytes and 70B stay fine
    with pytest.raises(InputError, match="less than one byte"):
        parse_size("0.5", "--size")
    with pytest.raises(InputError, match="less than one"):
        parse_count("0.5", "--params")
    assert parse_size("1.5GB") == 1.5e9 and parse_count("70B") == 70e9
    r = run("comm", "all-gather", "--size", "0.5")
    assert r.code == 2 and "--size '0.5' is less than one byte" in r.err
    # nor a fraction of one past one (round 30: --size 1.5 ran as "2 B", --params 1.5 as "0M
    # parameters"); a unit or suffix makes it a whole number (1.5KiB = 1,536 bytes)
    with pytest.raises(InputError, match="'1.5' is not a whole number of bytes"):
        parse_size("1.5", "--size")
    with pytest.raises(InputError, match="'1.5' is not a whole number"):
        parse_count("1.5", "--params")
    assert parse_size("1.5KiB") == 1536 and parse_size("1e3") == 1000 and parse_count("1.5k") == 1500
    # a unit's fraction of a byte or a parameter rounds (0.3 x 2**30 = 322,122,547.2 bytes)
    assert parse_size("0.3GiB") == 322_122_547 and parse_size("1.0005k") == 1000
    assert parse_count("1.0007k") == 1001
    r = run("optimizer-step", "--params", "2.5", "--device", "epyc-7742")
    assert r.code == 2 and "--params '2.5' is not a whole number" in r.err
