"""msprof / torch_npu SQLite exports. No public export was found, so the database is built here
from the documented schema (msprof "export db" table headers: TASK, COMPUTE_TASK_INFO,
COMMUNICATION_TASK_INFO, COMMUNICATION_OP, STRING_IDS) and the rows of the shared 591-row
kernel_details.csv: each CSV row is a TASK; rows with a stream are kernels (a COMPUTE_TASK_INFO
row), HCCL rows are communication tasks (COMMUNICATION_TASK_INFO), and a few runtime tasks
(EVENT_RECORD, no info row) are added. The DB path must give the CSV path's kernels."""
from __future__ import annotations

import csv
import sqlite3
from decimal import Decimal

import pytest

from reportgen.parsers import ascend, detect
from reportgen.testing.profiles import derived
from shared_data import FRAMEWORK, needs

pytestmark = needs(FRAMEWORK)
ADVISOR = FRAMEWORK / "ascend-msprof-analyze/ut/advisor/advisor_backend/compute_advice"

SCHEMA = """
CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,
    globalTaskId INTEGER PRIMARY KEY, globalPid INTEGER, taskType INTEGER, contextId INTEGER,
    streamId INTEGER, taskId INTEGER, modelId INTEGER);
CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER, blockDim INTEGER,
    mixBlockDim INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER,
    inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER,
    outputShapes INTEGER, attrInfo INTEGER, opState INTEGER, hf32Eligible INTEGER);
CREATE TABLE COMMUNICATION_TASK_INFO (name INTEGER, globalTaskId INTEGER, taskType INTEGER,
    planeId INTEGER, groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER,
    dstRank INTEGER, transportType INTEGER, size INTEGER, dataType INTEGER, linkType INTEGER,
    opId INTEGER, isMaster INTEGER);
CREATE TABLE COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER,
    groupName INTEGER, opId INTEGER, relay INTEGER, retry INTEGER, dataType INTEGER,
    algType INTEGER, count INTEGER, opType INTEGER, deviceId INTEGER);
"""


def ns(us: str) -> int:
    return int(Decimal(us.strip()) * 1000)


