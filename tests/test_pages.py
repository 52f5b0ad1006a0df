"""What a page shows of a submission (autograder/publish/pages.py), without a browser: the cleaning of HTML
and of a notebook's outputs, the feedback's and the formgrader's exporters. Chromium proves the
same in the pages themselves (tests/browser/test_hostile_pages.py)."""
from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat
import pytest

from autograder.publish.pages import FeedbackExporter, SanitizeSubmission, browser_url, clean, safe_attachments, safe_output

ROOT = Path(__file__).resolve().parents[1]

from hostile import (HOSTILE_HTML, HOSTILE_MARKDOWN, LEGITIMATE_HTML, OVERLAY_HTML, OVERLAY_MATH,  # noqa: E402
                     PNG_1PX, REQUEST_HOST, REQUEST_HTML, REQUEST_MARKDOWN, dangers, requests)


@pytest.mark.parametrize("vector", HOSTILE_HTML, ids=[f"v{i:02d}" for i in range(len(HOSTILE_HTML))])
def test_nothing_that_can_run_survives_cleaning(vector):
    assert dangers(vector), f"the checker itself misses {vector!r}"        # the check can fail
    out = clean(vector)
    assert not dangers(out), f"{vector!r} -> {out!r}"


@pytest.mark.parametrize("vector", HOSTILE_HTML + HOSTILE_MARKDOWN,
                         ids=[f"v{i:02d}" for i in range(len(HOSTILE_HTML) + len(HOSTILE_MARKDOWN))])
def test_nothing_that_can_run_survives_markdown_rendering(vector):
    from autograder.publish.pages import markdown2html
    out = markdown2html({"cell": {}, "resources": {}}, f"Before\n\n{vector}\n\nafter")
    assert not dangers(out), f"{vector!r} -> {out!r}"
    assert "Before" in out and "after" in out


@pytest.mark.parametrize("vector", REQUEST_HTML + OVERLAY_HTML,
                         ids=[f"r{i:02d}" for i in range(len(REQUEST_HTML + OVERLAY_HTML))])
def test_nothing_that_fetches_or_passes_for_the_page_survives_cleaning(vector):
    """No URL but a picture's own data and an anchor in the answer, read as a browser reads it; no
    style, no class of the page's, no id of the page's."""
    assert requests(vector), f"the checker itself misses {vector!r}"       # the check can fail
    out = clean(vector)
    assert not requests(out) and not dangers(out), f"{vector!r} -> {out!r}"
    assert REQUEST_HOST not in out or "<a" not in out, out


def _plain_markdown(source: str) -> str:
    """Markdown rendered as nbconvert renders it, without the course's cleaning."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
    return MarkdownWithMath(renderer=IPythonRenderer(escape=False, anchor_link_text="")).render(source)


@pytest.mark.parametrize("vector", REQUEST_MARKDOWN, ids=[f"m{i:02d}" for i in range(len(REQUEST_MARKDOWN))])
def test_markdown_s_own_pictures_and_links_lead_nowhere(vector):
    from autograder.publish.pages import markdown2html
    assert requests(_plain_markdown(vector)), f"the checker misses what {vector!r} renders to"
    out = markdown2html({"cell": {}, "resources": {}}, f"Before\n\n{vector}\n\nafter")
    assert not requests(out) and REQUEST_HOST not in re.sub(r">[^<]*<", "><", out), f"{vector!r} -> {out!r}"


@pytest.mark.parametrize("vector", OVERLAY_MATH, ids=["style", "class", "href"])
def test_a_formula_in_feedback_makes_no_style_class_or_link(vector):
    """The feedback's formulas are MathML (autograder/publish/mathml.py), then cleaned: MathJax's \\style,
    \\class, \\cssId and \\href are text or nothing, never an attribute."""
    from autograder.publish.mathml import markdown_math_to_mathml
    from autograder.publish.pages import markdown2html
    out = markdown2html({"cell": {}, "resources": {}}, markdown_math_to_mathml(vector))
    assert not requests(out) and "position" not in re.sub(r">[^<]*<", "><", out), out


def test_a_url_is_read_as_a_browser_reads_it():
    assert browser_url(" \x01ja\tva\nscript:x") == "javascript:x"
    assert browser_url("/\\host/x") == "//host/x" and browser_url("\\\\host/x") == "//host/x"
    assert browser_url("ht\r\ntp://h/") == "http://h/" and browser_url("#a b") == "#a b"
    for vector in ('<a href=" \t#sec">x</a>', '<a href="#sec">x</a>'):
        assert 'href="#answer-sec"' in clean(vector)
    for vector in ('<a href="/\\h/#sec">x</a>', '<a href="x#sec">x</a>', '<a href="?#sec">x</a>'):
        assert "href" not in clean(vector), clean(vector)


@pytest.mark.parametrize("html, kept", LEGITIMATE_HTML, ids=[k for _, k in LEGITIMATE_HTML])
def test_legitimate_html_keeps_what_it_shows(html, kept):
    assert kept in clean(html), clean(html)


def test_a_picture_keeps_its_data_url_and_nothing_else_does():
    png = f"data:image/png;base64,{PNG_1PX}"
    assert f'src="{png}"' in clean(f'<img src="{png}" alt="x">')
    assert "src" not in clean('<img src="data:text/html;base64,PHNjcmlwdD4=">')
    assert "src" not in clean('<img src="https://example.org/track.png">')     # nothing loads from a network
    assert "href" not in clean(f'<a href="{png}">x</a>')                        # a data: link is no link
    assert clean('<a href="https://example.org/">x</a>') == "<a>x</a>"            # a link to elsewhere is its words


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
    # fields a template reads as a file's address: an output's svg_filename, its metadata's filenames
    svg = safe_output({"output_type": "display_data", "svg_filename": f"http://{REQUEST_HOST}/x.svg",
                       "metadata": {"filenames": {"image/png": f"http://{REQUEST_HOST}/x.png"}},
                       "data": {"image/svg+xml": "<svg/>", "image/png": PNG_1PX}})
    assert svg == {"output_type": "display_data", "data": {"image/svg+xml": "<svg/>", "image/png": PNG_1PX},
                   "metadata": {}}


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
    c.HTMLExporter.filters = {"markdown2html": "autograder.publish.pages.markdown2html",
                              "clean_html": "autograder.publish.pages.clean_html"}
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
    """The course's feedback template is set on FeedbackExporter; the formgrader's exporter (an
    HTMLExporter built from nbgrader_config.py) gets nbgrader's `formgrade` with a CSP and clipped
    student content (course_formgrade), never the feedback's template."""
    from pathlib import Path

    from traitlets.config.loader import PyFileConfigLoader
    root = Path(__file__).resolve().parents[1]
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    assert config.HTMLExporter.template_name == "course_formgrade"
    assert config.FeedbackExporter.template_name == "course_feedback"
    assert config.GenerateFeedback.exporter_class == "autograder.publish.pages.FeedbackExporter"
    assert issubclass(FeedbackExporter, __import__("nbconvert").HTMLExporter)


