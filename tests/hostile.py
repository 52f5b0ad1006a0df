"""HTML a hostile student puts where a page will show it (a markdown answer, an HTML or markdown
output), and HTML a page must keep showing. Shared by tests/test_pages.py (cleaning, no browser) and
tests/browser/test_hostile_pages.py (the feedback page and the live formgrader in Chromium).

Each hostile vector runs PAYLOAD if it gets through: the page then sets `window.__pwned`, logs
MARK on the console and opens an alert with MARK, which the browser test records.

Each request vector (REQUEST_HTML, REQUEST_MARKDOWN) makes the page fetch from, or lead a click to,
REQUEST_HOST if it gets through, each at a path of its own (`/r07...`): the browser test maps that
name onto a loopback listener that must receive nothing. The overlay vectors (OVERLAY_HTML) lay a
fake score and a fake "regrade" button over the page with the page's own Bootstrap classes, styles
or a formula's; the browser test makes sure the true score stays on top.
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

# ---- requests: scheme and path tricks a browser's URL parser undoes, every tag and attribute that loads
REQUEST_HOST = "listener.test"
_H = REQUEST_HOST
_TAB_SCHEME = "ht\ttp"
_NL_SCHEME = "ht\ntp"
REQUEST_HTML = [
    f'<img src="{_TAB_SCHEME}://{_H}/r01-tab-in-scheme.png" alt="r01">',
    f'<img src="{_NL_SCHEME}://{_H}/r02-newline-in-scheme.png" alt="r02">',
    f'<img src="h&#x09;t&#x0A;tp://{_H}/r03-entity-tab-newline.png" alt="r03">',
    f'<img src="/\\{_H}/r04-slash-backslash.png" alt="r04">',
    f'<img src="\\\\{_H}/r05-two-backslashes.png" alt="r05">',
    f'<img src="//{_H}/r06-scheme-relative.png" alt="r06">',
    f'<img src="\x01 http://{_H}/r07-leading-control.png" alt="r07">',
    f'<img src="HTTP://{_H}/r08-upper-case.png" alt="r08">',
    f'<img src="http&colon;//{_H}/r09-entity-colon.png" alt="r09">',
    f'<img src="data:image/png;base64,{{png}}" srcset="http://{_H}/r10-srcset.png 2x, http://{_H}/r10-srcset.png 1x" alt="r10">',
    f'<picture><source srcset="http://{_H}/r11-picture-source.png"><img src="http://{_H}/r11-picture-img.png" alt="r11"></picture>',
    f'<svg width="10" height="10"><image href="http://{_H}/r12-svg-image.png" width="10" height="10"/></svg>',
    f'<svg width="10" height="10"><use href="http://{_H}/r13-svg-use.svg#a"/></svg>',
    f'<svg width="10" height="10"><style>@import url(http://{_H}/r14-svg-style.css);</style><rect width="5" height="5"/></svg>',
    f'<svg width="10" height="10"><filter id="f"><feImage href="http://{_H}/r15-feimage.png"/></filter><rect filter="url(#f)" width="5" height="5"/></svg>',
    f'<div style="background-image: url(http://{_H}/r16-css-url.png); width: 10px; height: 10px">css url()</div>',
    f'<div style="background: image-set(url(\'http://{_H}/r17-image-set.png\') 1x); width: 10px; height: 10px">image-set</div>',
    f'<ul><li style="list-style-image: url(http://{_H}/r18-list-image.png)">list image</li></ul>',
    f'<style>@import url(http://{_H}/r19-import.css); .r19 {{ background: url(http://{_H}/r19-style.png) }}</style><p class="r19">r19</p>',
    f'<link rel="stylesheet" href="http://{_H}/r20-stylesheet.css">',
    f'<link rel="preload" as="image" href="http://{_H}/r21-preload.png">',
    f'<link rel="prefetch" href="http://{_H}/r22-prefetch">',
    f'<link rel="icon" href="http://{_H}/r23-icon.png">',
    f'<meta http-equiv="refresh" content="0;url=http://{_H}/r24-meta-refresh">',
    f'<base href="http://{_H}/r25-base/"><img src="r25-relative-to-base.png" alt="r25">',
    f'<form action="http://{_H}/r26-form-action" method="get"><button type="submit">r26 form</button></form>',
    f'<form><button formaction="http://{_H}/r27-formaction">r27 formaction</button></form>',
    f'<form action="http://{_H}/r28-input-image"><input type="image" src="http://{_H}/r28-input-image.png" alt="r28"></form>',
    f'<a href="http://{_H}/r29-plain-link">r29 a link to click</a>',
    f'<a href="#top" ping="http://{_H}/r30-ping">r30 ping</a>',
    f'<a href="/\\{_H}/r31-link-slash-backslash">r31 link read as //</a>',
    f'<video poster="http://{_H}/r32-poster.png" width="10" height="10"></video>',
    f'<video><source src="http://{_H}/r33-video-source.mp4"></video>',
    f'<audio src="http://{_H}/r34-audio.mp3" autoplay></audio>',
    f'<iframe src="http://{_H}/r35-iframe"></iframe>',
    f'<object data="http://{_H}/r36-object"></object>',
    f'<embed src="http://{_H}/r37-embed">',
    f'<table background="http://{_H}/r38-table-background.png"><tr><td>r38</td></tr></table>',
    f'<img src="x" onerror="this.onerror=null;this.src=\'http://{_H}/r39-onerror\'" alt="r39">',
    f'<img src="r40-relative.png" alt="r40"><img src="/r40-root-relative.png" alt="r40b">',
    f'<blockquote cite="http://{_H}/r41-cite">r41 quote</blockquote>',
    f'<img src="data:image/svg+xml;utf8,<svg xmlns=\'http://www.w3.org/2000/svg\'><image href=\'http://{_H}/r42-svg-in-data.png\'/></svg>" alt="r42">',
]
REQUEST_MARKDOWN = [
    f"![r50 markdown picture](http://{_H}/r50-markdown.png)",
    f"![r51 entity tab](ht&#9;tp://{_H}/r51-markdown-entity-tab.png)",
    f"![r52 angle brackets](<{_TAB_SCHEME}://{_H}/r52-markdown-angle.png>)",
    f"![r53 slash backslash](/\\{_H}/r53-markdown-slash-backslash.png)",
    f"![r54 reference][r54]\n\n[r54]: http://{_H}/r54-markdown-reference.png",
    f"[r55 markdown link](//{_H}/r55-markdown-link)",
    f"<http://{_H}/r56-autolink>",
    f'![r57 title](http://{_H}/r57-markdown-title.png "title")',
]

# ---- overlays: the page's own look from a student's markup: a full-page layer with a fake score
FAKE_SCORE = "57.0 / 57 (fake)"
FAKE_BUTTON = "Request a regrade (fake)"
OVERLAY_HTML = [
    # Bootstrap's own fixed layers (classes alone, no style): a backdrop over everything, a navbar on top
    '<div class="modal-backdrop in"></div>'
    f'<div class="navbar navbar-default navbar-fixed-top"><div class="container"><div class="jumbotron">'
    f'<h1>Your score: {FAKE_SCORE}</h1><p class="lead">A grader looked again.</p>'
    f'<a class="btn btn-lg btn-primary" href="http://{_H}/r60-fake-regrade">{FAKE_BUTTON}</a>'
    '</div></div></div>',
    # the same with styles: a white sheet over the whole window
    '<div style="position: fixed; top: 0; left: 0; width: 100vw; height: 100vh; z-index: 99999; background: white">'
    f'<h1 style="font-size: 48px">Total: {FAKE_SCORE}</h1><button class="btn btn-success">{FAKE_BUTTON}</button></div>',
    # page ids and Bootstrap's affix / modal shown
    f'<div id="statusmessage" class="modal fade in" style="display: block"><div class="modal-dialog"><div class="modal-content">'
    f'<div class="modal-body"><h2>Score {FAKE_SCORE}</h2></div></div></div></div>',
]
# A formula's own ways to a style, a class or a link (MathJax's HTML extension: \style, \class, \href)
OVERLAY_MATH = [
    r"$\style{position: fixed; top: 0; left: 0; width: 100%; height: 100%; z-index: 99999; background: white}"
    r"{\text{Score " + FAKE_SCORE.split()[0] + r"}}$",
    r"$\class{navbar-fixed-top}{\text{Your score is full marks}}$",
    r"$\cssId{statusmessage}{x} \href{http://" + _H + r"/r61-mathjax-href}{\text{r61 regrade}}$",
]

PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

REQUEST_HTML = [v.replace("{png}", PNG_1PX) for v in REQUEST_HTML]

LEGITIMATE_HTML = [
    ("<p><strong>bold</strong> and <em>italic</em></p>", "<strong>bold</strong>"),
    ("<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>", "<td>1</td>"),
    (f'<img src="data:image/png;base64,{PNG_1PX}" alt="pasted">', f"base64,{PNG_1PX}"),
    ('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><mfrac><mi>a</mi><mi>b</mi></mfrac></math>',
     "<mfrac><mi>a</mi><mi>b</mi></mfrac>"),
    ('<a href="https://pytorch.org/docs/">the docs</a>', "the docs"),      # the words stay, the address goes
    ('<h2 id="part-1">Part 1</h2><a href="#part-1">back to part 1</a>', 'href="#answer-part-1"'),
    ("<ul><li>one</li></ul><pre><code>x = 1</code></pre>", "<li>one</li>"),
    ('<span style="color: red">in red</span>', "in red"),
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


# ---- what a cleaned fragment may still hold that fetches, leads away or passes for the page ------
PAGE = "http://127.0.0.1:8888/formgrader/submissions/1/"       # a page's address, to resolve URLs against
LOADING_TAGS = {"link", "meta", "base", "style", "svg", "image", "use", "feimage", "picture", "source", "video",
                "audio", "track", "iframe", "frame", "object", "embed", "applet", "form", "input", "button",
                "portal", "fencedframe"}
URL_OR_LOAD_ATTRIBUTES = URL_ATTRIBUTES | {"ping", "longdesc", "lowsrc", "dynsrc", "manifest", "usemap", "icon",
                                           "archive", "profile", "imagesrcset", "xlink:href", "content"}
# The classes nbconvert's markdown renderer writes itself (a code block's colours, a heading's anchor).
RENDERER_CLASS = re.compile(r"(highlight|anchor-link|[a-z]{1,3}\d?)\Z")


def resolved(value: str, base: str = PAGE) -> str:
    """`value` read by a WHATWG URL parser (ada, the parser Node.js uses) against `base`, as a
    browser reads an attribute's URL: '' when it does not parse."""
    import ada_url
    try:
        return ada_url.join_url(base, value)
    except ValueError:
        return ""


class _Requests(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in LOADING_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            if name == "style":
                self.found.append(f"<{tag} style>")
            elif name == "class" and not all(RENDERER_CLASS.match(c) for c in value.split()):
                self.found.append(f"<{tag} class={value[:40]!r}>")
            elif name == "id" and not value.startswith("answer-"):
                self.found.append(f"<{tag} id={value[:40]!r}>")
            elif name in URL_OR_LOAD_ATTRIBUTES:
                url = resolved(value)
                same_page = name == "href" and url.startswith(PAGE + "#")
                own_picture = (tag, name) == ("img", "src") and re.match(r"data:image/[\w.+-]+;base64,", url, re.I)
                if not (same_page or own_picture):
                    self.found.append(f"<{tag} {name}={url[:60]!r}>")

    handle_startendtag = handle_starttag


def requests(fragment: str) -> list[str]:
    """Every tag or attribute in `fragment` that could fetch a URL, lead a click away from the page
    (an in-page anchor and a picture's own data excepted), or borrow the page's look (a style, a
    class the renderer does not write, an id not prefixed): [] for a clean one."""
    parser = _Requests()
    parser.feed(fragment)
    parser.close()
    return parser.found
