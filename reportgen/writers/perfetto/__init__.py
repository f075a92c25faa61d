"""``perfetto.pftrace``: every command as a Perfetto slice, with typed args, flows and counters.

Layout (track tree; every track is declared once, uuids are derived from the track's path so
two runs write identical bytes)::

    <chip> TPU                                   device root
      Core N                                     explicit order by core number
        Kernel Function                          one slice per kernel call (diagnosis), its figures as args
        TIU, TIU #2...                           commands; "#k" lanes only when commands overlap
        TIU uArch Rate (%)          [counter]    uArch rate of the running modelled TIU command
        GDMA, GDMA Bandwidth (GB/s) [counter]    summed DDR/L2M bandwidth of the running commands
        SDMA, SDMA Bandwidth (GB/s) [counter]
      CDMA
        CDMA port P                              other CDMA ops (write, general, ...)
          CDMA port P TX, RX (, #2...)           send/tcp_send/tx_* and receive/read/rx_* ops
    host process (pid) -> thread (tid) (, "#k" lanes)   from profile.host (--trace_file)

Slices: name = Function Name, category = Function Type, debug args as typed values (int /
double / interned string; an unknown value is left out, never written as text or 0):
``Global Idx``, ``Sheet``, ``Cmd Id``, ``Cycles``, ``DMA data size(B)``, ``DDR Bandwidth(GB/s)``,
``L2M Bandwidth(GB/s)``, ``uArch Rate`` (a number in %), ``Direction``, ``Data Type``,
``Kernel Function``, ``Mode``, ``Stall Cycles``, ``Dep Cmd Id``, ``Batch``, ``Port`` and ``Core`` (CDMA:
the submitting core).  Kernel Function slices carry the call's figures of the diagnosis
(``kernels.CALL_ARGS``: ``Wall (ns)``, ``TIU/GDMA/SDMA Busy (ns)``, ``TIU Util (%)``, ``uArch Rate``,
``DMA data size(B)``, ``DDR/L2M Bandwidth(GB/s)``) besides ``Kernel Function``, ``Func Scope Id``
and ``Commands``.  So SQL such as
``EXTRACT_ARG(arg_set_id, 'debug.uArch Rate') < 50`` works without CAST.

Dependency flows.  A TIU descriptor's ``cmd_id_dep`` names the GDMA command the TIU command waits
for, and a GDMA descriptor's names the TIU command it waits for; the rule that resolves them is
the analysis' (``analysis.depgraph.descriptor_dependencies``, docs/metrics.md "Dependency graph
and critical path"), one rule for every output.  Barrier flows go from the command that
released the barrier (the last core's last work, or its wait) to every other wait of it.  One flow per dependent,
ids reused once a flow is closed (``commands.reused_flow_ids``), starting on the source slice and
terminating on the dependent one.
The commands on the critical path carry ``critical = true`` (a bool debug arg), so
``EXTRACT_ARG(arg_set_id, 'debug.critical')`` selects them.

Host (``profile.host``, filled by :func:`reportgen.analysis.host_align.align_host_trace`): real
process/thread tracks (numeric pid/tid; otherwise stand-in ids named after the originals),
slices nested as in the model; events that overlap without nesting go to "thread T #k" lanes.

Timestamps are device ns; when a host trace was attached (``meta.host_alignment``) they
are on the host clock (device ns + offset, as the reference does), so the host slices keep their
own times.  Anything that would still be negative is shifted to start at 0.

Encoding.  Each track is its own packet sequence.  The sequence's first packet clears its
incremental state, makes the track the sequence's default ``track_uuid`` (so events do not repeat
it) and interns the event names, categories, arg names and string values the sequence uses; the
second is a ``ClockSnapshot`` of the sequence's incremental clock (id 64, the default
``timestamp_clock_id``), so each event's ``timestamp`` is the ns since the sequence's previous
packet; the sequence's packets follow in timestamp order.  Counter points ride on the command
event at their time as extra counter values (:mod:`.riding`; docs/formats.md
"``perfetto.pftrace`` encoding").  ``Sheet`` and ``Mode``, when every slice of a command track
has the same one, are written once, as the track's description (``debug.Sheet = TIU_0``, one
line per arg), not on each slice.  Flow ids are varints (``flow_ids_old``), reused once a
flow is closed.  Event packets are encoded by a small protobuf wire encoder
(:class:`~reportgen.writers.perfetto.wire.Rows`): a chunk's packets are described field by field,
each field one numpy column, and written by one compiled (numba) loop, so there is no Python
loop per command; chunks of :data:`CHUNK` slices are written as they are encoded (memory
stays flat).  The plans hold little per command (slice order and track as int32, flow lists
as int32); counter points are computed and matched to command events core by core
(:mod:`.riding`).  Descriptors and interned data, a few per track, use the ``perfetto`` package's
``perfetto_trace_pb2``.  The file is a concatenation of ``Trace`` messages, which is one trace.

Modules: ``wire`` (protobuf encoder), ``trace`` (file, tracks, interning, sequences), ``device``
(root and core tracks, time base), ``columns`` (command columns), ``commands``, ``kernels``,
``counters``, ``host`` (the event groups), ``riding`` (counter points on command events),
``writer`` (:func:`write`).
"""
from reportgen.writers.perfetto.writer import FILE_NAME, write

__all__ = ["FILE_NAME", "write"]
