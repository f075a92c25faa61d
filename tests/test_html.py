"""result.html without a browser: the embedded payload decodes to the model, the static parts show
the engine summary, input text is escaped, and the timeline aggregates match hand-computed values.
Framework traces: the embedded tables decode to ``profile.tables``, the overview shows the Device
lanes table and charts whose values are the tables' values.

The browser side (rendering, zoom, hover) is in test_html_browser.py.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from bs4 import BeautifulSoup

from reportgen.analysis import timeline
from reportgen.analysis.metrics import engine_summary
from reportgen.errors import OutputError
from reportgen.model import HOST_COLUMNS, Meta, Profile, finalize_commands
from reportgen.testing.html_page import read_page, read_tables
from reportgen.testing.profiles import make_profile
from reportgen.writers import html as html_writer
from reportgen.writers.html import page as page_writer, palette, payload, tables as table_writer

from shared_data import FRAMEWORK, PMU, needs

XSS_KERNEL = "<script>alert(1)</script>"   # one of make_profile's kernel names


def write_page(profile: Profile, tmp_path) -> tuple[str, dict, pd.DataFrame]:
    path = html_writer.write(profile, engine_summary(profile), tmp_path, quiet=True)
    assert path == tmp_path / "PerfWeb" / "result.html"
    text = path.read_text(encoding="utf-8")
    data, items = read_page(text)
    return text, data, items


def hand_profile(**meta) -> Profile:
    """Two TIU commands and one GDMA load on core 0; every number below is worked out by hand."""
    rows = [
        dict(core=0, engine="TIU", global_idx=0, cmd_id=1, start_ns=1000, end_ns=1100, cycles=101,
             func_type="sMM2", func_name="mm2.nn", is_sys=False, kernel="matmul", alg_ops=50.0,
             uarch_ops=100.0, uarch_rate=0.5),
        dict(core=0, engine="TIU", global_idx=1, cmd_id=2, start_ns=1150, end_ns=1250, cycles=101,
             func_type="sAR", func_name="arith.add", is_sys=False, kernel="matmul", alg_ops=30.0,
             uarch_ops=40.0, uarch_rate=0.75),
        dict(core=0, engine="GDMA", global_idx=0, cmd_id=1, start_ns=1000, end_ns=1300, cycles=301,
             func_type="DMA_tensor", func_name="tensorLd", is_sys=False, kernel="matmul", bytes=3000,
             direction="DDR->LMEM", ddr_bw=10.0),
    ]
    return Profile(commands=finalize_commands(pd.DataFrame(rows)),
                   meta=Meta(**{"source": "pmu", "chip": "AKS", "num_cores": 1, **meta}))


def model_view(profile: Profile) -> pd.DataFrame:
    """The model's commands in the page's column names (an independent path to compare with)."""
    c = profile.commands
    obj = lambda s: s.astype("object").where(s.notna(), None)  # noqa: E731
    return pd.DataFrame({
        "sheet": c["sheet"].astype(str), "global_idx": c["global_idx"], "cmd_id": c["cmd_id"],
        "start_ns": c["start_ns"], "end_ns": c["end_ns"], "func_type": obj(c["func_type"]),
        "func_name": obj(c["func_name"]), "kernel": obj(c["kernel"]), "direction": obj(c["direction"]),
        "bytes": c["bytes"].astype("Float64").to_numpy(float, na_value=np.nan),
        "bw": c["ddr_bw"].fillna(c["l2m_bw"]).to_numpy(float),
        "uarch_rate": c["uarch_rate"].to_numpy(float),
    })


def names(values) -> list:
    """Strings with None for unknown (pandas may hold unknown as None or NaN)."""
    return [None if pd.isna(v) else str(v) for v in values]


def assert_items_equal_model(items: pd.DataFrame, profile: Profile) -> None:
    dev = items[~items["host"]].drop(columns="host")
    assert len(dev) == len(profile.commands)
    got = dev.set_index(["sheet", "global_idx"]).sort_index()
    want = model_view(profile).set_index(["sheet", "global_idx"]).sort_index()
    assert got.index.equals(want.index)
    for col in ("cmd_id", "start_ns", "end_ns"):
        np.testing.assert_array_equal(got[col].to_numpy(np.int64), want[col].to_numpy(np.int64), err_msg=col)
    for col in ("func_type", "func_name", "kernel", "direction"):
        assert names(got[col]) == names(want[col]), col
    np.testing.assert_array_equal(got["bytes"].to_numpy(float), want["bytes"].to_numpy(float))
    # bandwidth: stored as bytes/duration when that agrees with the model within BW_TOLERANCE
    np.testing.assert_allclose(got["bw"].to_numpy(float), want["bw"].to_numpy(float),
                               atol=payload.BW_TOLERANCE, rtol=0, equal_nan=True)
    # uArch rate: 1e-4 resolution (the page prints 0.01 %)
    np.testing.assert_allclose(got["uarch_rate"].to_numpy(float), want["uarch_rate"].to_numpy(float),
                               atol=0.5 / payload.URATE_SCALE + 1e-12, rtol=0, equal_nan=True)


class TestPayloadRoundTrip:
    def test_every_command_decodes_to_its_model_row(self, tmp_path):
        profile = make_profile(cores=3, per_engine=700, seed=3, cdma_ports=(0, 1))
        _, data, items = write_page(profile, tmp_path)
        assert_items_equal_model(items, profile)
        assert int(data["t0_ns"]) == int(profile.commands["start_ns"].min())
        assert [l["name"] for l in data["lanes"]] == profile.sheets()

    def test_hand_built_profile_values(self, tmp_path):
        _, data, items = write_page(hand_profile(), tmp_path)
        gdma = items[items["sheet"] == "GDMA_0"].iloc[0]
        assert (gdma["start_ns"], gdma["end_ns"], gdma["bytes"], gdma["bw"]) == (1000, 1300, 3000, 10.0)
        assert gdma["direction"] == "DDR->LMEM" and gdma["bw_kind"] == "DDR"
        tiu = items[items["sheet"] == "TIU_0"].sort_values("global_idx")
        assert tiu["uarch_rate"].tolist() == [0.5, 0.75]
        assert tiu["func_name"].tolist() == ["mm2.nn", "arith.add"]
        assert data["span_ns"] == 300

    def test_bandwidth_that_is_not_bytes_over_duration_is_kept_exactly(self, tmp_path):
        profile = hand_profile()
        profile.commands.loc[2, "ddr_bw"] = 12.345678        # 3000 B / 300 ns would be 10.0
        _, _, items = write_page(profile, tmp_path)
        assert items.loc[items["sheet"] == "GDMA_0", "bw"].item() == 12.345678

    def test_long_gaps_and_global_idx_out_of_time_order(self, tmp_path):
        profile = hand_profile()
        c = profile.commands
        c.loc[1, ["start_ns", "end_ns"]] = [10**10 + 5, 10**10 + 9]   # 10 s later: beyond 32 bits
        c.loc[0, "global_idx"], c.loc[1, "global_idx"] = 7, 3          # sheet order != time order
        c.loc[1, "cmd_id"] = 2**40
        _, data, items = write_page(profile, tmp_path)
        assert_items_equal_model(items, profile)
        dtypes = {col["name"]: col["dtype"] for col in data["payload"]["columns"]}
        assert dtypes["gap"] == "f8" and dtypes["cmd"] == "f8"

    def test_host_events_get_their_own_lanes(self, tmp_path):
        profile = hand_profile()
        host = pd.DataFrame({
            "name": ["step", "<b>aten::mm</b>", "aten::add", "loader"],
            "category": ["python", "cpu_op", "cpu_op", None],
            "pid": [1, 1, 1, 2], "tid": [10, 10, 10, 20],
            "start_ns": [900, 950, 1100, 1000], "end_ns": [1400, 1050, 1200, 1300],
            "depth": [0, 1, 1, 0], "parent": [-1, 0, 0, -1], "args": [None] * 4,
        })
        profile.host = host.astype({k: v for k, v in HOST_COLUMNS.items() if k in host})
        _, data, items = write_page(profile, tmp_path)
        assert_items_equal_model(items, profile)
        hosted = items[items["host"]].sort_values("global_idx")
        assert names(hosted["func_name"]) == host["name"].tolist()
        assert hosted["func_type"].tolist() == ["python", "cpu_op", "cpu_op", "(unknown)"]
        assert hosted["start_ns"].tolist() == host["start_ns"].tolist()
        assert hosted["end_ns"].tolist() == host["end_ns"].tolist()
        assert hosted["sheet"].tolist() == ["pid 1 / tid 10", "pid 1 / tid 10 · d1", "pid 1 / tid 10 · d1",
                                            "pid 2 / tid 20"]
        assert int(data["t0_ns"]) == 900
        # host lanes come first (above the device lanes) in every timeline
        n_host = 3
        host_lanes = [i for i, l in enumerate(data["lanes"]) if l["host"]]
        for view in data["views"]:
            assert view["lanes"][:n_host] == host_lanes

    def test_page_is_deterministic(self, tmp_path):
        profile = make_profile(cores=1, per_engine=50, seed=1)
        summary = engine_summary(profile)
        assert page_writer.render(profile, summary) == page_writer.render(profile, summary)

    def test_empty_profile_still_writes_a_page(self, tmp_path):
        profile = Profile(meta=Meta(source="pmu", chip="AKS"))
        text, data, items = write_page(profile, tmp_path)
        assert len(items) == 0 and data["lanes"] == []
        assert "Engine summary" in text


class TestStaticPage:
    def test_summary_table_shows_hand_computed_numbers(self, tmp_path):
        text, _, _ = write_page(hand_profile(), tmp_path)
        soup = BeautifulSoup(text, "html.parser")
        table = soup.select_one("table.summary")
        header = [th.get_text() for th in table.select("thead tr")[1].find_all("th")]
        groups = []
        for th in table.select("thead tr")[0].find_all("th"):
            groups += [th.get_text()] * int(th.get("colspan", 1))
        rows = [[td.get_text() for td in tr.find_all("td")] for tr in table.select("tbody tr")]
        assert [r[0] for r in rows] == ["0", "Overall"]
        cell = {(g, h): rows[0][i] for i, (g, h) in enumerate(zip(groups, header))}
        # span 1000..1300 = 300 ns; TIU busy 100 + 100 = 200 ns; GDMA busy 300 ns. Each time
        # column has the unit of its largest value (here ns), named in its header.
        assert "span 300 ns" in soup.select_one("#engine-summary h2").get_text()
        assert cell[("TIU", "busy (ns)")] == "200"
        assert cell[("TIU", "util")] == "66.7%"
        assert cell[("TIU", "uArch rate")] == "57.1%"              # (50 + 30) / (100 + 40)
        assert cell[("GDMA", "util")] == "100.0%"
        assert cell[("GDMA", "DDR BW (GB/s)")] == "10.00"          # 3000 B / 300 ns
        assert cell[("", "Parallelism")] == "166.7%"              # (200 + 300 + 0) / 300
        assert cell[("SDMA", "L2M BW (GB/s)")] == "n/a"

    def test_works_without_scripts(self, tmp_path):
        text, _, _ = write_page(hand_profile(), tmp_path)
        soup = BeautifulSoup(text, "html.parser")
        assert "Scripts are disabled" in " ".join(n.get_text() for n in soup.find_all("noscript"))
        # the chart boxes only scripts can fill are hidden without them (no empty boxes)
        assert ".needs-js { display: none" in str(soup.find("head").find("noscript"))
        assert all("needs-js" in (n.find_parent(class_="cards") or {}).get("class", [])
                   for n in soup.select("#panel-overview .chart"))
        assert not soup.find(id="panel-overview").has_attr("hidden")
        assert soup.find(id="tabs").has_attr("hidden")              # only JS shows the tabs
        assert soup.find("table", class_="summary") is not None

    def test_input_text_is_escaped(self, tmp_path):
        evil = '"><img src=x onerror=alert(1)>'
        profile = make_profile(cores=1, per_engine=30, seed=2)
        profile.meta.input_path = "captures/" + evil
        profile.meta.warn("odd", "name </script><script>alert(2)</script>", where=evil)
        profile.commands["kernel"] = profile.commands["kernel"].cat.rename_categories(
            lambda k: "</script><script>alert(3)</script>" if k == "tpu_matmul_bf16_multi_core" else k)
        text, data, items = write_page(profile, tmp_path)
        # exactly our four script blocks: no input text opened or closed one
        assert len(re.findall(r"<script", text, re.IGNORECASE)) == 4
        assert len(re.findall(r"</script", text, re.IGNORECASE)) == 4
        soup = BeautifulSoup(text, "html.parser")
        assert soup.find("img") is None
        assert len(soup.find_all("script")) == 4
        # ...and the text still reads as typed, in the static page and in the payload
        assert evil in soup.select_one("table.kv").get_text()
        assert "name </script><script>alert(2)</script>" in soup.select_one(".warnings").get_text()
        assert set(names(items["kernel"])) - {None} == {"</script><script>alert(3)</script>",
                                                  "tpu_layernorm_fwd_multi_core", XSS_KERNEL}

    def test_one_file_no_network(self, tmp_path):
        text, _, _ = write_page(make_profile(cores=2, per_engine=200), tmp_path)
        assert list((tmp_path / "PerfWeb").iterdir()) == [tmp_path / "PerfWeb" / "result.html"]
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
        assert "cdn." not in text.lower()
        assert len(text.encode()) < 1.0e6          # plotly.js (0.57 MB gzip+text7) + a little data

    def test_plotly_bundle_is_the_vendored_one(self, tmp_path):
        """The plotly.js inlined in a written page is, byte for byte, the file whose sha256
        templates/vendor/README.md records (the npm cartesian bundle), and its banner names the
        bundle and the version the README gives."""
        import hashlib

        from reportgen.testing.html_page import text7_decode

        readme = (Path(__file__).resolve().parents[1] / "templates" / "vendor" / "README.md").read_text()
        sha = re.search(r"plotly-cartesian\.min\.js` of that tarball \([\d,]+ bytes, sha256\s+`([0-9a-f]{64})`", readme)
        version = re.search(r"plotly\.js \*\*(\S+)\*\*, the official \*cartesian\*", readme)
        text, _, _ = write_page(hand_profile(), tmp_path)
        block = re.search(r'<script id="rg-plotly" type="[^"]+" data-bytes="(\d+)">(.*?)</script>', text, re.DOTALL)
        js = gzip.decompress(text7_decode(block.group(2), int(block.group(1))))
        assert hashlib.sha256(js).hexdigest() == sha.group(1)
        banner = re.match(r"/\*\*\s*\* plotly\.js \(cartesian - minified\) v(\S+)\n", js.decode("utf-8"))
        assert banner, js[:200]
        assert banner.group(1) == version.group(1)

    def test_unwritable_target_is_an_output_error(self, tmp_path):
        blocker = tmp_path / "out"
        blocker.write_text("a file where the output folder should be")
        profile = hand_profile()
        with pytest.raises(OutputError):
            html_writer.write(profile, engine_summary(profile), blocker, quiet=True)

    def test_stable_colours(self):
        assert palette.type_color("sMM2") == palette.type_color("sMM2") == palette.PALETTE[0]
        assert palette.type_color("sys") == palette.SYSTEM_COLOR
        taken = {palette.type_color("xyz")}
        assert palette.type_color("xyz", taken=taken) != palette.type_color("xyz")


class TestTimelineAnalysis:
    def test_occupancy_hand_computed(self):
        # lane 0: [0,10) and [15,30); lane 1: [5,40); window [0,40) in 4 buckets of 10
        occ = timeline.occupancy(np.array([0, 15, 5]), np.array([10, 30, 40]), np.array([0, 0, 1]),
                                 2, 0.0, 40.0, 4)
        np.testing.assert_allclose(occ, [[1.0, 0.5, 1.0, 0.0], [0.5, 1.0, 1.0, 1.0]])

    def test_occupancy_clips_to_the_window(self):
        occ = timeline.occupancy(np.array([-100]), np.array([25]), np.array([0]), 1, 0.0, 40.0, 4)
        np.testing.assert_allclose(occ, [[1.0, 1.0, 0.5, 0.0]])

    def test_bandwidth_over_time_hand_computed(self):
        profile = hand_profile()       # 3000 B over [1000, 1300): 10 GB/s for the whole span
        bw = timeline.bandwidth_over_time(profile, n_buckets=3)
        assert [(s["name"], s["kind"]) for s in bw["series"]] == [("core 0", "DDR")]
        np.testing.assert_allclose(bw["series"][0]["gbps"], [10.0, 10.0, 10.0])
        # 3000 B in [1000, 1100) at 30 B/ns; the span is now 1000..1250 (TIU), buckets of 250/3 ns:
        # the first bucket is fully covered (30 GB/s), the second gets 100 - 83.3 ns of it
        profile.commands.loc[2, "end_ns"] = 1100
        bw = timeline.bandwidth_over_time(profile, n_buckets=3)
        np.testing.assert_allclose(bw["series"][0]["gbps"], [30.0, 30.0 * (100 - 250 / 3) / (250 / 3), 0.0])

    def test_bandwidth_mean_equals_wall_bandwidth(self):
        profile = make_profile(cores=2, per_engine=2000, seed=5)
        summary = engine_summary(profile)
        bw = timeline.bandwidth_over_time(profile, n_buckets=500)
        for k in (0, 1):
            series = next(s for s in bw["series"] if s["name"] == f"core {k}" and s["kind"] == "DDR")
            want = summary.loc[k, "gdma_ddr_bw_wall"] + summary.loc[k, "sdma_ddr_bw_wall"]
            assert series["gbps"].mean() == pytest.approx(want, rel=1e-9)
        cdma = next(s for s in bw["series"] if s["name"] == "CDMA_0" and s["kind"] == "L2M")
        assert cdma["gbps"].mean() == pytest.approx(summary.iloc[-1]["cdma_l2m_bw_wall"], rel=1e-9)

    def test_time_by_func_type(self):
        frame = timeline.time_by_func_type(hand_profile())
        assert frame[["engine", "func_type", "total_ns", "cmds"]].values.tolist() == [
            ["TIU", "sMM2", 100, 1], ["TIU", "sAR", 100, 1], ["GDMA", "DMA_tensor", 300, 1]]

    def test_lanes_follow_the_sheet_order(self):
        profile = make_profile(cores=2, per_engine=20, cdma_ports=(0, 1))
        lanes = timeline.device_lanes(profile)
        assert lanes.names == ["TIU_0", "GDMA_0", "SDMA_0", "TIU_1", "GDMA_1", "SDMA_1", "CDMA_0", "CDMA_1"]
        assert lanes.cores[-1] == [1]              # make_profile submits CDMA from the last core
        np.testing.assert_array_equal(np.array(lanes.names)[lanes.of_command],
                                      profile.commands["sheet"].astype(str).to_numpy())


REAL_DUMP = PMU / "aks-m2-ports5" / "input"


@needs(REAL_DUMP)
def test_real_dump_round_trip(tmp_path):
    pmu = pytest.importorskip("reportgen.parsers.pmu")
    profile = pmu.load_dump(REAL_DUMP)
    text, data, items = write_page(profile, tmp_path)
    assert_items_equal_model(items, profile)
    assert len(text.encode()) < 3e6
    assert {l["name"] for l in data["lanes"] if l["engine"] == "CDMA"} == {f"CDMA_{p}" for p in range(5)}


def test_charts_without_pmu_engines_say_so(tmp_path):
    """A PMU-sourced profile whose lanes are not TIU/GDMA/SDMA: the engine charts explain they
    are empty (framework sources get the framework overview instead, see TestFrameworkViews)."""
    profile = hand_profile()
    c = profile.commands
    c["engine"] = c["engine"].cat.rename_categories({"TIU": "stream 7", "GDMA": "stream 20"})
    profile.commands = finalize_commands(c.drop(columns="sheet"))
    _, data, items = write_page(profile, tmp_path)
    assert [l["name"] for l in data["lanes"]] == ["stream 7_0", "stream 20_0"]
    for chart in ("util", "busyidle", "bandwidth"):
        assert "empty" in data["charts"][chart], chart
    assert data["charts"]["functype"]["data"]
    assert_items_equal_model(items, profile)


# --------------------------------------------------------------------------------------------
# Framework views: the Tables tab payload, the framework overview and its charts
# --------------------------------------------------------------------------------------------

from reportgen.analysis.metrics import lane_summary  # noqa: E402

HANDMADE = Path(__file__).parent / "data" / "framework" / "handmade_kineto.json"
KINETO = FRAMEWORK / "kineto-tb-plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
TWO_RANKS = FRAMEWORK / "hta/trace_filter"


def framework_profile(path: Path) -> Profile:
    """A framework trace as the CLI prepares it (with the Device lanes table)."""
    import reportgen

    if not path.exists():
        pytest.skip(f"{path} not present")
    return reportgen.load(path)


def assert_tables_equal(got: dict[str, pd.DataFrame], want: dict[str, pd.DataFrame]) -> None:
    """Every embedded table has the profile's columns, rows and values (numbers exactly)."""
    assert list(got) == ["Device lanes"] + [k for k in want if k != "Device lanes"]
    for name, df in want.items():
        page = got[name]
        assert list(page.columns) == [str(c) for c in df.columns], name
        assert len(page) == min(len(df), table_writer.embedded_rows(want, name)), name
        for col in df.columns:
            mine, theirs = page[str(col)], df[col].iloc[:len(page)]
            if pd.api.types.is_integer_dtype(theirs):                      # exact, also past 2**53
                assert [None if pd.isna(v) else int(v) for v in mine.astype("object")] == \
                    [None if pd.isna(v) else int(v) for v in theirs.astype("object")], f"{name}.{col}"
            elif pd.api.types.is_numeric_dtype(theirs) and not pd.api.types.is_bool_dtype(theirs):
                np.testing.assert_array_equal(mine.to_numpy(float, na_value=np.nan),
                                              theirs.to_numpy(float, na_value=np.nan), err_msg=f"{name}.{col}")
            else:
                assert names(mine) == names(theirs.astype("object")), f"{name}.{col}"


