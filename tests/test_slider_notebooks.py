"""The sliders in the notebooks, without a browser (dlcourse/widgets.py itself: tests/test_widgets.py).

For every solution notebook that builds a slider (`seed_slider(handout_attention, ...)`,
`bandwidth_slider(smoothing_attention, ...)`):
  * a static picture of a few settings sits right next to the slider, so a notebook read without a
    kernel (an exported notebook, the feedback HTML, GitHub's viewer) still shows what the slider
    explores;
  * run in a kernel, each slider's `interactive` draws, for the value it is moved to, exactly what
    the notebook's own function returns for that value; different values give different pictures,
    and going back to a value gives the same picture again (everything is seeded).
"""
from __future__ import annotations

import json
import re

import nbformat
import pytest

from conftest import ROOT, STEP, execute

SOLUTIONS = sorted((ROOT / "solutions" / STEP).glob("*.ipynb"))
CALL = re.compile(r"\b(\w+_slider)\(\s*(\w+)")


def slider_calls(nb) -> list[tuple[int, str, str]]:
    """(cell index, builder, the notebook function it is given) for every slider a notebook builds."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and not cell.source.lstrip().startswith(("def ", "from ", "import ")):
            found += [(index, builder, fn) for builder, fn in CALL.findall(cell.source)]
    return found


WITH_SLIDERS = [p for p in SOLUTIONS if slider_calls(nbformat.read(p, as_version=4))]

# How to read, from the Figure a slider shows, the matrix its function returns for one value.
# A builder the notebooks use must be listed here (test_every_slider_builder_is_checked).
MATRIX_OF = {
    "seed_slider": ("fig.axes[0].images[0].get_array()", "_sharpen({fn}(value), _w.kwargs['beta'])"),
    "bandwidth_slider": ("fig.axes[1].images[0].get_array()", "{fn}(shown.shape[-1], value)"),
}


def images(cell) -> int:
    return sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def test_every_slider_builder_is_checked():
    builders = {b for p in WITH_SLIDERS for _, b, _ in slider_calls(nbformat.read(p, as_version=4))}
    assert builders <= set(MATRIX_OF), f"sliders without a check here: {sorted(builders - set(MATRIX_OF))}"


@pytest.mark.parametrize("path", WITH_SLIDERS, ids=lambda p: p.stem)
def test_a_static_picture_sits_next_to_every_slider(path):
    nb = nbformat.read(path, as_version=4)
    for index, builder, _ in slider_calls(nb):
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        at = code.index(index)
        neighbours = [code[j] for j in (at - 1, at + 1) if 0 <= j < len(code)] + [index]
        assert any(images(nb.cells[i]) for i in neighbours), (
            f"{path.name}: the {builder} in cell {index} has no static picture next to it "
            "(the code cell just before or after it should draw a few settings), so an exported "
            "notebook or the feedback shows nothing there")


PROBE = r'''
import json as _json, numpy as _np
from ipywidgets import interactive as _interactive
from ipywidgets.widgets.widget import _instances as _widgets
from matplotlib.figure import Figure as _Figure
from dlcourse.plots import sharpen as _sharpen

def _grid(slider, k):
    """The k-th value on the slider's grid from its minimum (a value the slider can hold)."""
    if hasattr(slider, "base"):
        return float(slider.base ** (slider.min + k * slider.step))
    return type(slider.value)(slider.min + k * slider.step)

def _drawn(fig):
    out = []
    for ax in fig.axes:
        out += [_np.ma.filled(im.get_array().astype(float), _np.nan).tolist() for im in ax.images]
        out += [_np.asarray(line.get_ydata(), dtype=float).tolist() for line in ax.lines]
    return out

_report = []
for _w in [w for w in list(_widgets.values()) if isinstance(w, _interactive)]:
    _slider = _w.children[0]
    _classes = list(_slider._dom_classes)
    _entry = {"classes": _classes, "states": []}
    for _value in (_grid(_slider, 3), _grid(_slider, 11), _grid(_slider, 3)):
        _slider.value = _value
        _fig = _w.result
        _state = {"value": float(_slider.value), "figure": isinstance(_fig, _Figure)}
        if isinstance(_fig, _Figure):
            _state["drawn"] = _drawn(_fig)
            fig, value = _fig, _slider.value
            try:
                shown = eval(_MATRIX_OF[_classes[0]][0])
                expected = _np.asarray(eval(_MATRIX_OF[_classes[0]][1].format(fn=_FUNCTIONS[_classes[0]])),
                                       dtype=float)
                below = ~_np.ma.getmaskarray(shown)
                _state["max_error"] = float(_np.max(_np.abs(_np.asarray(shown, dtype=float)[below] - expected[below])))
                _state["masked_is_upper"] = bool((_np.ma.getmaskarray(shown) == ~_np.tril(_np.ones(expected.shape, bool))).all())
            except Exception as _err:
                _state["error"] = f"{type(_err).__name__}: {_err}"
        _entry["states"].append(_state)
    _report.append(_entry)
print("SLIDERS" + _json.dumps(_report))
'''


@pytest.mark.slow
@pytest.mark.parametrize("path", WITH_SLIDERS, ids=lambda p: p.stem)
def test_each_slider_draws_what_its_function_returns(path):
    nb = nbformat.read(path, as_version=4)
    calls = slider_calls(nb)
    functions = {builder.replace("_", "-"): fn for _, builder, fn in calls}
    matrix_of = {builder.replace("_", "-"): MATRIX_OF[builder] for _, builder, _ in calls}
    setup = f"_FUNCTIONS = {functions!r}\n_MATRIX_OF = {matrix_of!r}\n"
    nb.cells.append(nbformat.v4.new_code_cell(setup + PROBE))
    execute(nb, path.parent)
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("output_type") == "stream")
    errors = [o for o in nb.cells[-1].outputs if o.get("output_type") == "error"]
    assert not errors, f"the probe failed: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    report = json.loads(text.split("SLIDERS", 1)[1])
    assert sorted(e["classes"][0] for e in report) == sorted(functions), \
        f"{path.name}: the kernel holds sliders {[e['classes'] for e in report]}, the notebook builds {sorted(functions)}"
    for entry in report:
        css = entry["classes"][0]
        first, other, again = entry["states"]
        for state in entry["states"]:
            assert state["figure"], f"{css}: the slider's result at {state['value']} is not a matplotlib Figure"
            assert "error" not in state, f"{css} at {state['value']}: {state['error']}"
            # the slider shows float64/float32 data of the function: equal to float32 rounding
            assert state["max_error"] < 1e-6, \
                f"{css} at {state['value']}: the picture differs from {functions[css]}() by {state['max_error']:.2g}"
            assert state["masked_is_upper"], f"{css} at {state['value']}: the grey mask is not exactly j > i"
        assert first["drawn"] != other["drawn"], f"{css}: {first['value']} and {other['value']} draw the same picture"
        assert first["drawn"] == again["drawn"], f"{css}: going back to {first['value']} draws another picture"
