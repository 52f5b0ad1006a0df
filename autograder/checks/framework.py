"""How a hidden test works: a probe in the student's kernel, a judge in the grader.

A hidden test cell is one line, `hidden("<grade_id>", globals())`. It looks up the check
registered under that grade id and then:

* run by nbgrader or in JupyterLab (no grader around): probes the student's answer and
  judges it right there, prints what passed and what failed, and returns the points earned
  (nbgrader reads a number returned by a test cell as partial credit);
* run by `make grade` (the environment variable GRADER_SOCKET is set): only probes, and
  hands the plain-data result to the grader, which judges it outside the student's kernel.
  Nothing the student's code patches (torch.allclose, AssertionError, builtins, the helpers
  themselves) can change a verdict, and the heads a student's checks are tried on are served
  by the grader under opaque names.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
from dataclasses import dataclass, field
from typing import Any

from .plain import NotPlain, from_plain, to_plain

GRADER_SOCKET = "GRADER_SOCKET"
MIME = "application/vnd.dlcourse.probe+json"
REGISTRY: dict[str, "Check"] = {}


@dataclass
class Part:
    """One independently scored property of an answer."""
    name: str
    ok: bool
    message: str = ""      # shown when the part fails: what is wrong and what the student most likely did
    weight: float = 1.0


@dataclass
class Verdict:
    parts: list[Part] = field(default_factory=list)

    def add(self, name: str, ok: bool, message: str = "", weight: float = 1.0) -> bool:
        self.parts.append(Part(name, bool(ok), message, weight))
        return bool(ok)

    @property
    def fraction(self) -> float:
        total = sum(p.weight for p in self.parts)
        return sum(p.weight for p in self.parts if p.ok) / total if total else 0.0

    def failures(self) -> list[Part]:
        return [p for p in self.parts if not p.ok]

    def report(self, points: float) -> str:
        earned = round(points * self.fraction, 2)
        lines = [f"Hidden tests: {earned:g} of {points:g} points."]
        for p in self.parts:
            lines.append(f"  {'✓' if p.ok else '✗'} {p.name}" + ("" if p.ok or not p.message else f": {p.message}"))
        return "\n".join(lines)


class Check:
    """A hidden test. Subclasses set grade_id and points, and write probe and judge."""
    grade_id: str = ""
    points: float = 0.0

    def probe(self, ns: dict, ctx) -> Any:
        """In the student's kernel: call the student's code on the check's inputs, return plain data."""
        raise NotImplementedError

    def judge(self, data: Any, ctx) -> Verdict:
        """In the grader: score the plain data the probe returned. Never runs student code."""
        raise NotImplementedError


def register(cls):
    check = cls()
    if not check.grade_id or check.points <= 0:
        raise ValueError(f"{cls.__name__} needs a grade_id and positive points")
    if check.grade_id in REGISTRY:
        raise ValueError(f"two checks use grade_id {check.grade_id!r}")
    REGISTRY[check.grade_id] = check
    return cls


def load_all() -> dict[str, Check]:
    """Import every check module of this package (each registers its checks)."""
    from . import __path__ as pkg_path
    for info in pkgutil.iter_modules(pkg_path):
        if info.name.startswith("step"):
            importlib.import_module(f"{__package__}.{info.name}")
    return REGISTRY


# ---- helpers for probes (kernel side) ----------------------------------------------------

class Missing(Exception):
    pass


def student(ns: dict, name: str):
    """The student's object called `name`, or Missing with a message saying why not."""
    if name not in ns:
        raise Missing(f"`{name}` is not defined: run the cell that defines it (or write it)")
    return ns[name]


def attempt(fn, *args, **kwargs) -> dict:
    """Call student code; return {'value': result} if the result is plain data,
    else {'error': 'Type: message'}. One failing call never spoils the others."""
    try:
        result = fn(*args, **kwargs)
        to_plain(result)
    except Missing as err:
        return {"error": f"Missing: {err}"}
    except NotPlain as err:
        return {"error": f"NotPlain: {err}"}
    except (Exception, SystemExit) as err:  # a student's error is an answer, not a crash
        return {"error": f"{type(err).__name__}: {str(err)[:300]}"}
    return {"value": result}


def outcome(fn, *args, **kwargs) -> str:
    """Run one of the student's checks: 'returned', 'assertion: msg' or 'crashed: Type: msg'."""
    try:
        fn(*args, **kwargs)
    except AssertionError as err:
        return f"assertion: {str(err)[:200]}"
    except (Exception, SystemExit) as err:
        return f"crashed: {type(err).__name__}: {str(err)[:200]}"
    return "returned"


# ---- helpers for judges (grader side) ----------------------------------------------------

def unpack(entry) -> tuple[Any, str | None]:
    """(value, None) for a probe result that holds a value, (None, reason) otherwise."""
    if not isinstance(entry, dict):
        return None, "no result reached the grader"
    if "error" in entry:
        err = str(entry["error"])
        if err.startswith("NotImplementedError"):
            return None, "raises NotImplementedError: the answer cell is not filled in yet"
        if err.startswith("Missing: "):
            return None, err[len("Missing: "):]
        if err.startswith("NotPlain: "):
            return None, err[len("NotPlain: "):]
        return None, f"raised {err}"
    if "value" not in entry:
        return None, "no result reached the grader"
    return entry["value"], None


def unwritten(entries) -> str:
    """The reason, if every call of the answer raised NotImplementedError (the cell is not filled in)."""
    reasons = [unpack(e)[1] for e in entries]
    if reasons and all(r and r.startswith("raises NotImplementedError") for r in reasons):
        return reasons[0]
    return ""


def unwritten_verdict(reason: str) -> Verdict:
    """The one verdict for an answer cell left as released: nothing else can be judged."""
    verdict = Verdict()
    verdict.add("the answer is written", False, reason)
    return verdict


# ---- the entry point hidden test cells call ---------------------------------------------

def run_probe(check: Check, ns: dict, ctx) -> Any:
    try:
        return to_plain(check.probe(ns, ctx))
    except Missing as err:
        return {"__missing__": str(err)}


def judge_data(check: Check, data: Any, ctx) -> Verdict:
    if isinstance(data, dict) and "__missing__" in data:
        verdict = Verdict()
        verdict.add("answer present", False, str(data["__missing__"]))
        return verdict
    try:
        return check.judge(from_plain(data), ctx)
    except Exception as err:  # malformed data from a tampered kernel: no points, a clear reason
        verdict = Verdict()
        verdict.add("answer readable", False, f"the grader could not read this answer ({type(err).__name__})")
        return verdict


def hidden(grade_id: str, ns: dict):
    load_all()
    check = REGISTRY[grade_id]
    socket_path = os.environ.get(GRADER_SOCKET)
    if socket_path:
        from .contexts import RemoteContext
        from IPython.display import display
        data = run_probe(check, ns, RemoteContext(socket_path))
        display({MIME: {"grade_id": grade_id, "data": data}}, raw=True)
        print("Recorded for the grader; your points and the reasons appear in your feedback.")
        return None
    from .contexts import LocalContext
    ctx = LocalContext()
    verdict = judge_data(check, run_probe(check, ns, ctx), ctx)
    print(verdict.report(check.points))
    return round(check.points * verdict.fraction, 2)