class TestFrameworkViews:
    def test_real_kineto_tables_decode_to_the_profile_tables(self, tmp_path):
        profile = framework_profile(KINETO)
        text, data, _ = write_page(profile, tmp_path)
        got = read_tables(text)
        assert_tables_equal(got, profile.tables)
        heads = {h["name"]: h for h in data["tables"]}
        # torch's own key_averages(group_by_input_shapes=True) has 658 rows on this trace (issue
        # 23: tests/data/torch_oracle; device rows, dup-node fold and all CPU events included)
        assert heads["Operators by Shape"]["rows"] == 658 and heads["Memory Timeline"]["rows"] == 4000
        assert heads["Operators"]["definition"].startswith("torch key_averages semantics")
        # a known operator and kernel read back with their analysed values
        ops = got["Operators"].set_index("Name")
        assert ops.loc["aten::cudnn_convolution", "# of Calls"] == 318
        assert ops.loc["aten::cudnn_convolution", "Self Device (us)"] == \
            profile.tables["Operators"].set_index("Name").loc["aten::cudnn_convolution", "Self Device (us)"]
        assert [t["id"] for t in data["tabs"]][:2] == ["overview", "tables"]
        assert len(text.encode()) < 2.6e6

    def test_column_formats(self):
        fmt = table_writer.column_format
        assert fmt("# of Calls", pd.Series([1, 2])) == {"kind": "int", "decimals": 0, "label": "# of Calls"}
        # a duration column: one unit from its largest value, named in the header (issue 15 item 4)
        assert fmt("Self CPU (us)", pd.Series([3217.0, 1.0])) == {"kind": "time", "decimals": 3, "factor": 1e-3,
                                                                   "label": "Self CPU (ms)"}
        assert fmt("Avg (us)", pd.Series([286.129, np.nan])) == {"kind": "time", "decimals": 3, "factor": 1.0,
                                                                  "label": "Avg (µs)"}
        assert fmt("busy_ns", pd.Series([24_000, 5])) == {"kind": "time", "decimals": 3, "factor": 1e-3,
                                                          "label": "busy (µs)"}
        assert fmt("Steps (ns)", pd.Series([999])) == {"kind": "time", "decimals": 0, "factor": 1.0,
                                                       "label": "Steps (ns)"}
        assert fmt("Host-Device (ms)", pd.Series([2500.0]))["label"] == "Host-Device (s)"
        assert fmt("Share %", pd.Series([41.666667])) == {"kind": "float", "decimals": 2, "label": "Share %"}
        assert fmt("util", pd.Series([0.149068])) == {"kind": "frac", "decimals": 2, "label": "util"}
        assert fmt("core", pd.Series([0, "Overall"], dtype=object))["kind"] == "text"
        # timestamps beyond 2**53 stay exact digits (not a duration to convert)
        assert fmt("Time (ns)", pd.Series([1_623_143_089_861_000_123]))["kind"] == "bigint"
        cell = table_writer.format_cell
        assert cell(0.149068, {"kind": "frac", "decimals": 2}) == "14.91%"
        assert cell(603558000, {"kind": "int", "decimals": 0}) == "603,558,000"
        assert cell(1234.5678, {"kind": "float", "decimals": 3}) == "1,234.568"
        assert cell(np.nan, {"kind": "float", "decimals": 3}) == "n/a"
        assert cell(24_000, {"kind": "time", "decimals": 3, "factor": 1e-3}) == "24.000"

    def test_framework_overview_replaces_the_engine_summary(self, tmp_path):
        profile = framework_profile(HANDMADE)
        text, data, items = write_page(profile, tmp_path)
        soup = BeautifulSoup(text, "html.parser")
        assert "Engine summary" not in text and soup.select_one("table.lanes") is not None
        rows = [[td.get_text() for td in tr.find_all("td")] for tr in soup.select("table.lanes tbody tr")]
        # hand_made: 5 device slices on stream 7, busy 24 us (idle 137) of a 161 us span;
        # the device row is the union of its one lane
        assert rows == [["0", "stream 7", "5", "24.000", "137.000", "14.91%", "161.000"],
                        ["0", "device: 1 lanes (union)", "5", "24.000", "137.000", "14.91%", "161.000"],
                        ["Overall", "1 devices", "5", "24.000", "137.000", "14.91%", "161.000"]]
        header = [th.get_text() for th in soup.select("table.lanes thead th")]
        assert "busy (µs)" in header and "idle (µs)" in header and "span (µs)" in header
        # no Ranks table here; the device-time bars (issue 24) come first, under the findings
        assert set(data["charts"]) == {"devicetime", "operators", "kernels", "memory"}
        assert data["tabs"][0]["charts"] == ["devicetime", "operators", "kernels", "memory"]
        # one device: no "All devices" tab repeating "Device 0" (issue 15 item 6)
        assert [t["title"] for t in data["tabs"]] == ["Overview", "Tables", "Device 0"]
        assert data["tabs"][-1]["charts"] == []                               # no PMU bandwidth
        for chart in data["charts"]:
            assert soup.find(id=f"chart-{chart}") is not None
        assert soup.find(id="chart-util") is None and soup.find(id="chart-bandwidth") is None
        # the static Tables tab skeleton: one card per table with its row count and definition
        cards = soup.select("#panel-tables .data-table")
        assert [c.h2.contents[0].strip() for c in cards] == list(data_names(data))
        assert_items_equal_model(items, profile)

    def test_operator_and_kernel_charts_show_the_table_values(self, tmp_path):
        profile = framework_profile(HANDMADE)
        _, data, _ = write_page(profile, tmp_path)
        ops = data["charts"]["operators"]
        # torch's key_averages of this trace (tests/oracle/torch_key_averages.py run on it):
        # Self Device addmm 13, relu 2, the rest 0 (the memcpy names no External id: no op owns
        # it); Self Device % over all rows' Self Device, device rows included (39 us), as torch
        assert ops["metric"] == "Self Device (us)"
        assert typed(ops["data"][0]["x"]).tolist() == [13.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        assert ops["layout"]["yaxis"]["ticktext"][:2] == ["aten::addmm", "aten::relu"]
        assert [c[1:] for c in ops["data"][0]["customdata"][:2]] == [[100 * 13 / 39, 1],
                                                                    [100 * 2 / 39, 1]]
        kern = data["charts"]["kernels"]
        share = profile.tables["Kernels"]["Share %"].to_numpy(float)
        np.testing.assert_array_equal(typed(kern["data"][0]["x"]), np.sort(share)[::-1])
        assert kern["layout"]["yaxis"]["ticktext"][1] == "Memcpy HtoD (Pageable -&gt; Device)"   # escaped
        mem = data["charts"]["memory"]["data"]
        assert typed(mem[0]["y"]).tolist() == [4096, 5120, 1024]
        # the time axis in the unit of its span (95 µs), named in its title
        assert typed(mem[0]["x"]).tolist() == [(t - int(data["t0_ns"])) / 1e3
                                              for t in (1000016000, 1000072000, 1000095000)]
        assert data["charts"]["memory"]["layout"]["xaxis"]["title"]["text"] == "time since first event (µs)"
        assert mem[-1]["name"] == "peak" and typed(mem[-1]["y"]).tolist() == [5120.0]

    def test_self_cpu_when_no_operator_ran_on_the_device(self, tmp_path):
        profile = framework_profile(HANDMADE)
        profile.tables["Operators"]["Self Device (us)"] = 0.0
        _, data, _ = write_page(profile, tmp_path)
        ops = data["charts"]["operators"]
        assert ops["metric"] == "Self CPU (us)"
        # torch's Self CPU (the python frame train.py(10): step is one of its events: 24 us)
        assert typed(ops["data"][0]["x"]).tolist() == [31.0, 28.0, 24.0, 16.0, 15.0, 14.0, 2.0]

    def test_ranks_chart_from_two_real_ranks(self, tmp_path):
        profile = framework_profile(TWO_RANKS)
        _, data, _ = write_page(profile, tmp_path)
        ranks = profile.tables["Ranks"]
        traces = {t["name"]: t for t in data["charts"]["ranks"]["data"]}
        # the time columns share one unit (the largest value, 1.23 s, is in s), named in the legend
        assert traces["Device busy (s)"]["x"] == ["rank 0", "rank 1"]
        np.testing.assert_allclose(typed(traces["Device busy (s)"]["y"]), ranks["Device busy (us)"].to_numpy(float) / 1e6)
        assert data["charts"]["ranks"]["layout"]["yaxis"]["title"]["text"] == "s"
        np.testing.assert_array_equal(typed(traces["Device utilisation %"]["y"]),
                                      ranks["Device utilisation %"].to_numpy(float))
        assert traces["Device utilisation %"]["yaxis"] == "y2"
        assert "Rank" not in traces and "Device slices" not in traces     # keys and counts stay in the table

    def test_table_text_is_escaped_and_long_tables_are_cut_where_said(self, tmp_path, monkeypatch):
        profile = framework_profile(HANDMADE)
        evil = "<script>alert(1)</script>"
        profile.tables["Vendor <b>table</b>"] = pd.DataFrame({
            "Name": [evil, "</script><img src=x onerror=alert(2)>", None] * 10, "Value": np.arange(30.0) + 0.5,
            "Start (ns)": pd.array([1_700_000_000_123_456_789 + i if i != 2 else None for i in range(30)],
                                   dtype="Int64")})
        monkeypatch.setattr(table_writer, "TABLE_ROWS_EMBEDDED", 25)
        text, data, _ = write_page(profile, tmp_path)
        assert len(re.findall(r"<script", text, re.IGNORECASE)) == 5     # ours: + rg-tables
        soup = BeautifulSoup(text, "html.parser")
        assert soup.find("img") is None and len(soup.find_all("script")) == 5
        assert "Vendor <b>table</b>" in [h.get_text() for h in soup.select(".toc a")]
        got = read_tables(text)["Vendor <b>table</b>"]
        assert len(got) == 25 and names(got["Name"][:3]) == [evil, "</script><img src=x onerror=alert(2)>", None]
        assert got["Value"].tolist() == [i + 0.5 for i in range(25)]
        assert [None if pd.isna(v) else v for v in got["Start (ns)"][:4]] == [1_700_000_000_123_456_789, 1_700_000_000_123_456_790,
                                                   None, 1_700_000_000_123_456_792]
        head = next(h for h in data["tables"] if h["name"] == "Vendor <b>table</b>")
        assert (head["rows"], head["embedded"], head["definition"]) == (30, 25, "")

    def test_tables_without_device_work_or_chartable_tables(self, tmp_path):
        """An Ascend cluster summary: no device slices, one vendor table: the page says so."""
        profile = Profile(meta=Meta(source="ascend"))
        profile.tables["Cluster Steps"] = pd.DataFrame({"Step": [1, 2], "Computing": [10.5, 11.25]})
        profile.tables["Device lanes"] = lane_summary(profile)
        text, data, _ = write_page(profile, tmp_path)
        assert data["charts"] == {} and data["tabs"][0]["charts"] == []
        assert "No device slices in this profile." in text
        assert "nothing to chart. Its tables are in the Tables tab." in text
        got = read_tables(text)
        assert got["Cluster Steps"]["Computing"].tolist() == [10.5, 11.25] and len(got["Device lanes"]) == 0

    def test_pmu_page_has_no_framework_parts(self, tmp_path):
        text, data, _ = write_page(make_profile(cores=1, per_engine=50, seed=1), tmp_path)
        assert [t["id"] for t in data["tabs"]] == ["overview", "core-0", "compare"]
        assert data["tabs"][0]["charts"] == ["util", "functype"]
        assert set(data["charts"]) == {"util", "functype", "busyidle", "bandwidth"}
        assert "tables" not in data and 'id="rg-tables"' not in text and "Engine summary" in text


def data_names(data: dict) -> list[str]:
    return [h["name"] for h in data["tables"]]


def typed(spec) -> np.ndarray:
    """A plotly typed array ({dtype, bdata}) or plain list as numpy."""
    import base64

    if isinstance(spec, dict):
        return np.frombuffer(base64.b64decode(spec["bdata"]), "<" + spec["dtype"])
    return np.asarray(spec)
