"""What a TA sees of a cell sent to review whose answer runs through exec of an encoded string: the text
it runs, decoded without running anything of the student's (autograder/decoding.py), and the values the
answer returned on the check's cases; on the formgrader's page only, inert, never in the student's
feedback, never changing a score.

The decoder on its own (each allowed decoder, nesting, the caps, what it refuses), then the cell judged
(grading/judging.py), then the two pages (the formgrader's, the feedback) rendered as nbgrader renders
them. The same path in the real formgrader, in Chromium: tests/browser/test_review_decoded.py.
"""
from __future__ import annotations

import base64
import binascii
import bz2
import codecs
import gzip
import lzma
import types
import zlib

import nbformat
import pytest

from autograder import decoding
from autograder.decoding import GRADER_VIEW, MAX_LEVELS, MAX_SITES, MAX_VALUE, decode_runs

ANSWER = ("def scores_entrywise(q, k):\n"
          "    B, T, d = q.shape\n"
          "    s = torch.zeros(B, T, T, dtype=q.dtype)\n"
          "    for b in range(B):\n"
          "        for i in range(T):\n"
          "            for j in range(T):\n"
          "                s[b, i, j] = (q[b, i] * k[b, j]).sum()\n"
          "    return s\n")
RAW = ANSWER.encode()
B64 = base64.b64encode(RAW).decode()

# name -> a cell that execs ANSWER through that encoding
ENCODED = {
    "b64decode": f"import base64\nexec(base64.b64decode('{B64}'))",
    "b64decode, module aliased, .decode()": f"import base64 as b\nexec(b.b64decode('{B64}').decode('utf-8'))",
    "from-import aliased": f"from base64 import b64decode as d\nexec(d('{B64}'))",
    "name bound once, compile": f"import base64\nblob = '{B64}'\nexec(compile(base64.b64decode(blob), 'x', 'exec'))",
    "__import__": f"exec(__import__('base64').b64decode('{B64}'))",
    "standard_b64decode": f"import base64\nexec(base64.standard_b64decode({B64!r}))",
    "urlsafe_b64decode": f"import base64\nexec(base64.urlsafe_b64decode({base64.urlsafe_b64encode(RAW)!r}))",
    "b32decode": f"import base64\nexec(base64.b32decode({base64.b32encode(RAW)!r}))",
    "b32hexdecode": f"import base64\nexec(base64.b32hexdecode({base64.b32hexencode(RAW)!r}))",
    "b16decode": f"import base64\nexec(base64.b16decode({base64.b16encode(RAW)!r}))",
    "a85decode": f"import base64\nexec(base64.a85decode({base64.a85encode(RAW)!r}))",
    "b85decode": f"import base64\nexec(base64.b85decode({base64.b85encode(RAW)!r}))",
    "decodebytes": f"import base64\nexec(base64.decodebytes({base64.encodebytes(RAW)!r}))",
    "bytes.fromhex": f"exec(bytes.fromhex('{RAW.hex()}').decode('ascii'))",
    "binascii.unhexlify": f"import binascii\nexec(binascii.unhexlify({binascii.hexlify(RAW)!r}))",
    "binascii.a2b_base64": f"import binascii\nexec(binascii.a2b_base64({B64!r}))",
    "codecs rot13": f"import codecs\nexec(codecs.decode({codecs.encode(ANSWER, 'rot13')!r}, 'rot13'))",
    "codecs.encode rot_13": f"import codecs\nexec(codecs.encode({codecs.encode(ANSWER, 'rot13')!r}, 'rot_13'))",
    "codecs hex": f"import codecs\nexec(codecs.decode({RAW.hex().encode()!r}, 'hex'))",
    "codecs base64": f"import codecs\nexec(codecs.decode({B64.encode()!r}, 'base64'))",
    "codecs zlib": f"import codecs\nexec(codecs.decode({zlib.compress(RAW)!r}, 'zlib'))",
    "zlib.decompress": f"import zlib\nexec(zlib.decompress({zlib.compress(RAW)!r}))",
    "gzip.decompress": f"import gzip\nexec(gzip.decompress({gzip.compress(RAW, mtime=0)!r}))",
    "bz2.decompress": f"import bz2\nexec(bz2.decompress({bz2.compress(RAW)!r}))",
    "lzma.decompress": f"import lzma\nexec(lzma.decompress({lzma.compress(RAW)!r}))",
    "b64 of zlib": f"import base64, zlib\nexec(zlib.decompress(base64.b64decode({base64.b64encode(zlib.compress(RAW))!r})))",
    "bytes literal": f"exec({RAW!r})",
    "concatenation": "exec(" + " + ".join(repr(ANSWER[i:i + 20]) for i in range(0, len(ANSWER), 20)) + ")",
    "join of a list": f"exec(''.join({[ANSWER[i:i + 9] for i in range(0, len(ANSWER), 9)]!r}))",
    "chr over a literal list": f"exec(''.join(chr(c) for c in {[ord(c) for c in ANSWER]}))",
    "chr of xor, list comprehension": f"exec(''.join([chr(c ^ 7) for c in {[ord(c) ^ 7 for c in ANSWER]}]))",
    "map(chr, ...)": f"exec(''.join(map(chr, {[ord(c) for c in ANSWER]})))",
    "bytes of ints": f"exec(bytes({list(RAW)}).decode())",
    "reversed by a slice": f"exec({ANSWER[::-1]!r}[::-1])",
    "f-string and replace": f"x = 'zeros'\nexec(f{ANSWER.replace('zeros', '{x}').replace('@', '?')!r}.replace('?', '@'))",
    "exec bound to a name": f"import base64\nrun = exec\nrun(base64.b64decode('{B64}'))",
    "an alias of an alias": f"import base64\nrun = exec\ngo = run\ngo(base64.b64decode('{B64}'))",
    "builtins imported aliased": f"import base64, builtins as b\nb.exec(base64.b64decode('{B64}'))",
    "from builtins import exec as": f"import base64\nfrom builtins import exec as run\nrun(base64.b64decode('{B64}'))",
    "__builtins__.exec": f"import base64\n__builtins__.exec(base64.b64decode('{B64}'))",
    "eval": f"import base64\nf = eval(base64.b64decode({base64.b64encode(b'lambda q, k: q @ k.mT')!r}))",
}


