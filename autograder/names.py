"""Student ids from the names submissions arrive under, for a whole class at once.

`student_id(raw)`: the id one name stands for (letters and digits of every script, one Unicode
form, other characters as `-`). `assign_ids(raws)`: every name of a class -> its id, or the reason
it gets none, so that no student is merged with another and none loses their id because someone
else chose a near name:

* a name written exactly as its id (`ada`, `Renée` in NFC) keeps it, whoever else is in the class;
* a name that had to be rewritten into an id (`ada.`, `bob smith`, a right-to-left override before
  `bea`) gets it only when no other name claims the same id; else it is refused (reported, not
  graded under any name), and the exact owner is graded;
* a name that differs from an id only in its Unicode form (`Renée` decomposed, NFD, as a Mac
  writes it) is that id when it is alone; beside the same name in the composed form it is another
  student, graded apart under the id with `-nfd` (or `-u<6 hex digits>`) added;
* ids that a reader cannot tell apart (`суd` in Cyrillic and `cyd` in Latin, `Alice` and `alice`,
  `ﬁx` and `fix`, `l1` and `Il`: Unicode TR39's confusable skeletons, from the pinned package
  `confusable-homoglyphs`'s data, after case folding and compatibility forms) are graded apart,
  never merged, and reported as a pair (`lookalikes`); reports show such ids with their
  characters' code points (`shown_id`).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

from .errors import GraderError

MAX_ID_CHARS = 64  # nbgrader's gradebook holds ids of up to 128 characters
MAX_ID_BYTES = 128  # the id is a folder name: well under a file system's 255 bytes


class UnusableId(GraderError, ValueError):
    """A name that cannot be a student id; the message says why."""


def student_id(raw: str) -> str:
    """The student id that a folder's, zip's or (without its notebook name) file's name stands for.

    Letters and digits of every script are kept, in Unicode's composed form (NFC); each run of
    other characters (spaces, punctuation, symbols) becomes one `-`; `-`, `_`, `.` and `@` at either
    end are dropped. `Zoë` stays `Zoë`, `李雷` stays `李雷`, `ü ñ` becomes `ü-ñ`, `Bob Smith` becomes
    `Bob-Smith`; an ASCII id is what it has always been. The id is then safe as a folder name, a
    gradebook key, a CSV field and a shell word (it never starts with `-`, `=`, `+` or `@`).
    Raises UnusableId for a name that holds control characters, a path separator or bytes that are
    not UTF-8, that is left with no letter or digit, or that is too long."""
    if not isinstance(raw, str):
        raise UnusableId("it is not text")
    name = unicodedata.normalize("NFC", raw)
    if any(unicodedata.category(c) == "Cs" for c in name):
        raise UnusableId("it is not UTF-8 text (the name was written in another encoding)")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise UnusableId("it holds control characters")
    if "/" in name or "\\" in name:
        raise UnusableId("it holds a path separator ('/' or '\\')")
    kept = "".join(c if _id_char(c) else "\0" for c in name)
    sid = re.sub("\0+", "-", kept).strip("-_.@")
    if not sid:
        raise UnusableId("it holds no letter or digit")
    if len(sid) > MAX_ID_CHARS or len(sid.encode("utf-8")) > MAX_ID_BYTES:
        raise UnusableId(
            f"it is too long for an id ({len(sid)} characters; at most {MAX_ID_CHARS}, {MAX_ID_BYTES} bytes in UTF-8)"
        )
    return sid


def _id_char(c: str) -> bool:
    """Letters (with their combining marks: Devanagari, Arabic, decomposed accents), decimal digits,
    and `_ . @ -`."""
    return c in "_.@-" or unicodedata.category(c)[0] in "LM" or unicodedata.category(c) == "Nd"


def id_key(sid: str) -> str:
    """Ids equal under this key cannot be told apart everywhere an id is used: `Alice` and `alice`
    are one folder on a case-insensitive file system (macOS, Windows shares), `ﬁ` looks like `fi`."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", sid).casefold())


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """character -> the representative of its class of look-alikes (single characters), from the
    confusables data of `confusable-homoglyphs` (Unicode's confusables.txt, TR39), joined into
    classes: a character and every homoglyph listed for it share one representative."""
    from confusable_homoglyphs.confusables import confusables_data

    parent: dict[str, str] = {}

    def find(c: str) -> str:
        while parent.get(c, c) != c:
            parent[c] = parent.get(parent[c], parent[c])
            c = parent[c]
        return c

    for char, glyphs in confusables_data.items():
        for glyph in glyphs:
            other = glyph["c"].strip("\u200e\u200f")  # the data marks right-to-left glyphs
            if len(char) != 1 or len(other) != 1:
                continue
            a, b = find(char), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {c: find(c) for c in list(parent)}


def skeleton(sid: str, fold: bool = True) -> str:
    """What an id looks like (TR39's skeleton: each character replaced by the representative of its
    look-alikes; with `fold`, of its case-folded compatibility form): ids with the same skeleton
    cannot be told apart by a reader."""
    prototypes = _prototypes()
    text = unicodedata.normalize("NFD", id_key(sid) if fold else unicodedata.normalize("NFKC", sid))
    return unicodedata.normalize("NFD", "".join(prototypes.get(c, c) for c in text))


