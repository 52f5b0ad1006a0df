"""The pages people open that show a submission: the student's feedback page, the formgrader's
view of a submission (nbgrader's `formgrade` template on the Jupyter server's own origin, where a
script would act with the instructor's session) and the written-answer PDFs. Nothing a student
writes or prints may run there, and everything legitimate (markdown, formulas, pictures pasted
into an answer, matplotlib pictures, tables) must still show.

Three layers, all configured in nbgrader_config.py for every HTML export from a submission (the
formgrader's exporter and the feedback's alike):

* `SanitizeSubmission`, a preprocessor that runs first: a code cell's outputs keep only the kinds
  a page can show safely (text, HTML and markdown, which are cleaned; PNG/JPEG/GIF/SVG pictures
  whose data is plain base64; LaTeX as text), with numeric sizes only (nbconvert writes an image's
  width unquoted: `width=1 onerror=...` would become an attribute); JavaScript, widget state and
  unknown kinds are dropped; a pasted picture keeps only image data;
* the template filters `markdown2html` and `clean_html` replaced by versions whose HTML passes
  through `clean` (nh3, the Rust sanitiser ammonia: an allow-list of tags, attributes and URL
  schemes; MathML allowed; `id`s prefixed so they cannot stand in for the page's own), with
  `HTMLExporter.sanitize_html` on so nbconvert's own blocks for HTML, markdown and JavaScript
  outputs use them;
* the feedback page (autograder/templates/course_feedback) carries a Content-Security-Policy that
  allows no script at all: it needs none.

`clean` is also what `make pdfs` runs over each answer. `FeedbackExporter` is the exporter of the
feedback pages alone (`GenerateFeedback.exporter_class`): its template is the course's, while the
formgrader keeps nbgrader's own.
"""

from __future__ import annotations

import base64
import binascii
import re

import jinja2
from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor

from .mathml import MATHML_ATTRIBUTES, MATHML_TAGS


# No `style` and no class of the student's: the page's own classes (Bootstrap's navbar-fixed-top,
# modal, btn...) would lay a student's markup over the page as if it were the page's. The only
# classes kept are the ones the markdown renderer itself writes for a code block's colours
# (pygments' token classes, `highlight`) and a heading's anchor, on the tags it writes them on:
# they colour text and position nothing (tests/browser/test_hostile_pages.py looks at every
# element of a student's content in the pages).
def _code_classes() -> frozenset[str]:
    from pygments.token import STANDARD_TYPES

    return frozenset(c for c in STANDARD_TYPES.values() if c)


RENDERER_CLASSES = {"span": None, "div": {"highlight"}, "a": {"anchor-link"}}  # None: pygments' token classes
# A student's content shows no URL at all but a picture's own data (`data:image/...;base64`) and a
# link to a heading in the same answer (`#...`): nothing a page shows fetches from or leads to an
# address the student chose (who opened the page, and when, is nobody else's business).
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
DATA_IMAGE = re.compile(r"data:(image/(?:png|jpeg|gif|webp|svg\+xml));base64,[A-Za-z0-9+/=\s]*\Z", re.I)
URL_ATTRIBUTES = {
    "href",
    "src",
    "cite",
    "longdesc",
    "background",
    "poster",
    "action",
    "formaction",
    "data",
    "srcset",
    "ping",
    "xlink:href",
    "codebase",
    "usemap",
    "manifest",
    "lowsrc",
    "dynsrc",
}
ID_PREFIX = "answer-"
URL_SCHEMES = {"data"}  # ammonia's own scheme check; the attribute filter below decides


def browser_url(value: str) -> str:
    """`value` as a browser's URL parser reads it before it looks at the scheme (WHATWG URL
    standard, "basic URL parser"): leading and trailing C0 controls and spaces removed, every ASCII
    tab and newline removed wherever it is (`ja\\tva\\nscript:` is `javascript:`), and a backslash
    read as a slash (`/\\host/x` and `\\\\host/x` are `//host/x`, another host, in http(s) pages)."""
    value = value.strip("".join(map(chr, range(0x21))))
    value = re.sub(r"[\t\n\r]", "", value)
    return value.replace("\\", "/")


