"""`make pdfs`: every student's written answers as one PDF per student, for graders who grade on
paper or in Gradescope: `<grading home>/pdfs/<student>.pdf`.

Each written answer (an nbgrader cell that is graded by hand: `grade` and `solution`) is printed under
the question it answers (the text cells right above it in the notebook, back to the previous code or
answer cell), with its grade id, its points and a box for the score, notebook by notebook. The
answers come from the graded notebooks (autograded/), which hold exactly the student's answers.
Formulas are MathML (autograder/publish/mathml.py); pictures pasted into an answer are kept.

`make pdfs ANON=1` (`--anonymous`) grades blind: each PDF is named and headed by a code instead of
the student's id, `pdfs/anonymous/<step>/<code>.pdf`, and the key, code to student, is written beside
that folder for the instructor alone (`pdfs/anonymous-key-<step>.csv`): hand the folder to the
graders, keep the key. A code is a keyed hash of the step and the student id (the key, a random
secret made once, is `pdfs/.anonymous-secret`): the same student gets the same code every time the
PDFs are made again, and a code says nothing about the name.

The pages are printed by Debian's Chromium (`$CHROMIUM` names another), driven by playwright,
with JavaScript off and every network request refused, and each answer's HTML is cleaned first
(autograder/publish/pages.py): a student's answer is text and pictures, nothing it holds can run or fetch
anything.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import os
import re
import secrets
import shutil
from pathlib import Path

from ..course import ROOT, grader_home
from ..csvout import write_csv
from ..errors import SetupError
from ..steps import find_step

STYLE = """
body { font-family: 'DejaVu Sans', sans-serif; font-size: 11pt; margin: 0; }
h1 { font-size: 16pt; margin: 0 0 0.3em 0; } h2 { font-size: 13pt; margin: 1.2em 0 0.4em 0; border-bottom: 1px solid #999; }
div.q { margin: 0.8em 0 0.3em 0; page-break-inside: avoid; }
div.question { color: #333; } div.question h1, div.question h2, div.question h3 { font-size: 11pt; border: none; }
div.answer { border: 1px solid #444; padding: 0.5em 0.8em; margin: 0.4em 0 1em 0; min-height: 3em; page-break-inside: avoid; }
div.meta { font-size: 9pt; color: #555; }
div.score { float: right; font-size: 10pt; margin: 0 0 0.3em 1em; }
div.score span.box { display: inline-block; width: 3.2em; height: 1.5em; border: 1.5px solid #000;
                     vertical-align: middle; margin-right: 0.3em; }
div.answer { overflow-wrap: anywhere; position: relative; contain: paint; isolation: isolate; }
pre { white-space: pre-wrap; font-size: 9.5pt; }
math[display="block"] { display: block; margin: 0.4em 0; }
img { max-width: 100%; }
"""

# The page runs nothing and loads nothing but its own pictures' data (as the feedback page).
PAGE_CSP = (
    "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; font-src data:; form-action 'none'; base-uri 'none'\">"
)


def chromium_path() -> str | None:
    for candidate in [
        os.environ.get("CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _markdown(cell: dict) -> str:
    """A markdown cell as HTML: formulas as MathML, pasted pictures inline."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    from .mathml import markdown_math_to_mathml
    from .pages import clean

    text = markdown_math_to_mathml(_text(cell))
    attachments = cell.get("attachments") or {}

    def picture(match):
        bundle = attachments.get(match[1]) if isinstance(attachments, dict) else None
        if isinstance(bundle, dict):
            for mime, data in bundle.items():
                if mime.startswith("image/") and isinstance(data, str) and mime != "image/svg+xml":
                    return f"data:{mime};base64,{data.strip()}"
        return ""

    text = re.sub(r"attachment:([^)\s\"']+)", picture, text)
    rendered = re.sub(r'<a class="anchor-link"[^>]*>.*?</a>', "", markdown2html_mistune(text))  # no ¶ on paper
    return clean(rendered)


def written_answers(nb: dict) -> list[dict]:
    """[{grade_id, points, question (HTML), answer (HTML)}] of a notebook's hand-graded cells."""
    out, question = [], []
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and meta.get("solution"):
            if cell.get("cell_type") == "markdown":
                answer = _markdown(cell)
            else:
                answer = f"<pre>{html.escape(_text(cell))}</pre>"
            out.append(
                {
                    "grade_id": meta.get("grade_id", "?"),
                    "points": float(meta.get("points") or 0),
                    "question": "".join(_markdown(c) for c in question),
                    "answer": answer,
                }
            )
            question = []
        elif cell.get("cell_type") == "markdown" and not meta.get("solution"):
            question.append(cell)
        else:
            question = []
    return out


def student_html(sid: str, step: str, notebooks: dict[str, dict]) -> str:
    """The page of one student's written answers; `sid` is what the page names them by (their id,
    or their code when the PDFs are anonymous)."""
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>{PAGE_CSP}<title>{html.escape(sid)}</title>"
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(step)}: written answers of {html.escape(sid)}</h1>",
    ]
    for name, nb in notebooks.items():
        answers = written_answers(nb)
        if not answers:
            continue
        parts.append(f"<h2>{html.escape(name)}</h2>")
        for item in answers:
            parts.append(
                f"<div class='q'><div class='score'><span class='box'></span>/ {item['points']:g}</div>"
                f"<div class='meta'>{html.escape(item['grade_id'])} "
                f"({item['points']:g} points)</div><div class='question'>{item['question']}</div></div>"
                f"<div class='answer'>{item['answer']}</div>"
            )
    parts.append("</body></html>")
    return "".join(parts)


CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: a code is read and typed by people


def _secret(folder: Path) -> bytes:
    """The key of the anonymous codes: made once, kept in the PDFs' folder (readable by its owner only)."""
    path = folder / ".anonymous-secret"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return bytes.fromhex(path.read_text().strip())


def anonymous_code(secret: bytes, step: str, student: str, length: int = 6) -> str:
    """A student's code for a step: the same every time (same key, step and id), unlike any other's."""
    digest = hmac.new(secret, f"{step}\0{student}".encode(), hashlib.sha256).digest()
    number = int.from_bytes(digest, "big")
    chars = []
    for _ in range(length):
        number, rest = divmod(number, len(CODE_ALPHABET))
        chars.append(CODE_ALPHABET[rest])
    return "".join(chars)


def anonymous_codes(folder: Path, step: str, students: list[str]) -> dict[str, str]:
    """student -> code, unique within the class (a longer code for all if two would clash)."""
    secret = _secret(folder)
    for length in range(6, 14):
        codes = {sid: anonymous_code(secret, step, sid, length) for sid in students}
        if len(set(codes.values())) == len(codes):
            return codes
    raise RuntimeError("pdfs: anonymous codes clash even at 13 characters")


def make_pdfs(step: str, students: list[str] | None = None, say=print, anonymous: bool = False) -> list[Path]:
    """One PDF per graded student; returns the files written. anonymous: named by code (above)."""
    from playwright.sync_api import sync_playwright

    home = grader_home()
    graded = sorted(p.parent.name for p in (home / "autograded").glob(f"*/{step}"))
    if students:
        graded = [s for s in graded if s in students]
    if not graded:
        say("pdfs: no graded submission yet (make grade first)")
        return []
    browser_path = chromium_path()
    if browser_path is None:
        raise SetupError(
            "Chromium is not installed: `sudo make system-deps` installs Debian's chromium "
            "(or set CHROMIUM=/path/to/chromium)"
        )
    out_dir = home / "pdfs"
    out_dir.mkdir(parents=True, exist_ok=True)
    names = {sid: sid for sid in graded}
    if anonymous:
        names = anonymous_codes(out_dir, step, graded)
        key = out_dir / f"anonymous-key-{step}.csv"
        umask = os.umask(0o077)  # the key is the instructor's alone, from its first byte
        try:
            write_csv(key, ["code", "student"], sorted((code, sid) for sid, code in names.items()))
        finally:
            os.umask(umask)
        os.chmod(key, 0o600)
        out_dir = out_dir / "anonymous" / step
        out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=browser_path,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            context = browser.new_context(java_script_enabled=False, offline=True)
            context.route("**/*", lambda route: route.abort())
            for sid in graded:
                notebooks = {}
                for name in find_step(step).notebooks():
                    path = home / "autograded" / sid / step / f"{name}.ipynb"
                    if path.is_file():
                        notebooks[name] = json.loads(path.read_text(encoding="utf-8"))
                page = context.new_page()
                page.set_content(student_html(names[sid], step, notebooks), wait_until="load")
                dest = out_dir / f"{names[sid]}.pdf"
                page.pdf(
                    path=str(dest),
                    format="A4",
                    print_background=True,
                    margin={"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"},
                    display_header_footer=True,
                    header_template="<span></span>",
                    footer_template=f"<div style='font-size:8pt;width:100%;text-align:center'>"
                    f"{html.escape(names[sid])} · {html.escape(step)} · page "
                    "<span class='pageNumber'></span> of <span class='totalPages'></span></div>",
                )
                page.close()
                written.append(dest)
        finally:
            browser.close()
    shown = out_dir.relative_to(ROOT) if out_dir.is_relative_to(ROOT) else out_dir
    say(
        f"pdfs: {len(written)} PDFs of written answers in {shown}/ (one per student"
        + (
            f", named by code; the key: {shown.parent.parent / f'anonymous-key-{step}.csv'}, for you alone)"
            if anonymous
            else ")"
        )
    )
    return written
