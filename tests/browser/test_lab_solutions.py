"""The solutions in JupyterLab: Run All without a single error, and the sliders redraw their pictures.

Every solution notebook (solutions/step-04/*.ipynb and the catch-up solutions/step-03.ipynb) is run
as a student runs it. A notebook that calls a slider builder from dlcourse.widgets (`seed_slider(`,
`bandwidth_slider(`, ...) must show that slider, with the CSS class named after the builder
("seed-slider", ...); each slider is moved as a student moves it (click the readout, select all,
type, Enter), and the picture must change and the readout must say what was typed. The time from
Enter to the new picture is reported (see the "measurements" section of pytest's summary).
"""
from __future__ import annotations

import re

import pytest

from conftest import ROOT, STEP, STEP4
from .lab import Lab, copy_course, dialogs, open_notebook, run_all, screenshot, scroll_to

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("browser-solutions")]

SOLUTIONS = sorted((ROOT / "solutions" / STEP).glob("*.ipynb")) + [STEP4.root / "solutions" / f"{STEP4.catch_up}.ipynb"]
BUILDER = re.compile(r"\b(\w+)_slider\(")


def slider_classes(path) -> list[str]:
    """The CSS classes of the sliders a notebook builds: `seed_slider(` gives "seed-slider"."""
    import json
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
        for name in BUILDER.findall(source):
            if not source.lstrip().startswith("def ") and f"{name}-slider".replace("_", "-") not in found:
                found.append(f"{name}-slider".replace("_", "-"))
    return found


WITH_SLIDERS = [p for p in SOLUTIONS if slider_classes(p)]
LATENCIES = ROOT / "artifacts" / "slider-latency.json"     # read by `make bench` (benchmarks/student.py)


def record_latencies(name: str, latencies: list[float]) -> None:
    """Add this slider's latencies (ms) to artifacts/slider-latency.json, under today's date."""
    import fcntl
    import json
    from datetime import datetime, timezone
    LATENCIES.parent.mkdir(parents=True, exist_ok=True)
    with open(LATENCIES.with_suffix(".lock"), "w") as lock:      # xdist workers may write at once
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(LATENCIES.read_text()) if LATENCIES.exists() else {}
        data["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        data.setdefault("sliders", {})[name] = latencies
        LATENCIES.write_text(json.dumps(data, indent=1))


def relpath(path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def lab(chromium_path, tmp_path_factory):
    course = copy_course(tmp_path_factory.mktemp("course"))
    with Lab(course, tmp_path_factory.mktemp("jupyter")) as server:
        yield server


# Each slider test runs right after the Run All of its notebook (tests/browser/conftest.py reorders them),
# in the module's one tab, while that notebook is still the one open.
RIGHT_AFTER = {"test_sliders_redraw_the_picture": "test_run_all_on_a_solution_shows_no_error"}


@pytest.fixture(scope="module")
def ran(lab, module_tab):
    """Open and Run All a notebook in the module's one tab (conftest.module_tab), in the JupyterLab it
    loaded once, as a student goes from one notebook to the next; the notebook last run stays open, so
    its slider test (run right after it) reads the page the Run All left. A slider test run alone opens
    and runs its notebook itself. (A tab of its own for each notebook with sliders loaded JupyterLab
    again, about 4.6 s of Chromium's CPU each.)"""
    last = {}

    def run(path):
        if path not in last:
            last.clear()
            open_notebook(module_tab, lab, relpath(path))
            last[path] = (module_tab, run_all(module_tab))
        return last[path]

    return run


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_run_all_on_a_solution_shows_no_error(ran, path):
    page, shown = ran(path)
    problems = []
    for cell in shown:
        if cell.kind != "code" or not cell.source.strip():
            continue
        if not cell.ran:
            problems.append(f"cell {cell.index} never ran")
        for name, text in cell.errors():
            problems.append(f"cell {cell.index} shows {name}: {text.strip().splitlines()[-1][:200]}")
        for text in cell.stderr():
            if "Warning" not in text:
                problems.append(f"cell {cell.index} writes to stderr: {text.strip()[:200]}")
    pictures = [c.index for c in shown if any(o["images"] for o in c.outputs)]
    with_output = [c.index for c in shown if c.outputs]
    scroll_to(page, pictures[0] if pictures else with_output[-1] if with_output else 0)
    screenshot(page, f"solution-{path.stem}")
    assert not problems, f"{relpath(path)}:\n  " + "\n  ".join(problems)
    assert "Error displaying widget" not in page.content(), f"{relpath(path)}: a widget cannot be displayed"
    assert not any("Select Kernel" in d for d in dialogs(page))


# ---- sliders -----------------------------------------------------------------------------------

_WATCH = """(interact, before) => {
  window.__slider = {enter: null, changed: null};
  const done = () => {
    const img = interact.querySelector('img');
    if (img && img.getAttribute('src') !== before && window.__slider.changed === null) {
      window.__slider.changed = performance.now();
      observer.disconnect();
    }
  };
  const observer = new MutationObserver(done);
  observer.observe(interact, {subtree: true, childList: true, attributes: true, attributeFilter: ['src']});
  document.addEventListener('keydown', e => {
    if (e.key === 'Enter' && window.__slider.enter === null) window.__slider.enter = performance.now();
  }, {capture: true, once: true});
}"""


def number(text: str) -> float:
    return float(text.strip().replace("\u2212", "-"))


def move(page, slider, value: str) -> float:
    """Type `value` into the slider's readout and press Enter, as a student does; wait for the new
    picture; return the milliseconds from Enter to the new picture."""
    interact = slider.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' widget-interact ')][1]")
    picture = interact.locator("img").first
    before = picture.get_attribute("src")
    readout = slider.locator(".widget-readout")
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(value)
    interact.evaluate(_WATCH, before)
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.__slider && window.__slider.changed !== null", timeout=60_000)
    timing = page.evaluate("() => window.__slider")
    after = picture.get_attribute("src")
    assert after and after != before, "the picture did not change"
    assert number(readout.text_content()) == pytest.approx(number(value)), \
        f"typed {value}, the readout says {readout.text_content()!r}"
    return timing["changed"] - timing["enter"]


@pytest.mark.parametrize("path", WITH_SLIDERS, ids=lambda p: p.stem)
def test_sliders_redraw_the_picture(ran, path, record_property):
    page, _ = ran(path)
    for css in slider_classes(path):
        slider = page.locator(f".{css}")
        assert slider.count() == 1, f"{relpath(path)} builds a {css.replace('-', '_')[:-7]} slider, " \
                                    f"but the page shows {slider.count()} elements with class {css!r}"
        slider.scroll_into_view_if_needed()
        interact = slider.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' widget-interact ')][1]")
        assert interact.locator("img").count() >= 1, f"{css}: no picture next to the slider"
        start = number(slider.locator(".widget-readout").text_content())
        screenshot(page, f"slider-{path.stem}-{css}-before")
        before_png = interact.screenshot()
        latencies = []
        for value in [v for v in ("10", "1") if number(v) != start]:
            latencies.append(move(page, slider, value))
        slider.scroll_into_view_if_needed()
        screenshot(page, f"slider-{path.stem}-{css}-after")
        assert interact.screenshot() != before_png, f"{css}: the picture on screen did not change"
        record_property("measured", f"slider latency {path.stem} {css}: "
                        + ", ".join(f"{ms:.0f} ms" for ms in latencies) + " (Enter to new picture)")
        print(f"{path.stem} {css}: Enter to new picture " + ", ".join(f"{ms:.0f} ms" for ms in latencies))
        record_latencies(f"{path.stem} {css}", latencies)