@pytest.mark.parametrize("name", list(ENCODED))
def test_each_allowed_decoder_gives_back_the_text_the_call_runs(name):
    (site,) = decode_runs([ENCODED[name]])
    want = "lambda q, k: q @ k.mT" if name == "eval" else ANSWER
    assert (site.text, site.why, site.level) == (want, "", 0), site
    assert site.where.startswith("cell 1, line ") and site.where.endswith(("exec(...)", "eval(...)"))


def test_a_text_that_execs_an_encoded_text_is_decoded_level_by_level_up_to_the_cap():
    inner = f"import zlib\nexec(zlib.decompress({zlib.compress(RAW)!r}))"
    outer = f"import base64\nexec(base64.b64decode({base64.b64encode(inner.encode())!r}))"
    first, second = decode_runs(["import torch", outer], labels=["In [1]", "In [2]"])
    assert (first.text, first.level, first.where) == (inner, 0, "In [2], line 2: exec(...)")
    assert (second.text, second.level) == (ANSWER, 1)
    assert second.where == "In [2], line 2 → decoded text, line 2: exec(...)"
    # a chain deeper than the cap: MAX_LEVELS levels decoded, then one line says where it stopped
    text = ANSWER
    for _ in range(MAX_LEVELS + 3):
        text = f"import base64\nexec(base64.b64decode({base64.b64encode(text.encode())!r}))"
    sites = decode_runs([text])
    assert [s.level for s in sites] == list(range(MAX_LEVELS + 1))
    assert all(s.text for s in sites[:-1]) and sites[-1].text is None and "nested more than" in sites[-1].why


@pytest.mark.parametrize("squeeze", ["zlib", "gzip", "bz2", "lzma", "codecs zlib"])
def test_a_decompression_bomb_stops_at_the_cap(squeeze):
    big = b"#" * (64 * MAX_VALUE)
    blob = {"zlib": zlib.compress, "codecs zlib": zlib.compress, "gzip": gzip.compress, "bz2": bz2.compress,
            "lzma": lzma.compress}[squeeze](big)
    call = {"codecs zlib": f"codecs.decode({blob!r}, 'zlib')"}.get(squeeze, f"{squeeze}.decompress({blob!r})")
    seen = []
    real = decoding._bounded

    def watched(make, data):
        try:
            out = real(make, data)
        except decoding.Refused:
            seen.append("refused")
            raise
        seen.append(len(out))
        return out
    pytest.MonkeyPatch().setattr(decoding, "_bounded", watched)
    try:
        (site,) = decode_runs([f"import {squeeze.split()[0]}\nexec({call})"])
    finally:
        decoding._bounded = real
    assert site.text is None and f"expands past {MAX_VALUE:,} bytes" in site.why, site
    assert seen == ["refused"]


