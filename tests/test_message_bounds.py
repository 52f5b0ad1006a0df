"""What the grader reads of a kernel's Jupyter messages is bounded (autograder/kernel/execute.py): widget
messages count against the output caps and little widget state is kept; a message part with too
many values, nested too deep or too large is refused before it is decoded, a message of too many
parts or too many bytes in all is cut by the relay as its parts arrive (autograder/kernel/relay.py), the
cell says why and the kernel is replaced; and a flood of messages loses none of the outputs that
follow it.

The grader's side is measured by this process's peak memory (VmHWM, reset before), against a
stated bound; the kernel's by its control group."""
from __future__ import annotations

import asyncio

import nbformat
import pytest

from autograder.course import kernel_env
from autograder.kernel.execute import Limits, execute
from autograder.kernel.limits import KERNEL_FRAME_BYTES, MESSAGE_BYTES, MESSAGE_FRAMES, WIDGET_STATE_BYTES
from autograder.kernel.relay import Cut, FrameCounter
from test_probe_bounds import reset_peak, vm_hwm

pytestmark = pytest.mark.slow

# The grader's peak over what it held before: KERNEL_QUEUED messages of up to 20 MB waiting, the
# one being read (its bytes, their check, the decoded text, its size counted), with room to spare.
GRADER_PEAK_BYTES = 768 * 2**20

WIDGETS = """
import ipywidgets as widgets
held = [widgets.Text(value=str(i % 10) * (20 * 2**20)) for i in range({n})]
print("SENT", len(held))
"""


def run(sources, tmp_path, **limits):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    before = reset_peak()
    outcome = asyncio.run(execute(nb, tmp_path, kernel_env(), limits=Limits(**limits)))
    return nb, outcome, vm_hwm() - before


def printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def errors(cell) -> list[tuple[str, str]]:
    return [(o.ename, o.evalue) for o in cell.outputs if o.output_type == "error"]


def test_widget_messages_count_against_the_output_caps_and_lose_nothing_after(tmp_path, record_property):
    """40 text widgets of 20 MB each (the issue's attack, 120 of them, held 2.62 GiB in the grader's
    widget state): dropped with a note; the cell's own print and the next cell's error are kept."""
    nb, outcome, peak = run([WIDGETS.format(n=40), "raise ValueError('kept')"], tmp_path,
                            memory_bytes=4 * 2**30, cell_timeout=120)
    assert "dropped by the grader" in printed(nb.cells[0]) and "SENT 40" in printed(nb.cells[0])
    assert errors(nb.cells[1]) == [("ValueError", "kept")]
    assert any("its output went beyond" in e for e in outcome.events), outcome.events
    assert outcome.kernel_starts == 1
    record_property("measured", f"40 widget messages of 20 MB: grader peak +{peak / 2**20:.0f} MiB, "
                                f"kernel {outcome.peaks[0].get('memory_bytes', 0) / 2**20:.0f} MiB" if outcome.peaks
                    else f"40 widget messages of 20 MB: grader peak +{peak / 2**20:.0f} MiB")
    assert peak < GRADER_PEAK_BYTES, peak
    assert WIDGET_STATE_BYTES <= 1_000_000


