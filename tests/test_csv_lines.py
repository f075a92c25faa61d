"""reportgen.writers.csv_lines: the compiled CSV formatter against Python's own formatting
(``str`` of integers, ``repr`` of floats), on edge values and random ones."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from reportgen.writers import csv_lines
from reportgen.writers.csv_lines import Chunk, Texts

I64 = np.iinfo(np.int64)


def _cells(fill, n: int, table: Texts | None = None) -> list[str]:
    """The one column ``fill`` puts into a chunk, as the lines' text cells."""
    chunk = Chunk(1, n)
    fill(chunk)
    text = bytes(chunk.text(n, table or Texts([]))).decode()
    assert text.endswith("\n") and text.count("\n") == n
    return text[:-1].split("\n")


def _rounded(values: np.ndarray, decimals: np.ndarray) -> np.ndarray:
    """``numpy.round`` with a number of decimals per value (its own rule: x * 10**d, rint, / 10**d)."""
    scale = 10.0 ** decimals
    return np.rint(values * scale) / scale


def _python_float(x: float) -> str:
    """The writer's rule in plain Python: a whole number below 2**53 as an integer, else repr."""
    return str(int(x)) if x == x and x.is_integer() and abs(x) < 2 ** 53 else repr(x)


def test_integers_are_pythons_str_at_every_width_and_both_ends():
    edges = [0, 1, -1, 9, 10, -10, 99, 100, 9999, 10_000, -10_000, I64.max, I64.min, I64.max - 1, I64.min + 1]
    edges += [10 ** k + d for k in range(19) for d in (-1, 0)] + [-(10 ** k) for k in range(19)]
    rng = np.random.default_rng(3)
    random = np.concatenate([rng.integers(I64.min, I64.max, 20_000, dtype=np.int64, endpoint=True),
                             rng.integers(-1000, 1000, 2_000)])
    values = np.concatenate([np.array(edges, np.int64), random])
    assert _cells(lambda c: c.ints(0, values), len(values)) == [str(x) for x in values.tolist()]


def test_integers_of_any_numpy_dtype_and_missing_ones():
    for dtype in (np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32):
        info = np.iinfo(dtype)
        values = np.array([info.min, 0, info.max], dtype)
        assert _cells(lambda c: c.ints(0, values), 3) == [str(x) for x in values.tolist()]
    values, present = np.array([5, 0, -7, 12]), np.array([True, False, True, False])
    assert _cells(lambda c: c.ints(0, values, present), 4) == ["5", "", "-7", ""]


FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.0001, -0.0001, 0.00015, 1e-4 * 0.9999, 1e-5, 1e-300,
               5e-324, 0.1 + 0.2, 1 / 3, 2 / 3, 12.3456, 12.34567, 99999.9999, 1e11 - 0.0001, 1e11 + 0.5,
               2.0 ** 53 - 1, 2.0 ** 53, 2.0 ** 53 + 2, 1e16, 1e20, 1.7976931348623157e308, -1e22,
               123456789.1234, 0.1, 0.7, 1.1, 100.25, 3.0e10 + 0.1, float("inf"), float("-inf")]


def test_floats_are_pythons_repr_and_whole_numbers_plain():
    rng = np.random.default_rng(5)
    random = [
        np.round(rng.uniform(-1e6, 1e6, 5_000), 4),            # bandwidths: <= 4 decimals
        _rounded(rng.uniform(0, 100, 5_000), rng.integers(0, 5, 5_000)),
        np.round(rng.exponential(1e9, 2_000)),                  # ops: whole numbers
        rng.uniform(-10, 10, 3_000),                            # any fraction
        rng.standard_normal(2_000) * 10.0 ** rng.integers(-30, 30, 2_000),
        rng.integers(0, 2 ** 63, 3_000, dtype=np.uint64).view(np.float64),   # any bits at all
    ]
    values = np.concatenate([np.array(FLOAT_EDGES)] + random)
    values = values[~np.isnan(values)]          # NaN: the missing-value tests below
    assert _cells(lambda c: c.floats(0, values), len(values)) == [_python_float(x) for x in values.tolist()]


def test_decimals_are_written_by_the_compiled_loop_not_numpy():
    """Values of at most four decimals (bandwidths) never take numpy's slower path."""
    rng = np.random.default_rng(9)
    values = _rounded(rng.uniform(-5e4, 5e4, 4_000), rng.integers(0, 5, 4_000))
    chunk = Chunk(1, len(values))
    chunk.floats(0, values)
    text = bytes(chunk.text(len(values), Texts([]))).decode()
    assert not (chunk.how[0] == csv_lines.TEXT).any()
    assert text.split("\n")[:-1] == [_python_float(x) for x in values.tolist()]


