"""The suite's markers say what each module needs, so that `pytest -m "not browser"` (or not sandbox,
not services, not slow) leaves out exactly the tests that need it; and the CI allow-list of skips
says why each entry may skip."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ALLOWED_SKIPS, MODULE_MARKS, ROOT

TESTS = ROOT / "tests"
# what in a module's source says it needs a marker's component
NEEDS = {
    "sandbox": re.compile(r"bwrap_or_skip\(|kernels_or_skip\(|def \w+\([^)]*\bexample_class\b|usefixtures\(\"bwrap\"\)|from test_redteam import"),
    "services": re.compile(r"PostgresServer|SlurmCluster"),
    "browser": re.compile(r"chromium_path\(|\bchromium\b.*fixture|sync_playwright"),
    "hub": re.compile(r"hub_or_skip\(|\bhub_session\b"),
}


# test_browser_setup runs the browser tests with no Chromium, on purpose: it needs none
NEEDS_NOTHING = {"test_markers", "test_browser_setup"}


def modules() -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(TESTS.rglob("test_*.py"))}


def test_every_module_that_needs_a_component_carries_its_marker():
    found = modules()
    assert len(found) > 50
    missing = {}
    for marker, needs in NEEDS.items():
        for name, text in found.items():
            marked_here = marker in re.findall(r"pytest\.mark\.(\w+)", "\n".join(
                line for line in text.splitlines() if line.startswith("pytestmark")))
            if needs.search(text) and name not in MODULE_MARKS[marker] and not marked_here and name not in NEEDS_NOTHING:
                missing.setdefault(marker, []).append(name)
    assert not any(missing.values()), f"add to tests/conftest.py MODULE_MARKS: {missing}"
    for marker, names in MODULE_MARKS.items():
        assert set(names) <= set(found), f"MODULE_MARKS[{marker!r}] names no module: {set(names) - set(found)}"


COMPONENTS = ("browser", "sandbox", "services", "hub")


def inner_env() -> dict:
    """The environment of a pytest run inside this one: not this run's options (a --basetemp of
    PYTEST_ADDOPTS would be the inner run's too, and it empties that folder as it starts: the outer run's
    files under it, open in other workers' tests, would go)."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}


def kept_without_components(session) -> set[str]:
    """The files of the tests `-m "not browser and not sandbox and not services and not hub"` keeps: read
    from this session's own collection where it holds the whole suite (`make test`: every worker collects
    every test, with the markers tests/conftest.py adds, which is what `-m` matches), else from a
    collection of the whole suite in a process of its own (this module run alone, or a run deselecting)."""
    files = {str(p.relative_to(ROOT)) for p in TESTS.rglob("test_*.py")}
    if {item.nodeid.split("::")[0] for item in session.items} == files:
        return {item.nodeid.split("::")[0] for item in session.items
                if not {m.name for m in item.iter_markers()} & set(COMPONENTS)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
                           "--collect-only", "-q", "-m", " and ".join(f"not {c}" for c in COMPONENTS), "tests"],
                          cwd=ROOT, env=inner_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {line.split("::")[0] for line in proc.stdout.splitlines() if "::" in line}


@pytest.mark.slow            # the whole suite collected (this session's collection, or one of its own)
def test_the_markers_are_declared_and_deselect_what_they_mark(request):
    declared = {line.split(":")[0].strip() for line in request.config.getini("markers")}
    assert set(COMPONENTS) | {"slow"} <= declared, declared
    kept = kept_without_components(request.session)
    assert kept
    for marker, names in MODULE_MARKS.items():
        leaked = [n for n in names if any(Path(k).stem == n for k in kept)]
        assert not leaked, f"-m 'not {marker}' still collects {leaked}"
    assert not [k for k in kept if k.startswith("tests/browser/")], "a browser module is not marked browser"
    assert "tests/test_markers.py" in kept and "tests/test_data.py" in kept


def test_each_allowed_skip_says_why():
    assert all(start.startswith("tests/") and re.compile(pattern) and len(why) > 20
               for start, pattern, why in ALLOWED_SKIPS)


def test_under_ci_a_skip_not_allowed_is_a_failure_and_an_allowed_one_stays_a_skip():
    from conftest import allowed_skip
    assert allowed_skip("tests/test_warm_kernels.py::test_x", "Skipped: no fork or pidfd here")
    assert not allowed_skip("tests/test_sandbox.py::test_x", "Skipped: no fork or pidfd here")
    env = {k: v for k, v in inner_env().items() if not k.startswith(("REQUIRE_", "PYTEST_XDIST"))}
    run = lambda **more: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "-q", "-rs",
         "tests/test_sandbox.py", "-k", "the_sandbox_is_here_when_required"],
        cwd=ROOT, env={**env, **more}, capture_output=True, text=True, timeout=300)
    outside = run(CI="")
    assert outside.returncode == 0 and "1 skipped" in outside.stdout, outside.stdout[-2000:]
    under = run(CI="true")
    assert under.returncode == 1 and "1 failed" in under.stdout, under.stdout[-2000:]
    assert "CI=true: this test skipped" in under.stdout and "REQUIRE_SANDBOX is not set" in under.stdout


def test_a_warm_test_skips_or_fails_where_warm_kernels_cannot_be_had_and_never_runs_cold(monkeypatch):
    import autograder.kernel.warm
    import conftest
    monkeypatch.setattr(conftest, "uses", lambda component: None)      # this test uses no kernel
    monkeypatch.setattr(autograder.kernel.warm, "why_cold", lambda sandbox: "no root here")
    monkeypatch.delenv("REQUIRE_WARM", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no root here"):
        conftest.kernels_or_skip("bwrap", "warm")
    monkeypatch.setenv("REQUIRE_WARM", "1")
    with pytest.raises(pytest.fail.Exception, match="REQUIRE_WARM=1.*no root here"):
        conftest.kernels_or_skip("bwrap", "warm")
    assert conftest.kernels_or_skip("bwrap", "cold") == "cold"
    monkeypatch.setattr(autograder.kernel.warm, "why_cold", lambda sandbox: "")
    assert conftest.kernels_or_skip("bwrap", "warm") == "warm"


def test_the_map_of_what_the_suite_proves_is_current():
    """tests/README.md lists every test module with its docstring's first sentence (tests/proven.py)."""
    import proven
    assert proven.readme_map() == proven.table(), "tests/README.md is out of date: run `python tests/proven.py --readme`"
    assert len(proven.proven()) == len(list(proven.TESTS.rglob("test_*.py"))) > 80
