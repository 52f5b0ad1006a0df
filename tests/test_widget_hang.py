"""A cell that displays a slider must not wait out the cell timeout (nbclient issue 312)."""
import asyncio
import time
from pathlib import Path
from queue import Empty

import nbformat

from autograder.authoring.build import notebook_kernel, run_notebook
from autograder.kernel.execute import Execute, ShortPolls, poll_in_short_steps


class MissesWakeUps:
    """A channel whose long waits never notice the message (the hang), but whose short polls do."""

    def __init__(self, arrives_after: float):
        self.ready_at = time.monotonic() + arrives_after
        self.long_waits = 0

    async def get_msg(self, timeout=None):
        if timeout is None or timeout > 1:
            self.long_waits += 1
            raise Empty              # the real hang would sleep here for the whole timeout
        await asyncio.sleep(timeout)
        if time.monotonic() >= self.ready_at:
            return {"msg": "reply"}
        raise Empty


def test_short_polls_find_a_message_a_long_wait_would_miss():
    channel = MissesWakeUps(arrives_after=0.6)
    poll_in_short_steps(channel)
    assert asyncio.run(channel.get_msg(timeout=600)) == {"msg": "reply"}
    assert asyncio.run(channel.get_msg(timeout=None)) == {"msg": "reply"}


def test_short_polls_still_time_out():
    channel = MissesWakeUps(arrives_after=60)
    poll_in_short_steps(channel)
    try:
        asyncio.run(channel.get_msg(timeout=0.5))
    except Empty:
        pass
    else:
        raise AssertionError("a message that never comes must end in Empty")


def test_every_notebook_runner_uses_short_polls():
    from autograder.kernel.execute import CourseNotebookClient
    assert issubclass(CourseNotebookClient, ShortPolls) and issubclass(Execute, ShortPolls)
    # nbconvert's ExecutePreprocessor (nbgrader's Execute: autograde, validate) runs the synchronous
    # `setup_kernel`, which starts its client through `start_new_kernel_client`: the mixin's, not nbclient's
    for runner in (CourseNotebookClient, Execute):
        assert runner.start_new_kernel_client is ShortPolls.start_new_kernel_client, runner
    from traitlets.config.loader import PyFileConfigLoader
    from conftest import ROOT
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    for runners in (config.Autograde.autograde_preprocessors, config.Validator.preprocessors,
                    config.GenerateSolution.preprocessors):
        assert Execute in runners


def test_nbgrader_validate_runs_the_short_polling_execute():
    """What the app uses, not what the configuration says: nbgrader's Validator ignores configuration of
    its preprocessors (the trait is not configurable), so the course's configuration sets its default."""
    from nbgrader.validator import Validator
    from traitlets.config.loader import PyFileConfigLoader
    from conftest import ROOT
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()   # as `nbgrader validate` loads it
    used = Validator(config=config).preprocessors
    assert Execute in used and not [p for p in used if p.__name__ == "Execute" and p is not Execute], used