@pytest.mark.parametrize("code, why", [
    ("exec('a' * 10_000_000)", "longer than"),
    ("exec('ab' + 'c' * 1099511627776)", "integer too large"),
    ("exec('ab' + 'c' * (65536 * 65536 * 256))", "integer too large"),
    ("s = 'x' * 150_000\nexec((s + s).replace('x', 'y'))", "longer than"),
    ("exec(''.join(['y' * 100_000] * 3))", "longer than"),
    ("exec(''.join(chr(c) for c in " + "[" * 100 + "1" + "]" * 100 + "))", "nested"),
])
def test_every_value_is_bounded_before_it_is_made(code, why):
    (site,) = decode_runs([code])
    assert site.text is None and why in site.why, site


def test_folding_is_bounded_in_steps():
    code = f"exec(''.join(chr(65) for c in 'a' * {MAX_VALUE - 1}))"
    (site,) = decode_runs([code])
    assert site.text is None and "steps to decode" in site.why, site


@pytest.mark.parametrize("code, why", [
    ("import base64\nexec(base64.b64decode(open('answer.txt').read()))", "`open('answer.txt').read`"),
    ("import os\nexec(os.environ['CODE'])", "`os.environ`, which the grader does not fold"),
    ("import base64\nexec(base64.b64decode(requests.get('http://x').text))", "`requests.get('http://x').text`, which"),
    ("exec(__import__('os').popen('cat x').read())", "not one of the decoders"),
    ("import pickle\nexec(pickle.loads(b'...'))", "`pickle.loads`"),
    ("import base64\nbase64 = fake\nexec(base64.b64decode('eA=='))", "not one of the decoders"),
    ("s = 'eA=='\ns = 'eQ=='\nimport base64\nexec(base64.b64decode(s))", "`s`, which is not bound once"),
    ("def f(s):\n    import base64\n    exec(base64.b64decode(s))", "`s`, which is not bound once"),
    ("import codecs\nexec(codecs.decode(b'x', 'uu'))", "codecs.decode with 'uu'"),
    ("exec(code_made_elsewhere)", "`code_made_elsewhere`"),
    ("def chr(c):\n    return 'x'\nexec(''.join(map(chr, [49])))", "not one of the decoders"),
    ("chr = str\nexec(''.join(chr(c) for c in [49]))", "not one of the decoders"),
    ("bytes = str\nexec(bytes.fromhex('31'))", "`str`, which"),
    ("exec(b'\\xff\\xfe')", "not UTF-8"),
    ("exec(chr(-1))", "failed on its argument"),
])
def test_anything_else_is_refused_and_says_why(code, why):
    (site,) = decode_runs([code])
    assert site.text is None and why in site.why, site


def test_an_exec_the_student_defined_is_no_exec():
    assert decode_runs(["def exec(text):\n    return None\nexec('import os')"]) == []
    # a name bound to exec more than once, or to something else, or through a module not builtins
    assert decode_runs(["run = exec\nrun = print\nrun('import os')"]) == []
    assert decode_runs(["run = print\nrun('import os')"]) == []
    assert decode_runs(["from os import exec as run\nrun('import os')"]) == []
    assert decode_runs(["import os as builtins\nbuiltins.exec('import os')"]) == []
    assert decode_runs(["a = b\nb = a\na('import os')"]) == []


def test_nothing_of_the_student_s_runs(tmp_path, monkeypatch):
    """A decoded text that would write a file, and a call the folder would need to run: only read."""
    marker = tmp_path / "ran"
    payload = f"open({str(marker)!r}, 'w').write('x')"
    monkeypatch.chdir(tmp_path)
    sites = decode_runs([f"import base64\nexec(base64.b64decode({base64.b64encode(payload.encode())!r}))",
                         f"exec({payload})", f"exec(__import__('os').system('touch {marker}'))"])
    assert sites[0].text == payload and sites[1].text is None and sites[2].text is None
    assert not marker.exists()