def shown_id(sid: str) -> str:
    """An id as reports show it where it must not be mistaken for a look-alike: its characters
    beyond ASCII named by code point (`суd [U+0441 U+0443]`)."""
    extra = [f"U+{ord(c):04X}" for c in sid if ord(c) > 0x7E]
    return f"{sid} [{' '.join(extra)}]" if extra else sid


def assign_ids(raws, notes: dict | None = None) -> dict[str, str | UnusableId]:
    """Each raw name of a class -> its student id, or UnusableId saying why it gets none (see the
    module's docstring). `notes` (a dict, optional) gets raw name -> what the reports say about a
    name graded apart from its twin in another Unicode form."""
    out: dict[str, str | UnusableId] = {}
    claims: dict[str, list[str]] = {}  # id -> the raw names that become it
    for raw in sorted(set(raws)):
        try:
            out[raw] = student_id(raw)
        except UnusableId as err:
            out[raw] = err
            continue
        claims.setdefault(out[raw], []).append(raw)
    taken = set(claims)
    for sid, names in claims.items():
        if len(names) < 2:
            continue
        exact = [n for n in names if n == sid]
        forms = [n for n in names if n != sid and unicodedata.normalize("NFC", n) == sid]
        rewritten = [n for n in names if unicodedata.normalize("NFC", n) != sid]
        owner = exact[0] if exact else None
        if owner is None and forms and not rewritten:
            owner = forms.pop(0)  # two forms of the name, neither written as the id
        for raw in forms:  # the same letters in another Unicode form: another student
            out[raw] = _twin_id(sid, raw, taken)
            taken.add(out[raw])
            if notes is not None:
                owner_note = f"{owner!r} ({_form(owner)})" if owner else repr(sid)
                notes[raw] = (
                    f"the name {raw!r} ({_form(raw)}) is written like {owner_note} but in other bytes: "
                    f"two students, graded apart as {out[raw]!r} and {sid!r}, never merged; check "
                    "that each is the student it claims to be"
                )
        for raw in rewritten:
            others = [n for n in names if n != raw]
            if owner is not None:
                why = (
                    f"it would become the id {sid!r}, which {owner!r} is written as; so that nobody is "
                    "merged with another student, and nobody loses their id to a look-alike name, "
                    f"{owner!r} keeps it"
                )
            else:
                why = (
                    f"it and {_listed(others)} would become the same id {sid!r}, and two students must never be merged"
                )
            out[raw] = UnusableId(why)
    return out


def _twin_id(sid: str, raw: str, taken: set[str]) -> str:
    """The id of a name written like `sid` in another Unicode form, beside `sid` itself."""
    tag = (
        "nfd"
        if raw == unicodedata.normalize("NFD", raw)
        else "u" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    )
    twin = f"{sid[: MAX_ID_CHARS - len(tag) - 1]}-{tag}"
    number = 2
    while twin in taken:
        twin = f"{sid[: MAX_ID_CHARS - len(tag) - 4]}-{tag}{number}"
        number += 1
    return twin


def lookalikes(ids) -> list[list[str]]:
    """Groups (two or more) of distinct ids a reader cannot tell apart: same skeleton, or the same
    letters in another Unicode form or case."""
    parent = {sid: sid for sid in set(ids)}

    def find(sid: str) -> str:
        while parent[sid] != sid:
            sid = parent[sid]
        return sid

    seen: dict[tuple[int, str], str] = {}
    for sid in sorted(parent):
        # as written (`l1` and `Il`: TR39 itself), and case-folded (`Alice` and `alice`, `суd` and `CYD`)
        for key in ((0, skeleton(sid, fold=False)), (1, skeleton(sid))):
            if key in seen:
                a, b = find(seen[key]), find(sid)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            else:
                seen[key] = sid
    groups: dict[str, list[str]] = {}
    for sid in sorted(parent):
        groups.setdefault(find(sid), []).append(sid)
    return [g for _, g in sorted(groups.items()) if len(g) > 1]


def lookalike_note(sid: str, group: list[str], raws: dict[str, list[str]] | None = None) -> str:
    """What the reports say about an id that looks like others in the class."""
    others = [o for o in group if o != sid]
    written = ""
    if raws and any(r != sid for r in raws.get(sid, [])):
        written = f" (from the name{'s' * (len(raws[sid]) > 1)} {_listed(raws[sid])})"
    return (
        f"graded as {shown_id(sid)!r}{written}, apart from the look-alike "
        f"{_listed(shown_id(o) for o in others)}: two students, never merged; check that each name "
        "is the student it claims to be"
    )


def _form(raw: str) -> str:
    if raw == unicodedata.normalize("NFC", raw):
        return "composed, NFC"
    if raw == unicodedata.normalize("NFD", raw):
        return "decomposed, NFD"
    return "code points " + " ".join(f"U+{ord(c):04X}" for c in raw)


def _listed(names) -> str:
    return ", ".join(repr(n) for n in names)
