"""What a page shows of a submission (autograder/pages.py), without a browser: the cleaning of HTML
and of a notebook's outputs, the feedback's and the formgrader's exporters. Chromium proves the
same in the pages themselves (tests/browser/test_hostile_pages.py)."""
from __future__ import annotations

import base64
import re

import nbformat
import pytest

from autograder.pages import FeedbackExporter, SanitizeSubmission, clean, safe_attachments, safe_output

from hostile import HOSTILE_HTML, HOSTILE_MARKDOWN, LEGITIMATE_HTML, PNG_1PX, dangers  # noqa: E402


@pytest.mark.parametrize("vector", HOSTILE_HTML, ids=[f"v{i:02d}" for i in range(len(HOSTILE_HTML))])
def test_nothing_that_can_run_survives_cleaning(vector):
    assert dangers(vector), f"the checker itself misses {vector!r}"        # the check can fail
    out = clean(vector)
    assert not dangers(out), f"{vector!r} -> {out!r}"


@pytest.mark.parametrize("vector", HOSTILE_HTML + HOSTILE_MARKDOWN,
                         ids=[f"v{i:02d}" for i in range(len(HOSTILE_HTML) + len(HOSTILE_MARKDOWN))])
def test_nothing_that_can_run_survives_markdown_rendering(vector):
    from autograder.pages import markdown2html
    out = markdown2html({"cell": {}, "resources": {}}, f"Before\n\n{vector}\n\nafter")
    assert not dangers(out), f"{vector!r} -> {out!r}"
    assert "Before" in out and "after" in out


@pytest.mark.parametrize("html, kept", LEGITIMATE_HTML, ids=[k for _, k in LEGITIMATE_HTML])
def test_legitimate_html_keeps_what_it_shows(html, kept):
    assert kept in clean(html), clean(html)


def test_a_picture_keeps_its_data_url_and_nothing_else_does():
    png = f"data:image/png;base64,{PNG_1PX}"
    assert f'src="{png}"' in clean(f'<img src="{png}" alt="x">')
    assert "src" not in clean('<img src="data:text/html;base64,PHNjcmlwdD4=">')
    assert "src" not in clean('<img src="https://example.org/track.png">')     # nothing loads from a network
    assert "href" not in clean(f'<a href="{png}">x</a>')                        # a data: link is no link
    assert 'href="https://example.org/"' in clean('<a href="https://example.org/">x</a>')


def test_ids_cannot_stand_in_for_the_page_s_own():
    out = clean('<h2 id="statusmessage">x</h2><input id="coupling_expectation">')
    assert 'id="statusmessage"' not in out and "answer-statusmessage" in out and "<input" not in out


def test_outputs_keep_only_what_shows_safely():
    out = safe_output({"output_type": "display_data", "metadata": {
        "image/png": {"width": "1 onerror=alert(1)", "height": 20}, "text/html": {"isolated": True}},
        "data": {"image/png": PNG_1PX, "text/html": "<b>x</b><script>alert(1)</script>",
                 "application/javascript": "alert(1)", "application/vnd.jupyter.widget-view+json": {"a": 1},
                 "text/plain": "x"}})
    assert set(out["data"]) == {"image/png", "text/html", "text/plain"}
    assert out["metadata"] == {"image/png": {"height": 20}}
    assert "<script" not in out["data"]["text/html"] and "<b>x</b>" in out["data"]["text/html"]
    bad_png = safe_output({"output_type": "display_data", "metadata": {},
                           "data": {"image/png": 'x" onerror="alert(1)'}})
    assert bad_png is None
    only_js = safe_output({"output_type": "display_data", "metadata": {},
                           "data": {"application/javascript": "alert(1)"}})
    assert only_js is None


def test_attachments_keep_only_pictures():
    kept = safe_attachments({"a.png": {"image/png": PNG_1PX}, "b.html": {"text/html": "<script>x</script>"},
                             "c.png": {"image/png": "not base64 <script>"}})
    assert kept == {"a.png": {"image/png": PNG_1PX}}