def _formgrader_page(notebook) -> str:
    """The submission page as nbgrader's formgrader renders it: its exporter built from its own extra
    config (template `formgrade`) and then nbgrader_config.py, which nbgrader reads after it."""
    from pathlib import Path

    import nbgrader
    from nbconvert.exporters import HTMLExporter
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader
    root = Path(__file__).resolve().parents[1]
    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [str(Path(nbgrader.__file__).parent / "server_extensions"
                                                       / "formgrader" / "templates")]
    config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
    resources = {"assignment_id": "step-04", "notebook_id": "01-on-paper", "submission_id": "s1", "index": 0,
                 "total": 1, "base_url": "", "student": "mallory", "last_name": None, "first_name": None,
                 "notebook_path": "/x"}
    html, _ = HTMLExporter(config=config).from_notebook_node(notebook, resources=resources)
    return html


def _csp(html: str) -> dict[str, list[str]]:
    meta = re.search(r'<meta (?:content="([^"]*)" http-equiv="Content-Security-Policy"|'
                     r'http-equiv="Content-Security-Policy" content="([^"]*)")', html)
    assert meta, "no Content-Security-Policy"
    policy = (meta[1] or meta[2]).replace("&#39;", "'")
    return {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}


def test_every_page_that_shows_a_submission_allows_pictures_only_from_itself_and_data():
    """The formgrader's submission page (its CSP comes before any script or style sheet in its head)
    and the feedback page: pictures from the page itself and data: at most; nothing fetched or
    framed from elsewhere; no <base>; the student's content clipped in a layer of its own."""
    nb = _notebook("**an answer**", [])
    formgrader = _formgrader_page(nb)
    head = formgrader[:formgrader.index("</head>")]
    assert head.index("Content-Security-Policy") < min(head.index("<script"), head.index("<link"))
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    feedback, _ = FeedbackExporter(config=config).from_notebook_node(
        nb, resources={"nbgrader": {"notebook": "01-on-paper", "score": 1, "max_score": 2, "late_penalty": 0}})
    for name, page in (("formgrader", formgrader), ("feedback", feedback)):
        csp = _csp(page)
        assert set(csp["img-src"]) <= {"'self'", "data:"}, (name, csp)
        assert csp["base-uri"] == ["'none'"] and csp.get("object-src", csp["default-src"]) == ["'none'"] \
            or csp["default-src"] == ["'none'"], (name, csp)
        for directive in ("default-src", "connect-src", "font-src", "media-src", "frame-src"):
            assert set(csp.get(directive, csp["default-src"])) <= {"'self'", "data:", "'none'"}, (name, directive, csp)
        assert re.search(r"\.text_cell_render, \.output_subarea \{[^}]*contain: paint", page), name
        assert "<strong>an answer</strong>" in page, name


def test_png_constant_is_a_png():
    assert base64.b64decode(PNG_1PX).startswith(b"\x89PNG")


def test_grade_table_total_is_the_step_total_written_answers_included():
    """The table's required column counts written answers as the export does (out of the required
    maximum, 49 for Step 4, not the autograded points alone), and its total is totals' step total."""
    from autograder.records.model import NotebookResult
    from autograder.publish.report import table
    from autograder.records.totals import from_results
    from conftest import STEP4
    cells = [{"grade_id": "a", "score": 3.0, "max_score": 4.0, "kind": "auto"},
             {"grade_id": "w", "score": 1.5, "max_score": 2.0, "kind": "manual"},
             {"grade_id": "v", "score": None, "max_score": 3.0, "kind": "manual"}]
    results = [NotebookResult.from_json({"student": "ada", "notebook": "01-on-paper", "key": "k", "cells": cells})]
    totals = from_results(results, {"ada": {"penalties": {"01-on-paper": 0.5}}}, STEP4)
    row = table(results, STEP4, totals).splitlines()[2].split()
    assert row[1] == "4.5" and row[2] == "4.5/9", row                    # 3 + 1.5 of 4 + 2 + 3
    assert row[3] == "-0.5" and row[4] == "4.0" == f"{totals['ada']['step']['total']:.1f}", row
    assert " ".join(row[5:]) == "1 of 2 to grade", row
