"""The executor survives what students' code does to kernels, and grades the rest."""
import asyncio
import time

import nbformat
import pytest

from autograder.course import kernel_env
from autograder.kernel.execute import Limits, execute

pytestmark = pytest.mark.slow


def run(sources, tmp_path, **limits):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata.kernelspec = {"name": "python3", "language": "python", "display_name": "Python 3"}
    outcome = asyncio.run(execute(nb, tmp_path, kernel_env(), limits=Limits(**limits)))
    return nb, outcome


def text(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def enames(cell):
    return [o.ename for o in cell.outputs if o.output_type == "error"]


def test_dead_kernel_is_restarted_and_the_state_replayed(tmp_path):
    nb, outcome = run(["x = 41", "import os; os._exit(1)", "print(x + 1)"], tmp_path)
    assert enames(nb.cells[1]) == ["DeadKernelError"]
    assert text(nb.cells[2]) == "42\n"
    assert outcome.kernel_starts == 2


COUNT_RUNS = ("import os\nruns = int(open('runs').read()) if os.path.exists('runs') else 0\n"
              "open('runs', 'w').write(str(runs + 1))\nprint('run', runs)")


def test_a_replayed_cell_keeps_what_it_showed_when_it_ran(tmp_path):
    """After a restart the cells that had run are run again to rebuild the kernel's state; what they
    print then is thrown away: the notebook keeps (and is graded on) what each showed when it ran."""
    nb, outcome = run([COUNT_RUNS, "import os; os._exit(1)", COUNT_RUNS], tmp_path)
    assert outcome.kernel_starts == 2
    assert text(nb.cells[0]) == "run 0\n"          # its replay printed "run 1"
    assert text(nb.cells[2]) == "run 2\n"


def test_runaway_cell_is_stopped_and_the_rest_still_runs(tmp_path):
    nb, outcome = run(["y = 'kept'", "while True:\n    try:\n        pass\n    except KeyboardInterrupt:\n        pass",
                       "print(y)"], tmp_path, cell_timeout=3)
    assert "CellTimeoutError" in enames(nb.cells[1])
    assert text(nb.cells[2]) == "kept\n"


def test_flood_of_output_is_capped(tmp_path):
    nb, _ = run(["for i in range(200_000):\n    print('spam' * 10)", "print('after')"], tmp_path, output_bytes=50_000)
    assert len(text(nb.cells[0])) < 60_000 and "dropped by the grader" in text(nb.cells[0])
    assert text(nb.cells[1]) == "after\n"


def test_notebook_time_limit_marks_what_did_not_run(tmp_path):
    """A notebook that waits is stopped at its wall-clock ceiling."""
    nb, outcome = run(["import time; time.sleep(30)", "print('late')"], tmp_path, notebook_timeout=100,
                      notebook_wall_timeout=3, cell_timeout=10)
    assert enames(nb.cells[-1]) and "time limit" in nb.cells[-1].outputs[-1].evalue
    assert any(e.startswith("notebook time limit reached: the notebook's wall-clock ceiling") for e in outcome.events), \
        outcome.events
    assert enames(nb.cells[0])[-1] == "CellTimeoutError", "the sleeping cell is stopped at the notebook's limit"
    assert "wall-clock ceiling of 3 s" in nb.cells[0].outputs[-1].evalue
    assert enames(nb.cells[-1]) == ["NotebookTimeLimit"]
    assert [s["limit"] for s in outcome.stopped] == ["notebook wall clock"]


def test_memory_limit_kills_the_bomb_not_the_grader(tmp_path):
    nb, _ = run(["z = 7", "bomb = bytearray(8 * 2**30)", "print(z)"], tmp_path, memory_bytes=2 * 2**30)
    assert enames(nb.cells[1]) == ["MemoryError"]
    assert text(nb.cells[2]) == "7\n"


def test_a_kernel_that_floods_its_own_stdout_is_quoted_briefly(tmp_path):
    """100 MB on the kernel process's own stdout, without a newline, then it dies before answering:
    the reason quotes its last words, clipped, and nothing of the flood is kept anywhere."""
    import sys

    from autograder.kernel.limits import TEXT_CHARS
    from autograder.kernel.sandbox import Sandbox

    class Noisy(Sandbox):
        def argv(self, workdir, limits, env=None):
            return [sys.executable, "-c", "import os\nfor _ in range(100):\n    os.write(1, b'q' * 10**6)\n"
                    "os.write(2, b'\\nlast words\\n')"]

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("x")])
    # beside the notebook's folder are the session's other files (a shared batch's record, say): not this run's
    beside = {p for p in tmp_path.parent.iterdir() if p.is_file()}
    outcome = asyncio.run(execute(nb, tmp_path, kernel_env(), Noisy(), Limits(cell_timeout=30)))
    for cell in nb.cells:
        assert enames(cell) == ["KernelStartError"]
        assert "last words" in cell.outputs[-1].evalue and len(cell.outputs[-1].evalue) < TEXT_CHARS + 200
    assert outcome.events and all(len(e) < TEXT_CHARS + 200 for e in outcome.events)
    # nothing of the flood is kept: not in the notebook's folder, nor beside it (where a kernel log once grew)
    kept = [p for p in tmp_path.rglob("*") if p.is_file()] + \
        [p for p in tmp_path.parent.iterdir() if p.is_file() and p not in beside]
    assert not [p for p in kept if p.stat().st_size > 100_000]