def test_calls_shown_per_cell_are_capped_and_unparsable_cells_skipped():
    many = "\n".join(f"exec('x = {n}')" for n in range(3 * MAX_SITES))
    assert len(decode_runs([many, "def broken(:"])) == MAX_SITES
    assert decode_runs(["x = 1", "def f(q, k):\n    return q @ k"]) == []
    (site,) = decode_runs(["# " + "x" * decoding.MAX_SOURCE + "\nexec('1')"])
    assert site.text is None and "longer than" in site.why and site.where == "cell 1"
    long = "x = 1  # " + "y" * (2 * decoding.MAX_SHOWN)
    (site,) = decode_runs([f"exec({long!r})"])
    kept = site.as_dict()
    assert site.text == long and len(kept["text"]) == decoding.MAX_SHOWN and kept["cut"] == len(long) - decoding.MAX_SHOWN


@pytest.mark.parametrize("code, why", [
    ("import codecs\nexec(codecs.encode(b'eA==', 'base64'))", "codecs.encode with 'base64'"),     # encodes: not shown decoded
    ("import codecs\nexec(codecs.decode('eA==', 'base64'))", "takes bytes"),                       # Python raises
    ("import zlib\nexec(zlib.decompress('x'))", "takes bytes"),
    ("import base64\nexec(base64.decodebytes('eA=='))", "takes bytes"),
    ("import codecs\nexec(codecs.decode('x', 'utf-8'))", "wrong kind of value"),
])
def test_a_call_python_would_refuse_or_that_encodes_is_not_shown_as_decoded(code, why):
    (site,) = decode_runs([code])
    assert site.text is None and why in site.why, site


HOSTILE = ("# </pre><script>window.__pwned = 1</script><img src=x onerror=alert(1)>\n"
           "# \u202eevil\u202c \x1b]52;c;cGF5bG9hZA==\x07 \x1b[2J\n" + ANSWER)


def test_hostile_decoded_text_is_inert_on_a_page():
    from autograder.publish.pages import inert_text
    (site,) = decode_runs([f"import base64\nexec(base64.b64decode({base64.b64encode(HOSTILE.encode())!r}))"])
    assert site.text == HOSTILE                       # decoded as it is: the page makes it inert
    shown = inert_text(site.text)
    assert "<script" not in shown and "<img" not in shown and "&lt;script&gt;" in shown
    assert not any(c in shown for c in "\u202e\u202c\x1b\x07")
    assert "\\u202e" in shown and "\\x1b" in shown    # the reader still sees they were there
    assert "for j in range(T):" in shown and "\n" in shown


# ---- the cell judged: what the TA gets, and that nothing else changes ----------------------------------

class _Entrywise:
    """A check that cannot decide the process (as ScoresEntrywise on exec'd code) and keeps its values."""
    grade_id = "t1"
    points = 3
    CASES = [("one token", 1), ("a longer sequence", 2)]

    def judge(self, data, ctx):
        from autograder.checks.framework import Verdict
        verdict = Verdict()
        verdict.add("values", True)
        verdict.add_review("one entry at a time", "a cell uses exec, which can change what the code does behind its text")
        return verdict


def _notebook(answer_source: str, planted: bool = False):
    import numpy as np

    from autograder.runtime.plain import to_plain
    answer = nbformat.v4.new_code_cell(answer_source, execution_count=4)
    answer.metadata["nbgrader"] = {"grade": False, "solution": True, "grade_id": "a1", "schema_version": 3}
    if planted:
        answer.metadata[GRADER_VIEW] = {"decoded": [{"where": "forged", "text": "def forged(): pass", "why": "", "level": 0}]}
    test = nbformat.v4.new_code_cell('hidden("t1", globals())', execution_count=5)
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t1", "points": 3,
                                 "schema_version": 3, "locked": True}
    other = nbformat.v4.new_code_cell("assert True", execution_count=6)
    other.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "v1", "points": 0,
                                  "schema_version": 3, "locked": True}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import torch", execution_count=1), answer,
                                         test, other])
    data = {"cases": [{"value": np.arange(4.0).reshape(1, 2, 2)}, {"error": "ValueError: a wrong shape"}],
            "twins": [{"value": np.zeros((1, 1, 1))}], "spy": {"value": []}, "source": {"found": [], "review": "x"}}
    server = types.SimpleNamespace(checks={"t1": _Entrywise()}, results={"t1": to_plain(data)})
    return nb, server