# What a student's HTML may hold: ammonia's default tags (text, lists, tables, images, links...)
# and MathML (the feedback's formulas: mathml.py's MATHML_TAGS and MATHML_ATTRIBUTES), never script,
# style, iframe, object, form, meta, svg.
def _tags() -> set[str]:
    import nh3

    return (set(nh3.ALLOWED_TAGS) | MATHML_TAGS) - {"area", "map"}


def _attributes() -> dict[str, set[str]]:
    import nh3

    allowed = {tag: set(attrs) - URL_ATTRIBUTES for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()}
    allowed["*"] = {"id", "title", "lang", "dir", "align"}
    for tag in MATHML_TAGS:
        allowed[tag] = allowed.get(tag, set()) | MATHML_ATTRIBUTES
    allowed["img"] = {"src", "alt", "width", "height", "title"}
    allowed["a"] = {"href", "title", "class"}
    allowed["span"] = {"class"}
    allowed["div"] = allowed.get("div", set()) | {"class"}
    return allowed


def _keep_attribute(tag: str, name: str, value: str) -> str | None:
    """What survives of an attribute: a link only to a heading of the answer itself, a picture only
    from its own data, sizes only as numbers, a class only as the markdown renderer writes it."""
    if name == "href":
        url = browser_url(value)
        return "#" + ID_PREFIX + url[1:] if tag == "a" and url.startswith("#") else None
    if name == "src":
        url = browser_url(value)
        return url if tag == "img" and DATA_IMAGE.match(url) else None
    if name in URL_ATTRIBUTES:
        return None
    if name == "class":
        allowed = RENDERER_CLASSES.get(tag, set())
        allowed = _CONFIG["code_classes"] if allowed is None else allowed
        return value if value.split() and all(c in allowed for c in value.split()) else None
    if name in ("width", "height") and tag in ("img", "td", "th", "table", "col", "hr"):
        return value if re.fullmatch(r"\s*\d{1,5}(\.\d+)?(%|px)?\s*", value) else None
    return value


def clean(html: str) -> str:
    """`html` from a submission, with nothing that can run, load or pass for the page's own: nh3
    (ammonia) with the course's allow-list. Text, tables, formulas and pictures of their own data
    stay; script, event handlers, styles and classes, frames, forms, meta refreshes, style sheets
    and every URL but a picture's data or a link within the answer go."""
    import nh3

    if not html:
        return ""
    return nh3.clean(
        str(html),
        tags=_CONFIG["tags"],
        attributes=_CONFIG["attributes"],
        attribute_filter=_keep_attribute,
        url_schemes=URL_SCHEMES,
        id_prefix=ID_PREFIX,
        link_rel=None,
        strip_comments=True,
    )


class _LazyConfig(dict):
    def __missing__(self, key):
        self["tags"], self["attributes"], self["code_classes"] = _tags(), _attributes(), _code_classes()
        return self[key]


_CONFIG = _LazyConfig()


def clean_html(element) -> str:
    """nbconvert's `clean_html` filter (HTML outputs, markdown outputs, raw cells), with `clean`."""
    element = element.decode() if isinstance(element, bytes) else element
    return clean(element)


