"""The everyday commands grade nothing, so they import neither torch nor a step's checks (which
import torch): `make steps/fetch/submit/collect/extensions/export` each run as a user runs them, in
a throwaway course, and what each process imported is read back (sys.modules at its exit). Their
speed is measured by `make bench` (benchmarks/commands.py, BENCHMARKS.md section 5), not here."""
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow       # a dozen commands, each a process (and nbgrader's)

sys.path.insert(0, str(ROOT / "benchmarks"))
import commands  # noqa: E402


def test_everyday_commands_import_no_torch_and_no_checks(tmp_path):
    env = commands.make_course(tmp_path)
    ran = commands.run_all(env)
    assert list(ran) == ["steps", "fetch", "submit", "collect", "extensions", "export"]
    for command, got in ran.items():
        assert got["code"] == 0, (command, got["output"])
        assert got["imports"] == {**got["imports"], "torch": False, "checks": False}, (command, got["imports"])
    # the ones that only read the term or the steps do not even import nbgrader (the exchange
    # commands run nbgrader in a process of its own)
    for command in ("steps", "fetch", "submit", "collect", "extensions"):
        assert ran[command]["imports"]["nbgrader"] is False, command
    assert "hidden tests" in ran["steps"]["output"] and "handed in" in ran["submit"]["output"]
    assert "1 new submissions" in ran["collect"]["output"], ran["collect"]["output"]


def test_the_wrapper_sees_an_import_of_torch(tmp_path):
    """The check above could fail: `make solutions`-like work that imports the checks is seen."""
    env = commands.make_course(tmp_path)
    got = commands.run_command("new-check", env)     # argparse refuses it before any import: code 2
    assert got["code"] == 2 and got["imports"]["torch"] is False
    seen = tmp_path / "seen.json"
    import json
    import subprocess
    proc = subprocess.run([sys.executable, "-c", commands.WRAPPER.replace("runpy.run_module('autograder', "
                           "run_name='__main__', alter_sys=True)", "import torch"), "x"],
                          env={**env, "COMMAND_IMPORTS": str(seen)}, cwd=ROOT)
    assert proc.returncode == 0 and json.loads(seen.read_text())["torch"] is True
