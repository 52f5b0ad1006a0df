"""Without Chromium the browser tests skip and say why; with REQUIRE_BROWSER=1 (CI) they fail."""
import os
import subprocess
import sys

from conftest import ROOT


def run_browser_test(**env):
    environment = {**os.environ, "CHROMIUM": "/nonexistent/chromium", **env}
    environment.pop("PYTEST_XDIST_WORKER", None)
    environment.pop("PYTEST_ADDOPTS", None)    # this run's options (a --basetemp) are not the inner run's
    environment.pop("CI", None)         # under CI=true the conftest turns the skips checked here into failures
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rsE",
         "tests/browser/test_lab_validate.py"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300)


def test_without_chromium_the_browser_tests_skip_with_the_reason():
    proc = run_browser_test(REQUIRE_BROWSER="")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "skipped" in proc.stdout and "Chromium is not installed" in proc.stdout, proc.stdout[-3000:]
    assert "passed" not in proc.stdout


def test_with_require_browser_a_missing_chromium_is_a_failure():
    proc = run_browser_test(REQUIRE_BROWSER="1")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "REQUIRE_BROWSER=1, but Chromium is not installed" in proc.stdout, proc.stdout[-3000:]
    assert "skipped" not in proc.stdout.splitlines()[-1]