def test_a_kernel_kept_open_cell_by_cell_polls_in_short_steps_too(tmp_path):
    """notebook_kernel (a kernel kept open, cells run one at a time: tests/test_rerun_safe.py) goes through
    nbclient's synchronous `setup_kernel`, which starts the client its own way: without the mixin's
    `start_new_kernel_client`, its channels waited in one long wait, and under load a slider cell took
    the whole cell timeout (measured: 04's seed slider, 300 s in place of 1)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('up')")])
    nb.metadata.kernelspec = {"name": "python3", "language": "python", "display_name": "Python 3"}
    with notebook_kernel(nb, tmp_path, timeout=120) as client:
        for channel in (client.kc.shell_channel, client.kc.iopub_channel):
            assert getattr(channel.get_msg, "polls_in_short_steps", False), channel
        client.execute_cell(nb.cells[0], 0)
    assert nb.cells[0].outputs[0]["text"] == "up\n"


def test_slider_cells_run(tmp_path):
    cells = ["from ipywidgets import interactive, IntSlider\n"
             "w = interactive(lambda seed: seed * 2, seed=IntSlider(value=3))\n"
             "display(w)\nw.result"] * 5 + ["print('done')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata.kernelspec = {"name": "python3", "language": "python", "display_name": "Python 3"}
    run_notebook(nb, tmp_path, timeout=600)
    assert nb.cells[-1].outputs[0]["text"] == "done\n"
    assert all(c.outputs for c in nb.cells[:-1])


# ---- every user's server on the hub: Validate with the same short polls, and nothing of the grader -----

def test_the_short_polling_module_stands_alone():
    """autograder/kernel/shortpolls.py is copied as it is to every user's server on the hub: it imports only
    the standard library, nbclient and nbgrader, and names nothing of the grader."""
    import ast
    from autograder.classroom.hub import SHORT_POLLS
    from autograder.kernel import execute, shortpolls
    assert SHORT_POLLS == Path(shortpolls.__file__).resolve()
    source = SHORT_POLLS.read_text(encoding="utf-8")
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import: the copy stands alone"
            imported.add(node.module)
    assert imported == {"__future__", "time", "queue", "nbclient.util", "nbgrader.preprocessors"}, imported
    for word in ("autograder", "checks", "hidden", "source/", "grader_home", "GRADER", "COURSE_"):
        assert word not in source, word
    # the code lives once: the grader's runs use these very objects
    assert execute.Execute is shortpolls.Execute and execute.ShortPolls is shortpolls.ShortPolls
    assert execute.poll_in_short_steps is shortpolls.poll_in_short_steps


def test_a_users_server_validates_with_the_short_polling_execute_without_the_grader(tmp_path):
    """The Jupyter configuration every user's server on the hub reads (hub.user_config_files, students' and
    instructors'), loaded as nbgrader's Validate handler loads it, in a fresh interpreter outside the
    course's folder: Validate runs the short-polling Execute, from the copy beside the configuration, and
    nothing of the grader is imported or importable."""
    import json
    import os
    import subprocess
    import sys
    from autograder.classroom.hub import SHORT_POLLS, settings, user_config_files
    from hub import VALIDATE_PROBE
    conf = settings()
    for role, students in (("students", True), ("instructors", False)):
        folder = tmp_path / role
        for name, text in user_config_files(conf, students=students).items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
        assert (folder / "course_short_polls.py").read_text(encoding="utf-8") == SHORT_POLLS.read_text(
            encoding="utf-8")
        (tmp_path / "home").mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JUPYTER", "COURSE_", "GRADER"))}
        env.update(JUPYTER_CONFIG_PATH=str(folder), JUPYTER_CONFIG_DIR=str(tmp_path / "home" / ".jupyter"),
                   HOME=str(tmp_path / "home"))
        done = subprocess.run([sys.executable, "-c", VALIDATE_PROBE], cwd=tmp_path / "home", env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["preprocessors"][-1] == "course_short_polls.Execute", (role, seen)
        assert seen["short_polls"] == [True], (role, seen)
        assert seen["grader_imported"] == [] and seen["grader_found"] is False, (role, seen)


CONFIG_PROBE = """
import json, sys
if sys.argv[1:] == ["server"]:                  # as in a server: its Application, whose log the warning goes to
    from traitlets.config import Application
    Application.instance()
from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler
from nbgrader.validator import Validator
config = ValidateAssignmentHandler.load_config(None)
used = Validator(config=config).preprocessors
print(json.dumps({"preprocessors": [f"{p.__module__}.{p.__name__}" for p in used],
                  "exchange": config.Exchange.root, "course": config.CourseDirectory.course_id,
                  "auth": config.Authenticator.plugin_class}))
"""


def test_without_the_short_polls_copy_the_configuration_still_loads_with_nbgraders_execute(tmp_path):
    """A students' configuration whose course_short_polls.py is missing (not mounted, deleted): it still
    loads, in a fresh interpreter as the Validate handler loads it, with the exchange's settings applied;
    Validate falls back to nbgrader's own Execute, and a warning names the missing file and what to rerun."""
    import json
    import os
    import subprocess
    import sys
    from autograder.classroom.hub import SHORT_POLLS_MODULE, settings, user_config_files
    from autograder.course import COURSE_ID
    conf = settings()
    folder = tmp_path / "students"
    for name, text in user_config_files(conf, students=True).items():
        if name != f"{SHORT_POLLS_MODULE}.py":
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JUPYTER", "COURSE_", "GRADER"))}
    env.update(JUPYTER_CONFIG_PATH=str(folder), JUPYTER_CONFIG_DIR=str(tmp_path / "home" / ".jupyter"),
               HOME=str(tmp_path / "home"))
    missing = str(folder / f"{SHORT_POLLS_MODULE}.py")
    for server in (False, True):
        done = subprocess.run([sys.executable, "-c", CONFIG_PROBE, *(["server"] if server else [])],
                              cwd=tmp_path / "home", env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["exchange"] == conf["exchange"] and seen["course"] == COURSE_ID, seen
        assert seen["auth"] == "nbgrader.auth.JupyterHubAuthPlugin", seen
        assert "nbgrader.preprocessors.execute.Execute" in seen["preprocessors"], seen
        warned = done.stderr
        assert f"{missing} is missing" in warned and "`make hub`" in warned and "`make hub-values`" in warned, warned
        assert ("WARNING" in warned) is server, warned                 # through the server's log when there is one