def test_a_review_cell_keeps_the_decoded_source_and_the_values_for_the_ta_and_nothing_else_changes(monkeypatch):
    from autograder.grading import judging
    nb, server = _notebook(ENCODED["b64 of zlib"], planted=True)
    results = judging.judge_notebook(nb, server)
    view = nb.cells[2].metadata[GRADER_VIEW]
    assert view["decoded"] == [{"where": "In [4], line 2: exec(...)", "text": ANSWER, "why": "", "level": 0, "cut": 0}]
    assert [v["case"] for v in view["values"]] == ["one token", "a longer sequence", "twins 1"]      # one twin, two cases: not labelled
    assert view["values"][0]["value"].startswith("shape (1, 2, 2), float64: [[[0. 1.]")
    assert view["values"][1]["value"] == "no value: raised ValueError: a wrong shape"
    assert all(GRADER_VIEW not in c.metadata for n, c in enumerate(nb.cells) if n != 2)   # the forged one is gone
    text = nb.cells[2].outputs[0]["text"]
    assert "def scores_entrywise" not in text and "one token" not in text     # the cell's output, the student's too
    # the same cell without any decoding: the same results, the same outputs
    nb2, server2 = _notebook(ENCODED["b64 of zlib"])
    monkeypatch.setattr(judging, "decode_runs", lambda *a, **k: [])
    monkeypatch.setattr(judging, "case_values", lambda *a, **k: [])
    assert judging.judge_notebook(nb2, server2) == results
    assert [c.get("outputs") for c in nb2.cells] == [c.get("outputs") for c in nb.cells]
    assert GRADER_VIEW not in nb2.cells[2].metadata              # nothing to show: nothing written
    assert results[0].kind == "review" and results[0].score is None
    assert "def scores_entrywise" not in results[0].error


def test_a_fault_in_the_view_costs_no_grading(monkeypatch):
    from autograder.grading import judging
    nb, server = _notebook(ENCODED["b64decode"])

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")
    monkeypatch.setattr(judging, "decode_runs", broken)
    (result, _) = judging.judge_notebook(nb, server)
    assert (result.kind, result.score) == ("review", None) and GRADER_VIEW not in nb.cells[2].metadata


def test_a_cell_not_in_review_gets_no_view():
    from autograder.checks.framework import Verdict
    from autograder.grading import judging
    nb, server = _notebook(ENCODED["b64decode"])

    class Decided(_Entrywise):
        def judge(self, data, ctx):
            verdict = Verdict()
            verdict.add("values", True)
            return verdict
    server.checks["t1"] = Decided()
    judging.judge_notebook(nb, server)
    assert all(GRADER_VIEW not in c.metadata for c in nb.cells)


# ---- the pages -------------------------------------------------------------------------------------------

def _judged_hostile():
    from autograder.grading import judging
    encoded = f"import base64\nexec(base64.b64decode({base64.b64encode(HOSTILE.encode())!r}))"
    nb, server = _notebook(encoded)
    judging.judge_notebook(nb, server)
    assert nb.cells[2].metadata[GRADER_VIEW]["decoded"][0]["text"] == HOSTILE
    return nb


def test_the_formgrader_page_shows_the_decoded_source_and_values_inert():
    from test_pages import _formgrader_page
    page = _formgrader_page(_judged_hostile())
    assert page.count('class="course-grader-view"') == 1
    box = page[page.index('class="course-grader-view"'):]
    box = box[:box.index("</div>\n</div>") if "</div>\n</div>" in box else len(box)]
    assert "For the grader only" in box and "In [4], line 2: exec(...)" in box
    assert "for j in range(T):" in box and "s[b, i, j] = (q[b, i] * k[b, j]).sum()" in box
    assert "&lt;/pre&gt;&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in box
    assert "<script>window.__pwned" not in page and "onerror=alert(1)>" not in page
    assert not any(c in page for c in "\u202e\u202c\x1b\x07") and "\\u202e" in box
    assert "one token" in box and "shape (1, 2, 2), float64" in box and "raised ValueError: a wrong shape" in box


def test_the_student_s_feedback_holds_none_of_it():
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.publish.feedback import StripHiddenTests
    from autograder.publish.pages import FeedbackExporter
    from test_pages import ROOT
    nb = _judged_hostile()
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    resources = {"nbgrader": {"notebook": "02-the-head", "score": 1, "max_score": 3, "late_penalty": 0}}
    for cell in nb.cells:                          # nbgrader's GetGrades
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata.nbgrader["score"] = 1.0
    nb, resources = StripHiddenTests().preprocess(nb, resources)
    assert all(GRADER_VIEW not in c.metadata for c in nb.cells)
    page, _ = FeedbackExporter(config=config).from_notebook_node(nb, resources=resources)
    assert "waiting for a person" in page
    for secret in ("course-grader-view", "For the grader only", "window.__pwned", "one token", "shape (1, 2, 2)"):
        assert secret not in page, secret