def test_honest_widgets_keep_their_state(tmp_path):
    nb, outcome, _ = run(["import ipywidgets as widgets\nfrom IPython.display import display\n"
                          "s = widgets.IntSlider(value=3)\ndisplay(s)\ns.value = 5"], tmp_path)
    assert outcome.events == []
    states = [o for o in nb.cells[0].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert states, nb.cells[0].outputs


REFUSED = [
    # too many values in one part of a message (JSON output of 600,000 values)
    ("from IPython.display import display\ndisplay({'application/json': [[]] * 300_000}, raw=True)",
     "MessageRefused: a message of more than 200,000 values"),
    # nested deeper than the grader reads
    ("x = []\nfor _ in range(100):\n    x = [x]\nfrom IPython.display import display\n"
     "display({'application/json': x}, raw=True)", "MessageRefused: a message nested more than"),
    # one part larger than the grader reads: ZeroMQ ends the connection
    (f"print('z' * {KERNEL_FRAME_BYTES + 2**20})", f"larger than the grader reads ({KERNEL_FRAME_BYTES // 2**20} MB"),
]


@pytest.mark.parametrize("source,reason", REFUSED, ids=["values", "depth", "frame"])
def test_a_message_beyond_the_bounds_is_refused_and_the_rest_is_graded(tmp_path, source, reason, record_property):
    nb, outcome, peak = run(["x = 41", source, "print(x + 1)"], tmp_path)
    (ename, evalue), = errors(nb.cells[1])
    assert ename == "GraderError" and reason in evalue, evalue
    assert printed(nb.cells[2]) == "42\n" and outcome.kernel_starts == 2
    record_property("measured", f"refused message ({reason[:40]}): grader peak +{peak / 2**20:.0f} MiB")
    assert peak < GRADER_PEAK_BYTES + KERNEL_FRAME_BYTES, peak


def test_a_hundred_megabyte_line_is_still_read_and_clipped(tmp_path):
    nb, outcome, _ = run(["print('z' * 10**8)", "print('after')"], tmp_path)
    assert printed(nb.cells[0]).startswith("z" * 1000) and "dropped by the grader" in printed(nb.cells[0])
    assert printed(nb.cells[1]) == "after\n" and outcome.kernel_starts == 1


# One Jupyter message of many parts, each under the cap on a part, all views of one buffer, sent to the
# grader's shell socket (which, unlike IOPub's, drops nothing): the kernel holds one buffer, ZeroMQ would
# deliver the grader all of them at once (before the relay: 2,101 MiB more for 20 parts of 100 MB).
MANY_PARTS = """
kernel = get_ipython().kernel
view = memoryview(bytearray({mb} * 2**20))
kernel.session.send(kernel.shell_stream, "stream", {{"name": "stdout", "text": "parts"}},
                    parent=kernel.get_parent("shell"), ident=kernel._parent_ident["shell"],
                    buffers=[view] * {parts})
"""


@pytest.mark.parametrize("mb,parts,reason", [(100, 40, f"more than {MESSAGE_BYTES // 2**20} MB"),
                                             (0, 5_000, f"more than {MESSAGE_FRAMES:,} parts")],
                         ids=["4-GB-of-views", "5000-empty-parts"])
def test_a_message_of_many_parts_is_cut_as_they_arrive(tmp_path, mb, parts, reason, record_property):
    """40 parts of 100 MB (4 GB for the grader, 100 MB for the kernel), or 5,000 empty parts: the grader
    holds at most one message's bound of it, the cell says why, the kernel is replaced, the rest runs."""
    nb, outcome, peak = run(["x = 41", MANY_PARTS.format(mb=mb, parts=parts), "print(x + 1)"], tmp_path)
    (ename, evalue), = errors(nb.cells[1])
    assert ename == "GraderError" and "larger than the grader reads" in evalue and reason in evalue, evalue
    assert printed(nb.cells[2]) == "42\n" and outcome.kernel_starts == 2
    record_property("measured", f"one message of {parts} parts of {mb} MB, views of one buffer: grader peak "
                                f"+{peak / 2**20:.0f} MiB (its bound {MESSAGE_BYTES // 2**20} MiB a message), "
                                f"kernel {max(p.get('memory_bytes', 0) for p in outcome.peaks) / 2**20:.0f} MiB")
    assert peak < MESSAGE_BYTES + 64 * 2**20, peak


def frame(body: bytes, more=False, command=False, long=False) -> bytes:
    flags = (0x01 if more else 0) | (0x04 if command else 0) | (0x02 if long or len(body) > 255 else 0)
    size = len(body).to_bytes(8 if flags & 0x02 else 1, "big")
    return bytes([flags]) + size + body


GREETING = b"\xff" + b"\0" * 8 + b"\x7f" + bytes([3, 1]) + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31
READY = frame(b"\x05READY\x0bSocket-Type\0\0\0\x03PUB", command=True)


def message(*parts: bytes) -> bytes:
    return b"".join(frame(p, more=i < len(parts) - 1) for i, p in enumerate(parts))


def test_the_frame_counter_reads_zmtp_a_byte_at_a_time_and_sums_each_message():
    counter = FrameCounter(max_bytes=1000, max_frames=10)
    stream = GREETING + READY + message(b"<IDS|MSG>", b"sig", b"h" * 300, b"{}", b"{}", b"c" * 600) * 3
    for i in range(len(stream)):                 # however the bytes arrive
        counter.feed(stream[i:i + 1])
    assert counter.message_bytes == counter.message_frames == 0
    counter.feed(message(*[b"x" * 90] * 10))     # 10 parts, 900 bytes: at the bounds
    with pytest.raises(Cut, match="more than 10 parts"):
        FrameCounter(max_bytes=1000, max_frames=10).feed(GREETING + message(*[b""] * 11))
    with pytest.raises(Cut, match="more than"):
        FrameCounter(max_bytes=1000, max_frames=10).feed(GREETING + frame(b"y" * 600, more=True) + frame(b"z" * 401)[:9])


@pytest.mark.parametrize("stream,why", [
    (b"\xff" + b"\0" * 8 + b"\x7e" + b"\0" * 54, "older protocol"),                       # ZMTP 1.0
    (GREETING[:10] + bytes([2, 0]) + GREETING[12:], "protocol 2.0"),
    (GREETING[:12] + b"CURVE".ljust(20, b"\0") + GREETING[32:], "mechanism"),
    (GREETING + bytes([0x10, 0]), "unknown flags"),
    (GREETING + frame(b"x" * 70_000, command=True), "command"),
], ids=["zmtp1", "zmtp2", "curve", "flags", "huge-command"])
def test_the_frame_counter_cuts_what_it_cannot_count(stream, why):
    with pytest.raises(Cut, match=why):
        FrameCounter().feed(stream)


def test_the_relay_passes_messages_both_ways_and_cuts_the_kernel_off_past_its_bounds(tmp_path):
    """A relay between a stand-in kernel (a Unix socket speaking ZMTP) and a client: bytes pass both
    ways unchanged; a message past the relay's bounds ends both connections, says why, and no new
    connection is accepted."""
    import socket
    import time

    from autograder.kernel.relay import Relay
    kernel_ip = str(tmp_path / "kernel")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(f"{kernel_ip}-1")
    listener.listen(1)
    relay = Relay(kernel_ip, [1], max_bytes=1000, max_frames=10)
    try:
        client = socket.socket(socket.AF_UNIX)
        client.connect(f"{relay.ip}-1")
        kernel, _ = listener.accept()
        client.settimeout(10)
        kernel.settimeout(10)
        client.sendall(b"to the kernel")
        assert kernel.recv(100) == b"to the kernel"
        sent = GREETING + READY + message(b"a" * 400, b"b" * 400)
        kernel.sendall(sent)
        got = b""
        while len(got) < len(sent):
            got += client.recv(65536)
        assert got == sent and relay.cut is None and relay.largest() == 800
        kernel.sendall(message(*[b"c" * 100] * 11))
        deadline = time.monotonic() + 10
        while relay.cut is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert relay.cut == "a message of more than 10 parts"
        assert client.recv(65536) == b"" and kernel.recv(65536) == b""        # both ends cut
        with pytest.raises(OSError):
            socket.socket(socket.AF_UNIX).connect(f"{relay.ip}-1")
    finally:
        relay.close()
        listener.close()
    assert not relay.folder.exists()