def test_missing_floats_are_empty_and_a_kept_nan_is_nan():
    values = np.array([1.5, np.nan, -2.25, np.nan, 7.0])
    assert _cells(lambda c: c.floats(0, values), 5) == ["1.5", "", "-2.25", "", "7"]
    present = np.array([True, True, False, True, True])     # a nullable column: NaN is a value
    assert _cells(lambda c: c.floats(0, values, present), 5) == ["1.5", "nan", "", "nan", "7"]


RATE_EDGES = [0.0, -0.0, 1.0, 0.5, 49 / 52, 0.6984, 0.0005, 0.0015, 0.00025, -0.0005, 0.12345, 1e-9, -1e-9,
              0.1 + 0.2, 2 / 3, 1.0000000000000002, 12.3456, -7.77, 1e12, 1e13 + 0.00049, 5e14, 1e300,
              float("inf"), float("-inf"), float("nan")]


def test_rates_are_pythons_percent_format():
    """``{:.1%}``: x * 100 rounded half to even to one decimal on its exact binary value;
    ties and near-ties (x = (k + 0.5) / 1000), -0.0 and tiny negatives ("-0.0%"), huge values,
    inf and a NaN kept as a value all as Python writes them."""
    rng = np.random.default_rng(21)
    ties = (rng.integers(-2000, 2000, 3_000) + 0.5) / 1000
    random = [rng.uniform(0, 1.2, 20_000), rng.uniform(-3, 3, 5_000), ties, np.nextafter(ties, 0),
              np.nextafter(ties, 1), rng.standard_normal(3_000) * 10.0 ** rng.integers(-12, 16, 3_000),
              rng.integers(0, 2 ** 63, 3_000, dtype=np.uint64).view(np.float64)]
    values = np.concatenate([np.array(RATE_EDGES)] + random)
    present = np.ones(len(values), bool)
    got = _cells(lambda c: c.rates(0, values, present), len(values))
    assert got == [f"{x:.1%}" for x in values.tolist()]
    chunk = Chunk(1, len(values))
    chunk.rates(0, values[:20_000], present[:20_000])
    chunk.text(20_000, Texts([]))
    assert (chunk.how[0, :20_000] == csv_lines.PERCENT).mean() > 0.99      # the compiled loop's


def test_missing_rates_are_empty():
    values, present = np.array([0.5, 0.0, 0.25]), np.array([True, False, True])
    assert _cells(lambda c: c.rates(0, values, present), 3) == ["50.0%", "", "25.0%"]


def test_table_cells_and_csv_quoting():
    names = ['plain', 'a,b', 'say "hi"', 'line\nbreak', 'ünïcødé', '']
    from reportgen.writers.instr_world import csv_cell

    table = Texts([b"unused", *(csv_cell(x).encode() for x in names)])
    codes = np.array([0, 1, 2, 3, 4, 5, -1, 2])
    chunk = Chunk(3, 8)
    chunk.codes(0, codes, table, 1, 12)
    chunk.codes(1, codes[::-1].copy(), table, 0, 12)
    chunk.empty(2, 8)
    rows = list(csv.reader(io.StringIO(bytes(chunk.text(8, table)).decode(), newline="")))
    want_names = [names[k] if k >= 0 else "" for k in codes]
    want_second = [(["unused"] + names)[k] if k >= 0 else "" for k in codes[::-1]]
    assert rows == [[a, b, ""] for a, b in zip(want_names, want_second)]


def test_a_reused_chunk_writes_each_chunk_alone():
    """Fewer rows than the chunk holds, the chunk's own texts cleared between chunks, and the
    output buffer grown when a chunk needs more."""
    chunk = Chunk(2, 6)
    chunk.ints(0, np.arange(6) * 10 ** 17)
    chunk.floats(1, np.arange(6) / 3)                        # numpy's repr: chunk texts
    first = bytes(chunk.text(6, Texts([])))
    chunk.ints(0, np.array([3, -4]))
    chunk.rates(1, np.array([0.0005, 1.0]), np.ones(2, bool))    # a tie: Python's text
    assert bytes(chunk.text(2, Texts([]))) == f"3,{0.0005:.1%}\n-4,100.0%\n".encode()
    assert first.split(b"\n")[5] == b"500000000000000000,1.6666666666666667"


@pytest.mark.parametrize("n", [1, 1000])
def test_compile_loops_leaves_the_signature_writers_use(n):
    csv_lines.compile_loops()
    signatures = (len(csv_lines._lines.signatures), len(csv_lines._classify.signatures))
    chunk = Chunk(3, n)
    chunk.ints(0, np.arange(n, dtype=np.int8))
    chunk.floats(1, np.arange(n, dtype=np.float32) / 4)
    chunk.codes(2, np.zeros(n, np.int16), Texts([b"a"]), 0, 1)
    chunk.text(n, Texts([b"a"]))
    assert (len(csv_lines._lines.signatures), len(csv_lines._classify.signatures)) == signatures
