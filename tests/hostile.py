"""HTML a hostile student puts where a page will show it (a markdown answer, an HTML or markdown
output), and HTML a page must keep showing. Shared by tests/test_pages.py (cleaning, no browser) and
tests/browser/test_hostile_pages.py (the feedback page and the live formgrader in Chromium).

Each hostile vector runs PAYLOAD if it gets through: the page then sets `window.__pwned`, logs
MARK on the console and opens an alert with MARK, which the browser test records.
"""
from __future__ import annotations

import base64
import html as _html
import re
from html.parser import HTMLParser

MARK = "1337"
PAYLOAD = f"window.__pwned=(window.__pwned||0)+1;console.log({MARK});alert({MARK})"
_B64_PAGE = base64.b64encode(f"<script>{PAYLOAD}</script>".encode()).decode()
_ENTITY_JS = "".join(f"&#{ord(ch)};" for ch in "javascript:")

HOSTILE_HTML = [
    f"<script>{PAYLOAD}</script>",
    f'<img src=x onerror="{PAYLOAD}">',
    f"<img src=x onerror={PAYLOAD.replace(' ', '')}>",
    f'<svg onload="{PAYLOAD}"></svg>',
    f"<svg><script>{PAYLOAD}</script></svg>",
    f'<svg><a xlink:href="javascript:{PAYLOAD}"><text y="20">svg link</text></a></svg>',
    f'<body onload="{PAYLOAD}">',
    f'<div onmouseover="{PAYLOAD}" style="position:fixed;top:0;left:0;width:100%;height:100%;z-index:9999">overlay</div>',
    f'<details open ontoggle="{PAYLOAD}"><summary>s</summary>d</details>',
    f'<input autofocus onfocus="{PAYLOAD}">',
    f'<video><source onerror="{PAYLOAD}"></video>',
    f'<audio src=x onerror="{PAYLOAD}"></audio>',
    f'<marquee onstart="{PAYLOAD}">m</marquee>',
    f'<x-custom onclick="{PAYLOAD}">custom element</x-custom>',
    f'<p onpointerenter="{PAYLOAD}">pointer</p>',
    f'<iframe srcdoc="<script>{PAYLOAD}</script>"></iframe>',
    f'<iframe src="javascript:{PAYLOAD}"></iframe>',
    f'<iframe src="data:text/html;base64,{_B64_PAGE}"></iframe>',
    f'<a href="javascript:{PAYLOAD}">plain javascript link</a>',
    f'<a href="JaVaScRiPt&#58;{PAYLOAD}">mixed case with an entity</a>',
    f'<a href="{_ENTITY_JS}{PAYLOAD}">all entities</a>',
    f'<a href="&#x6A;ava&#x09;script:{PAYLOAD}">tab inside</a>',
    f'<a href="  javascript:{PAYLOAD}">leading spaces</a>',
    f'<a href="data:text/html;base64,{_B64_PAGE}">data link</a>',
    f'<meta http-equiv="refresh" content="0;url=javascript:{PAYLOAD}">',
    f'<form action="javascript:{PAYLOAD}"><button type="submit">form</button></form>',
    f'<button formaction="javascript:{PAYLOAD}">formaction</button>',
    f'<object data="data:text/html;base64,{_B64_PAGE}"></object>',
    f'<embed src="data:text/html;base64,{_B64_PAGE}">',
    f'<base href="javascript:{PAYLOAD}//">',
    f"<style>@import 'javascript:{PAYLOAD}'; body {{ background: url(\"javascript:{PAYLOAD}\") }}</style>",
    f'<div style="background-image: url(javascript:{PAYLOAD}); position: fixed; top: 0">style url</div>',
    f'<table background="javascript:{PAYLOAD}"><tr><td>t</td></tr></table>',
    f'<math><mtext><table><mglyph><style><img src=x onerror="{PAYLOAD}"></style></mglyph></table></mtext></math>',
    f'<noscript><p title="</noscript><img src=x onerror=\'{PAYLOAD}\'>"></p></noscript>',
    f'<IMG SRC=x OnErRoR="{PAYLOAD}">',
    f'<a href="javascript&colon;{PAYLOAD}">named entity colon</a>',
    f'<link rel="stylesheet" href="javascript:{PAYLOAD}">',
    f'<object data="javascript:{PAYLOAD}"></object>',
]

# Markdown's own ways to a link or picture (rendered to HTML before cleaning).
HOSTILE_MARKDOWN = [
    f"[markdown link](javascript:{PAYLOAD.replace(' ', '')})",
    f"[entity link](javascript&#58;{PAYLOAD.replace(' ', '')})",
    f"![markdown picture](javascript:{PAYLOAD.replace(' ', '')})",
    f"<javascript:{PAYLOAD.replace(' ', '')}>",
    f'[data link](data:text/html;base64,{_B64_PAGE})',
]

PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

LEGITIMATE_HTML = [
    ("<p><strong>bold</strong> and <em>italic</em></p>", "<strong>bold</strong>"),
    ("<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>", "<td>1</td>"),
    (f'<img src="data:image/png;base64,{PNG_1PX}" alt="pasted">', f"base64,{PNG_1PX}"),
    ('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><mfrac><mi>a</mi><mi>b</mi></mfrac></math>',
     "<mfrac><mi>a</mi><mi>b</mi></mfrac>"),
    ('<a href="https://pytorch.org/docs/">docs</a>', 'href="https://pytorch.org/docs/"'),
    ("<ul><li>one</li></ul><pre><code>x = 1</code></pre>", "<li>one</li>"),
    ('<span style="color: red">red</span>', "color:red"),
]

FORBIDDEN_TAGS = {"script", "iframe", "frame", "frameset", "object", "embed", "meta", "base", "link", "style",
                  "form", "svg", "input", "button", "textarea", "select", "video", "audio", "source", "marquee",
                  "noscript", "body", "html", "head", "applet", "template", "x-custom"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "background", "poster", "xlink:href", "srcset",
                  "codebase", "cite", "srcdoc"}


def _bad_url(value: str) -> bool:
    squeezed = re.sub(r"[\x00-\x20]+", "", _html.unescape(value)).lower()
    return squeezed.startswith(("javascript:", "vbscript:", "data:text", "data:application"))


class _Dangers(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in FORBIDDEN_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}>")
            elif name == "srcdoc" or (name in URL_ATTRIBUTES and _bad_url(value)):
                self.found.append(f"<{tag} {name}={value[:40]!r}>")
            elif name == "style" and re.search(r"url\(|expression|position|@import", value, re.I):
                self.found.append(f"<{tag} style={value[:40]!r}>")
            elif name == "http-equiv":
                self.found.append(f"<{tag} http-equiv>")

    handle_startendtag = handle_starttag


def dangers(fragment: str) -> list[str]:
    """Every tag or attribute in `fragment` that could run, load or navigate: [] for a clean one."""
    parser = _Dangers()
    parser.feed(fragment)
    parser.close()
    return parser.found
