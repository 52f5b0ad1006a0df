"""Math in feedback that needs no network: the LaTeX of markdown cells turned into MathML.

nbconvert's HTML loads MathJax from a CDN to typeset `$…$`; a student reading feedback offline saw raw
LaTeX. Here each `$…$` and `$$…$$` (outside code) becomes MathML (`latex2mathml`), which browsers
render natively; the feedback template loads no MathJax at all (autograder/templates/course_feedback).
A formula latex2mathml cannot convert is shown as its LaTeX source in code, never dropped.
"""

from __future__ import annotations

import html
import re

CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]*`)", re.S)
DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
INLINE = re.compile(r"(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![\w$])")
TAG = re.compile(r"</?\s*([A-Za-z][\w:-]*)")
# The MathML a formula may be and a page may show (pages.py's cleaning allows these tags with these
# attributes): a conversion with any other tag is shown as its LaTeX.
MATHML_TAGS = {
    "math",
    "mrow",
    "mi",
    "mn",
    "mo",
    "ms",
    "mtext",
    "mspace",
    "msub",
    "msup",
    "msubsup",
    "mfrac",
    "msqrt",
    "mroot",
    "mover",
    "munder",
    "munderover",
    "mtable",
    "mtr",
    "mtd",
    "mstyle",
    "mpadded",
    "mphantom",
    "menclose",
    "merror",
    "semantics",
    "annotation",
    "mmultiscripts",
    "mprescripts",
    "none",
    "mlabeledtr",
    "maligngroup",
    "malignmark",
}
MATHML_ATTRIBUTES = {
    "display",
    "mathvariant",
    "stretchy",
    "fence",
    "separator",
    "accent",
    "accentunder",
    "lspace",
    "rspace",
    "width",
    "height",
    "depth",
    "columnalign",
    "rowalign",
    "columnspacing",
    "rowspacing",
    "columnlines",
    "rowlines",
    "frame",
    "notation",
    "linethickness",
    "displaystyle",
    "scriptlevel",
    "minsize",
    "maxsize",
    "movablelimits",
    "symmetric",
    "largeop",
    "form",
    "encoding",
    "open",
    "close",
    "separators",
    "xmlns",
}
ENVIRONMENT = re.compile(r"\\begin\{(equation\*?|align\*?|gather\*?)\}(.+?)\\end\{\1\}", re.S)


def to_mathml(latex: str, display: bool) -> str:
    from latex2mathml.converter import convert

    try:
        out = convert(latex.strip(), display="block" if display else "inline")
    except Exception:  # latex2mathml raises many kinds on what it does not know
        return f"<code>{html.escape(latex.strip())}</code>"
    out = out.replace("\n", " ")
    if any(tag.lower() not in MATHML_TAGS for tag in TAG.findall(out)) or re.search(r"\son\w+\s*=", out, re.I):
        return f"<code>{html.escape(latex.strip())}</code>"  # HTML smuggled in (\\text{<img …>}): shown as text
    return out


def markdown_math_to_mathml(source: str) -> str:
    """`source` (markdown) with every formula outside code as MathML."""
    parts = CODE.split(source)
    for i in range(0, len(parts), 2):  # even parts: text; odd parts: code, kept as it is
        text = parts[i]
        text = ENVIRONMENT.sub(lambda m: "\n\n" + to_mathml(m[2].replace("&", " "), True) + "\n\n", text)
        text = DISPLAY.sub(lambda m: "\n\n" + to_mathml(m[1], True) + "\n\n", text)
        text = INLINE.sub(lambda m: to_mathml(m[1], False), text)
        parts[i] = text
    return "".join(parts)