def build_db(path, csv_rows, runtime=3):
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    ids: dict[str, int] = {}

    def sid(text):
        if text not in ids:
            ids[text] = len(ids) + 1
            con.execute("INSERT INTO STRING_IDS VALUES (?, ?)", (ids[text], text))
        return ids[text]
    for gid, r in enumerate(csv_rows):
        start = ns(r["Start Time(us)"])
        end = start + ns(r["Duration(us)"])
        stream = int(r["Stream ID"]) if r["Stream ID"] != "N/A" else 1000
        con.execute("INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (start, end, 0, gid, gid, 1, sid("KERNEL_AICORE"), 0, stream, gid, 0))
        if r["Accelerator Core"] == "HCCL":
            con.execute("INSERT INTO COMMUNICATION_TASK_INFO (name, globalTaskId, taskType, planeId) "
                        "VALUES (?,?,?,?)", (sid(r["Name"]), gid, sid("Memcpy"), 0))
        else:
            con.execute("INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, blockDim, mixBlockDim, taskType, "
                        "opType, inputFormats, inputDataTypes, inputShapes, outputFormats, outputDataTypes, "
                        "outputShapes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                        (sid(r["Name"]), gid, int(r["Block Dim"]), 0, sid(r["Accelerator Core"]), sid(r["Type"]),
                         sid(r["Input Formats"]), sid(r["Input Data Types"]), sid(r["Input Shapes"].strip('"')),
                         sid(r["Output Formats"]), sid(r["Output Data Types"]), sid(r["Output Shapes"].strip('"'))))
    for k in range(runtime):
        gid = len(csv_rows) + k
        start = ns(csv_rows[0]["Start Time(us)"]) + k
        con.execute("INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (start, start + 500, 0, gid, gid, 1, sid("EVENT_RECORD"), 0, 16, gid, 0))
    con.execute("INSERT INTO COMMUNICATION_OP (opName, startNs, endNs, groupName, opType) VALUES (?,?,?,?,?)",
                (sid("hcom_broadcast__445_0"), 10, 2010, sid("group0"), sid("hcom_broadcast")))
    con.commit()
    con.close()


@pytest.fixture
def export(tmp_path):
    src = list(csv.DictReader(open(ADVISOR / "kernel_details.csv", encoding="utf-8-sig")))
    apo = tmp_path / "host_1_1700000000000_ascend_pt" / ascend.APO
    apo.mkdir(parents=True)
    build_db(apo / "ascend_pytorch_profiler_0.db", src)
    return apo.parent, src


def test_db_export_reads_like_the_csv(export):
    folder, src = export
    assert detect.detect_kind(folder) == "ascend"
    prof = derived(ascend.load_ascend(folder))
    csv_prof = derived(ascend.load_ascend(ADVISOR))
    c = prof.commands
    kernels = c[~c["core_type"].isin(["COMMUNICATION", "RUNTIME"])]
    compute_rows = [r for r in src if r["Accelerator Core"] != "HCCL"]
    assert len(kernels) == len(compute_rows)
    assert sorted(kernels["func_name"]) == sorted(r["Name"] for r in compute_rows)
    assert sorted((kernels["end_ns"] - kernels["start_ns"]).tolist()) == \
        sorted(ns(r["Duration(us)"]) for r in compute_rows)
    assert kernels["block_dim"].sum() == sum(int(r["Block Dim"]) for r in compute_rows)
    # communication tasks and runtime tasks are their own kinds, never kernels
    comm = c[c["core_type"] == "COMMUNICATION"]
    assert sorted(comm["func_name"]) == sorted(r["Name"] for r in src if r["Accelerator Core"] == "HCCL")
    assert set(comm["engine"]) == {"HCCL Plane 0"}
    assert comm["lane_busy"].all() and comm["is_sys"].all()
    kernel_names = set(prof.tables["Kernels"].iloc[:, 0].astype(str))
    assert not kernel_names & set(comm["func_name"])
    lanes = prof.tables["Device lanes"]
    plane = lanes[lanes["engine"] == "HCCL Plane 0"]["busy_ns"].iloc[0]
    iv = sorted(zip(comm["start_ns"], comm["end_ns"]))
    union, end = 0, -1
    for s, e in iv:
        union += max(0, e - max(s, end)) if e > end else 0
        end = max(end, e)
    assert plane == union > 0
    runtime = c[c["core_type"] == "RUNTIME"]
    assert len(runtime) == 3 and runtime["is_sys"].all() and set(runtime["func_name"]) == {"EVENT_RECORD"}
    assert "EVENT_RECORD" not in set(prof.tables["Kernels"].iloc[:, 0].astype(str))
    # the plugin's kernel columns agree with the CSV path's
    a = prof.tables["Kernel Shapes"].set_index("Name")
    b = csv_prof.tables["Kernel Shapes"].set_index("Name")
    for name in ("Cast66", "ZerosLike46"):
        for col in ("Calls", "Total (us)", "Input Shapes", "Input Data Types", "Output Formats", "Block Dim"):
            assert a.loc[name, col] == pytest.approx(b.loc[name, col]) if isinstance(b.loc[name, col], float) \
                else a.loc[name, col] == b.loc[name, col]
    assert prof.tables["Communication Ops"]["Duration (us)"].tolist() == [2.0]


def test_db_file_named_directly(export):
    folder, src = export
    db = folder / ascend.APO / "ascend_pytorch_profiler_0.db"
    assert detect.detect_kind(db) == "ascend"
    assert len(ascend.load_ascend(db).commands) == len(src) + 3


def test_sqlite_that_is_no_export_is_refused_clearly(tmp_path):
    db = tmp_path / "other.db"
    sqlite3.connect(db).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(Exception, match="no msprof / torch_npu export"):
        detect.detect_kind(db)
