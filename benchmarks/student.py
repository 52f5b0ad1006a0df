"""The student's side: how long each notebook takes to run top to bottom, and each slider's update.

Notebooks run with the course's executor (autograder.authoring.build.run_notebook: nbclient with the
slider-hang fix), in a fresh kernel each time, from their own folder: the release (answers
missing, errors allowed: this is what "Run All" costs a student who has not started) and the
solutions (every answer in; must stay under 10 s).
Sliders: in the kernel of each solution notebook that builds one, every slider is moved to
MOVES values; timed are the notebook's function alone (what the slider recomputes) and the whole
update the slider does (function, redraw of the figure, PNG frame).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import nbformat

from common import BENCH_STEP as STEP, ROOT

CALL = re.compile(r"\b(\w+_slider)\(\s*(\w+)")  # as tests/test_slider_notebooks.py finds sliders
MOVES = 8

PROBE = r"""
import json as _json, time as _time
from ipywidgets import interactive as _interactive
from ipywidgets.widgets.widget import _instances as _widgets

def _grid(slider, k):
    if hasattr(slider, "base"):
        return float(slider.base ** (slider.min + k * slider.step))
    return type(slider.value)(slider.min + k * slider.step)

_report = {}
for _w in [w for w in list(_widgets.values()) if isinstance(w, _interactive)]:
    _slider = _w.children[0]
    _css = list(_slider._dom_classes)[0]
    _fn = globals()[_FUNCTIONS[_css]]
    _alone, _update = [], []
    for _k in range(1, 1 + _MOVES):
        _value = _grid(_slider, 3 * _k)
        _t = _time.perf_counter()
        _slider.value = _value
        _update.append(_time.perf_counter() - _t)
        _t = _time.perf_counter()
        if _css == "seed-slider":
            _fn(_slider.value)
        else:
            _fn(_w.result.axes[1].images[0].get_array().shape[-1], _slider.value)
        _alone.append(_time.perf_counter() - _t)
    _report[_css] = {"function": _alone, "update": _update}
print("SLIDERS" + _json.dumps(_report))
"""


def _run(path: Path, allow_errors: bool, extra: str | None = None) -> tuple[float, object]:
    from autograder.authoring.build import run_notebook

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    if extra:
        nb.cells.append(nbformat.v4.new_code_cell(extra))
    t = time.monotonic()
    run_notebook(nb, path.parent, timeout=600, allow_errors=allow_errors)
    return time.monotonic() - t, nb


def slider_functions(nb) -> dict[str, str]:
    """css class of each slider -> the notebook function it redraws."""
    found = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and not cell.source.lstrip().startswith(("def ", "from ", "import ")):
            for builder, fn in CALL.findall(cell.source):
                found[builder.replace("_", "-")] = fn
    return found


def measure(repeats: int, say=print, names: list[str] | None = None, moves: int = MOVES) -> dict:
    """Each notebook (or those of `names`), release and solutions, `repeats` times; each slider of a
    solution notebook moved `moves` times."""
    out = {"release": {}, "solutions": {}, "sliders": {}}
    paths = {
        "release": sorted((ROOT / "release" / STEP).glob("*.ipynb")),
        "solutions": sorted((ROOT / "solutions" / STEP).glob("*.ipynb")),
    }
    if names:
        paths = {kind: [p for p in found if p.stem in names] for kind, found in paths.items()}
    for r in range(repeats):
        for kind, allow in (("release", True), ("solutions", False)):
            for path in paths[kind]:
                say(f"  student side: {kind}/{path.stem}, run {r + 1} of {repeats}")
                functions = slider_functions(nbformat.read(path, as_version=4)) if kind == "solutions" else {}
                extra = (f"_FUNCTIONS = {functions!r}\n_MOVES = {moves}\n" + PROBE) if functions else None
                seconds, nb = _run(path, allow, extra)
                out[kind].setdefault(path.stem, []).append(seconds)
                if extra:
                    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("output_type") == "stream")
                    if "SLIDERS" not in text:
                        raise RuntimeError(f"{path.name}: the slider probe printed nothing")
                    for css, times in json.loads(text.split("SLIDERS", 1)[1]).items():
                        entry = out["sliders"].setdefault(f"{path.stem} {css}", {"function": [], "update": []})
                        entry["function"] += times["function"]
                        entry["update"] += times["update"]
    return out


def browser_latencies() -> dict | None:
    """The slider latencies the browser suite recorded (artifacts/slider-latency.json), if any."""
    path = ROOT / "artifacts" / "slider-latency.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())