@jinja2.pass_context
def markdown2html(context, source: str) -> str:
    """nbconvert's `markdown2html` filter (markdown cells, grader comments), its HTML through `clean`."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    cell = context.get("cell", {})
    attachments = cell.get("attachments", {}) if hasattr(cell, "get") else {}
    path = context.get("resources", {}).get("metadata", {}).get("path", "")
    renderer = IPythonRenderer(
        escape=False,
        attachments=attachments or {},
        embed_images=False,
        path=path,
        anchor_link_text="¶",
        exclude_anchor_links=False,
    )
    return clean(MarkdownWithMath(renderer=renderer).render(source))


def inert_text(text) -> str:
    """Plain text a student controls, for a page (the formgrader's view of a decoded source, of an
    answer's values): every character not printable shown as its escape (autograder/safetext.py: no
    bidi override turns a line round, no control character hides), then HTML-escaped. A template filter."""
    import html

    from ..safetext import printable

    return html.escape(printable(str(text) if text is not None else "", "\n\t"), quote=True)


def _base64(data) -> bool:
    if not isinstance(data, str):
        return False
    try:
        base64.b64decode(re.sub(r"\s+", "", data), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _size(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 100_000 else None


SHOWN_TYPES = {
    "text/plain",
    "text/html",
    "text/markdown",
    "text/latex",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/svg+xml",
}


def safe_output(output: dict) -> dict | None:
    """A code cell's output with only what a page can show safely (None: nothing left), rebuilt from
    its known fields alone: a field the template would read as a file's address (an output's
    `svg_filename`, its metadata's `filenames`) never reaches it."""
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text")
        text = "".join(t for t in text if isinstance(t, str)) if isinstance(text, list) else text
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return {"output_type": "stream", "name": name, "text": text} if isinstance(text, str) else None
    if kind == "error":
        lines = output.get("traceback")
        return {
            "output_type": "error",
            "ename": str(output.get("ename", "")),
            "evalue": str(output.get("evalue", "")),
            "traceback": [line for line in lines if isinstance(line, str)] if isinstance(lines, list) else [],
        }
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    kept = {}
    for mime, value in data.items():
        if mime not in SHOWN_TYPES:
            continue  # application/javascript, widgets, json, anything unknown
        if isinstance(value, list):
            value = "".join(v for v in value if isinstance(v, str))
        if not isinstance(value, str):
            continue
        if mime in ("image/png", "image/jpeg", "image/gif") and not _base64(value):
            continue
        if mime == "text/html":
            value = clean(value)
        kept[mime] = value
    if not kept:
        return None
    metadata = {}
    old = output.get("metadata") if isinstance(output.get("metadata"), dict) else {}
    for mime in kept:
        sizes = old.get(mime) if isinstance(old.get(mime), dict) else {}
        sizes = {k: _size(sizes.get(k)) for k in ("width", "height")}
        sizes = {k: v for k, v in sizes.items() if v is not None}
        if sizes:
            metadata[mime] = sizes
    out = {"output_type": kind, "data": kept, "metadata": metadata}
    if kind == "execute_result":
        count = output.get("execution_count")
        out["execution_count"] = count if isinstance(count, int) and not isinstance(count, bool) else None
    return out


def safe_attachments(attachments) -> dict:
    """A markdown cell's pasted pictures: image data only, plain base64."""
    kept = {}
    if isinstance(attachments, dict):
        for name, bundle in attachments.items():
            if isinstance(name, str) and isinstance(bundle, dict):
                images = {mime: data for mime, data in bundle.items() if mime in IMAGE_TYPES and _base64(data)}
                if images:
                    kept[name] = images
    return kept


class SanitizeSubmission(Preprocessor):
    """Every cell of a submission, before any template sees it: outputs and attachments reduced to
    what shows safely (see safe_output and safe_attachments); markdown is cleaned when rendered."""

    def preprocess_cell(self, cell, resources, index):
        import nbformat

        if cell.cell_type == "code":
            outputs = [safe_output(dict(o)) for o in cell.get("outputs", []) if isinstance(o, dict)]
            cell.outputs = [nbformat.from_dict(o) for o in outputs if o is not None]
        if "attachments" in cell:
            cell.attachments = nbformat.from_dict(safe_attachments(cell.get("attachments")))
        return cell, resources


class FeedbackExporter(HTMLExporter):
    """The exporter of the students' feedback pages alone (GenerateFeedback.exporter_class): the
    course's template (autograder/templates/course_feedback) is configured on this class, so the
    formgrader's own exporter, an HTMLExporter, keeps nbgrader's `formgrade` template."""