def _notebook(markdown: str, outputs: list[dict]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_markdown_cell(markdown), nbformat.v4.new_code_cell("x = 1")]
    nb.cells[1].outputs = [nbformat.from_dict(o) for o in outputs]
    return nb


def _exporter(cls, **config):
    from traitlets.config import Config
    c = Config()
    c.HTMLExporter.preprocessors = [SanitizeSubmission]
    c.HTMLExporter.sanitize_html = True
    c.HTMLExporter.filters = {"markdown2html": "autograder.pages.markdown2html",
                              "clean_html": "autograder.pages.clean_html"}
    for key, value in config.items():
        setattr(c.HTMLExporter, key, value)
    return cls(config=c)


def test_an_exporter_configured_as_the_course_renders_no_script():
    """nbconvert's classic template (the formgrader's base) with the course's settings, on every
    hostile vector as a markdown cell and as an HTML/markdown/JavaScript output."""
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {"text/html": v, "text/plain": "x"}}
               for v in HOSTILE_HTML]
    outputs += [{"output_type": "display_data", "metadata": {}, "data": {"text/markdown": v}} for v in HOSTILE_HTML]
    outputs.append({"output_type": "display_data", "metadata": {}, "data": {"application/javascript": "alert(1)"}})
    outputs.append({"output_type": "display_data", "metadata": {"image/png": {"width": "1 onerror=alert(1)"}},
                    "data": {"image/png": PNG_1PX}})
    html, _ = _exporter(__import__("nbconvert").HTMLExporter, template_name="classic").from_notebook_node(
        _notebook("\n\n".join(HOSTILE_HTML) + "\n\n**bold** $x^2$ | a | b |", outputs))
    body = html[html.index("<body"):]
    found = [d for d in dangers(body) if d != "<body>"]
    scripts = re.findall(r"<script\b[^>]*>", body)
    assert all('type="text/x-mathjax-config"' in s for s in scripts), scripts      # nbconvert's own
    assert found == ["<script>"] * len(scripts), found
    assert "<strong>bold</strong>" in body and f"base64,{PNG_1PX}" in body


def test_feedback_exporter_is_the_feedback_s_alone():
    """The course's template is set on FeedbackExporter, never on HTMLExporter: the formgrader's
    exporter (an HTMLExporter built from nbgrader_config.py) keeps nbgrader's own."""
    from pathlib import Path

    from traitlets.config.loader import PyFileConfigLoader
    root = Path(__file__).resolve().parents[1]
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    assert "template_name" not in config.HTMLExporter
    assert config.FeedbackExporter.template_name == "course_feedback"
    assert config.GenerateFeedback.exporter_class == "autograder.pages.FeedbackExporter"
    assert issubclass(FeedbackExporter, __import__("nbconvert").HTMLExporter)


def test_png_constant_is_a_png():
    assert base64.b64decode(PNG_1PX).startswith(b"\x89PNG")


def test_grade_table_total_is_the_step_total_written_answers_included():
    """The table's required column counts written answers as the export does (out of the required
    maximum, 57 for Step 4, not the autograded points alone), and its total is totals' step total."""
    from autograder.report import table
    from autograder.totals import from_results
    from conftest import STEP4
    cells = [{"grade_id": "a", "score": 3.0, "max_score": 4.0, "kind": "auto"},
             {"grade_id": "w", "score": 1.5, "max_score": 2.0, "kind": "manual"},
             {"grade_id": "v", "score": None, "max_score": 3.0, "kind": "manual"}]
    results = [{"student": "ada", "notebook": "01-on-paper", "cells": cells}]
    totals = from_results(results, {"ada": {"penalties": {"01-on-paper": 0.5}}})
    row = table(results, STEP4, totals).splitlines()[2].split()
    assert row[1] == "4.5" and row[2] == "4.5/9", row                    # 3 + 1.5 of 4 + 2 + 3
    assert row[3] == "-0.5" and row[4] == "4.0" == f"{totals['ada']['step']['total']:.1f}", row
    assert " ".join(row[5:]) == "1 of 2 to grade", row