def test_a_kernel_slow_to_start_is_ready_as_soon_as_it_answers():
    """A kernel that answers only after the first requests timed out answers each request sent
    meanwhile, in order: wait_for_ready takes the first answer, not a reply to its newest request
    (which would keep it one answer behind until its time limit)."""
    import asyncio
    from queue import Empty

    from autograder.kernel.execute import wait_for_ready

    class Channel:
        def __init__(self):
            self.messages = []

        async def get_msg(self, timeout=None):
            if not self.messages:
                await asyncio.sleep(min(timeout, 0.01))
                raise Empty
            return self.messages.pop(0)

    class SlowKernel:
        """Silent for its first `silent` requests' waits, then answers every request it was sent."""
        def __init__(self, silent: int):
            self.shell_channel, self.iopub_channel = Channel(), Channel()
            self.asked, self.silent, self.handled = [], silent, None

        def kernel_info(self):
            msg_id = f"req-{len(self.asked)}"
            self.asked.append(msg_id)
            if len(self.asked) > self.silent:     # up now: the queued requests are answered in order
                for asked in self.asked[len(self.asked) - 1 if len(self.asked) > self.silent + 1 else 0:]:
                    self.shell_channel.messages.append({"msg_type": "kernel_info_reply", "parent_header": {"msg_id": asked}})
                    self.iopub_channel.messages.append({"msg_type": "status", "parent_header": {"msg_id": asked},
                                                        "content": {"execution_state": "idle"}})
            return msg_id

        async def is_alive(self):
            return True

        def _handle_kernel_info_reply(self, msg):
            self.handled = msg

    kernel = SlowKernel(silent=3)
    asyncio.run(asyncio.wait_for(wait_for_ready(kernel, timeout=30), timeout=10))
    assert kernel.handled is not None and len(kernel.asked) <= 5, kernel.asked


def test_the_kernel_watch_of_a_cell_cut_short_ends_quietly_when_its_kernel_is_stopped():
    """nbclient watches the kernel while a cell runs; a cell cut short by the notebook's time limit
    leaves the watch running. Once the grader stops that kernel the watch must end, not fail on the
    stopped client (nbclient's failed: "Task exception was never retrieved" on the grader's stderr)."""
    from autograder.kernel.execute import _Client

    class AliveKernel:
        async def is_alive(self):
            return True

    async def watch_then_stop():
        client = _Client(nbformat.v4.new_notebook(), Limits())
        client.kc = client.km = AliveKernel()
        watch = asyncio.ensure_future(client._async_poll_kernel_alive())
        await asyncio.sleep(1.2)                   # one look at a live kernel
        assert not watch.done()
        client.kc = client.km = None               # the grader stops the kernel
        await asyncio.wait_for(asyncio.shield(watch), timeout=3)
        return watch

    watch = asyncio.run(watch_then_stop())
    assert watch.done() and not watch.cancelled() and watch.exception() is None


def test_a_display_is_updated_only_by_the_cell_that_runs(tmp_path):
    """update_display (and a display that reuses a display_id) changes that display in the running cell;
    one shown by an earlier cell keeps what it showed (a hidden test runs the student's code, which
    could write its hidden inputs into the student's own earlier output)."""
    nb, _ = run([
        "from IPython.display import display, update_display\ndisplay('shown first', display_id='d')",
        "update_display('written later', display_id='d')\ndisplay('again', display_id='d')",
        "display('own', display_id='e')\nupdate_display('own, updated', display_id='e')",
    ], tmp_path)

    def shown(cell):
        return [o.data["text/plain"] for o in cell.outputs if o.output_type == "display_data"]
    assert shown(nb.cells[0]) == ["'shown first'"]
    assert shown(nb.cells[1]) == ["'again'"]
    assert shown(nb.cells[2]) == ["'own, updated'"]


BACKGROUND = ("import threading, time\n"
              "def spin():\n"
              "    end = time.process_time() + {s}\n"
              "    while time.process_time() < end:\n"
              "        pass\n"
              "    open('spun', 'w').close()\n"
              "threading.Thread(target=spin, daemon=True).start()")


def test_what_a_kernel_computes_between_cells_is_counted(tmp_path):
    """A thread left running computes while no cell runs (here the grader waits before the second cell,
    as a busy grader may, until the thread has done its 1.0 s of CPU): its CPU time counts in the
    notebook's and in the student's budget all the same (before, 1.0 s of it counted nothing). The wait
    is for the thread's file, not a fixed time: on a loaded machine 1.5 s of wall time gave the thread
    0.6 s of CPU."""
    from autograder.kernel.execute import CellHooks

    class SlowGrader(CellHooks):
        calls = 0

        def before_cell(self, cell):
            SlowGrader.calls += 1
            if SlowGrader.calls == 2:
                deadline = time.monotonic() + 60
                while not (tmp_path / "spun").exists() and time.monotonic() < deadline:
                    time.sleep(0.05)

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in (BACKGROUND.format(s=1.0), "x = 1")])
    nb.metadata.kernelspec = {"name": "python3", "language": "python", "display_name": "Python 3"}
    outcome = asyncio.run(execute(nb, tmp_path, kernel_env(), limits=Limits(), hooks=SlowGrader()))
    assert SlowGrader.calls == 2 and not [e for c in nb.cells for e in enames(c)]
    assert (tmp_path / "spun").exists(), "the thread did not finish its 1.0 s of CPU within 60 s"
    assert outcome.cpu_seconds >= 0.9 and outcome.counted_seconds >= 0.9, outcome
