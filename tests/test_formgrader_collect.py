"""The formgrader's Collect on the course's hub, without a hub: what `make hub` prepares for it (the
exchange's inbound folder listed by the instructors' group), how it copies (a collected submission not
left writable by every account, as nbgrader's copy of the exchange's folder would be) and what comes
after it (`make return-feedback` returns the feedback of submissions the formgrader collected into the
grading home's submitted/, where the grader grades them in place, and never feedback about an older
submission); on a hub whose exchange is ngshare, the instructors' formgrader collects with the course's
collect from ngshare (nothing outside a submission's folder, nothing writable by every account), and
return-feedback returns what it collected into submitted/ when ngshare holds that submission.
The whole flow in Chromium on a real hub, on either exchange: tests/browser/test_hub_flow.py."""
from __future__ import annotations

import grp
import os
import stat

from autograder.classroom import exchange
from autograder.classroom.exchange import SECRET, handed_in, return_feedback
from autograder.classroom.hub import share_exchange_inbound
from autograder.course import COURSE_ID
from conftest import STEP

EARLY, LATER = "2026-12-05 10:00:00.000000 UTC", "2026-12-05 11:30:00.000000 UTC"
NOTEBOOK = "01-on-paper.ipynb"


def submission(folder, stamp: str, secret: str | None, notebook: bytes = b"{}") -> None:
    folder.mkdir(parents=True)
    (folder / NOTEBOOK).write_bytes(notebook)
    (folder / "timestamp.txt").write_text(stamp)
    if secret is not None:
        (folder / SECRET).write_text(secret)


def graded(home, student: str, stamp: str) -> None:
    """The feedback the grader wrote for a submission with time `stamp`."""
    folder = home / "feedback" / student / STEP
    folder.mkdir(parents=True)
    (folder / "01-on-paper.html").write_text("<html></html>")
    (folder / "timestamp.txt").write_text(stamp)


def five_handed_in(home, secrets: bool) -> None:
    """Five students' submissions and feedback in a grading home, the cases return-feedback tells apart.
    secrets: each submission carries the secret the folder exchange's collect copies along (ngshare's
    does not)."""
    secret = (lambda text: text) if secrets else (lambda text: None)
    # ann: collected by the formgrader into submitted/, graded there
    submission(home / "submitted" / "ann" / STEP, EARLY, secret("ann-secret"))
    graded(home, "ann", EARLY)
    # bob: the formgrader collected a newer submission since the grading: its feedback is about the old one
    submission(home / "submitted" / "bob" / STEP, LATER, secret("bob-secret"))
    graded(home, "bob", EARLY)
    # cat: `make collect`, then graded (submitted/ holds what the grader kept, no secret)
    submission(home / "collected" / "cat" / STEP, EARLY, secret("cat-secret"), b'{"cat": 1}')
    submission(home / "submitted" / "cat" / STEP, EARLY, None, b'{"cat": 1}')
    graded(home, "cat", EARLY)
    # dan: `make collect` first, then the formgrader's Collect of a newer submission, graded
    submission(home / "collected" / "dan" / STEP, EARLY, secret("dan-old-secret"))
    submission(home / "submitted" / "dan" / STEP, LATER, secret("dan-secret"), b'{"dan": 2}')
    graded(home, "dan", LATER)
    # eve: graded from an LMS's download (the grader wrote its time), never through the exchange
    submission(home / "submitted" / "eve" / STEP, EARLY, None)
    graded(home, "eve", EARLY)


def test_return_feedback_returns_what_the_formgrader_collected_and_graded_in_place(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_EXCHANGE", str(tmp_path / "exchange"))
    released = []
    monkeypatch.setattr(exchange, "nbgrader", lambda *args: released.append(args) or "")
    monkeypatch.setattr("autograder.grading.grade.refresh_stale_feedback", lambda step: [])
    five_handed_in(home, secrets=True)

    assert [p.relative_to(home).parts[0] for p in handed_in(home, STEP)] == [
        "submitted", "submitted", "collected", "submitted"]                # ann, bob, cat, dan
    assert return_feedback(STEP) == ["ann", "cat", "dan"]
    assert released == [("release_feedback", STEP, f"--student={sid}") for sid in ("ann", "cat", "dan")]
    for sid, secret in (("ann", "ann-secret"), ("cat", "cat-secret"), ("dan", "dan-secret")):
        assert (home / "feedback" / sid / STEP / SECRET).read_text() == secret
    assert not (home / "feedback" / "bob" / STEP / SECRET).exists()
    out = capsys.readouterr().out
    assert "bob: the newest submission is not graded yet" in out
    assert "1 graded students did not hand in through the exchange" in out and "\n    eve\n" in out


def test_the_exchange_inbound_is_listed_by_the_instructors_group_and_written_by_everyone(tmp_path):
    """nbgrader's release leaves inbound/ to its owner alone to list (2733): `make hub` releases as root,
    and the instructor's formgrader, running as the instructor, could not collect. share_exchange_inbound
    gives it to the instructors' group, as nbgrader's groupshared mode makes it."""
    inbound = tmp_path / "exchange" / COURSE_ID / "inbound"
    assert share_exchange_inbound(tmp_path / "exchange") is None           # nothing released yet
    inbound.mkdir(parents=True)
    inbound.chmod(0o2733)
    group = grp.getgrgid(os.getegid()).gr_name
    assert share_exchange_inbound(tmp_path / "exchange", group) == inbound
    info = inbound.stat()
    assert info.st_gid == os.getegid() and stat.S_IMODE(info.st_mode) == 0o2773, oct(info.st_mode)
    assert not info.st_mode & stat.S_IROTH and info.st_mode & stat.S_IWOTH


def test_a_collected_submission_is_not_left_writable_by_everyone(tmp_path, monkeypatch):
    """nbgrader's submit leaves the submission's folder in the exchange 0777 and its collect copies that
    mode: the course's collect (make collect, the formgrader's Collect) takes the write right from others."""
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.classroom.collecting import close_to_others
    from conftest import ROOT
    folder = tmp_path / "submitted" / "ann" / STEP
    folder.mkdir(parents=True)
    (folder / NOTEBOOK).write_text("{}")
    folder.chmod(0o777)
    (folder / NOTEBOOK).chmod(0o666)
    (folder / "timestamp.txt").write_text(EARLY)
    (folder / "timestamp.txt").chmod(0o4757)                  # setuid and others' write: neither is kept
    close_to_others(str(folder))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o775
    assert stat.S_IMODE((folder / NOTEBOOK).stat().st_mode) == 0o664
    assert stat.S_IMODE((folder / "timestamp.txt").stat().st_mode) == 0o755
    monkeypatch.setenv("NBGRADER_EXCHANGE", str(tmp_path / "exchange"))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.ExchangeFactory.collect == "autograder.classroom.collecting.CourseCollect"


class HeldInNgshare:
    """The hub's ngshare as return-feedback asks it: each student's submissions' time stamps."""

    def __init__(self, held: dict[str, list[str]]):
        self.held, self.asked = held, []

    def submissions(self, step, student):
        self.asked.append(student)
        return self.held.get(student, [])


def test_on_ngshare_return_feedback_returns_what_the_formgrader_collected_and_graded_in_place(
        tmp_path, monkeypatch, capsys):
    """On a hub whose exchange is ngshare the formgrader's Collect writes no submission secret: a folder
    in submitted/ is the formgrader's when ngshare holds a submission of that student at its time."""
    home = tmp_path / "home"
    monkeypatch.setenv("GRADER_HOME", str(home))
    monkeypatch.setenv("NBGRADER_EXCHANGE", "ngshare")
    released = []
    monkeypatch.setattr(exchange, "nbgrader", lambda *args: released.append(args) or "")
    monkeypatch.setattr("autograder.grading.grade.refresh_stale_feedback", lambda step: [])
    ngshare = HeldInNgshare({"ann": [EARLY], "bob": [EARLY, LATER], "cat": [EARLY], "dan": [EARLY, LATER]})
    monkeypatch.setattr(exchange, "ngshare_client", lambda: ngshare)
    five_handed_in(home, secrets=False)          # ngshare's Collect writes no submission secret

    assert [p.relative_to(home).parts[0] for p in handed_in(home, STEP)] == [
        "submitted", "submitted", "collected", "submitted"]                # ann, bob, cat, dan
    assert return_feedback(STEP) == ["ann", "cat", "dan"]
    assert released == [("release_feedback", STEP, f"--student={sid}", f"--course={COURSE_ID}")
                        for sid in ("ann", "cat", "dan")]
    assert not any((home / "feedback" / sid / STEP / SECRET).exists() for sid in ("ann", "cat", "dan"))
    assert sorted(set(ngshare.asked)) == ["ann", "bob", "cat", "dan", "eve"]
    out = capsys.readouterr().out
    assert "bob: the newest submission is not graded yet" in out
    assert "1 graded students did not hand in through the exchange" in out and "\n    eve\n" in out


def test_the_instructors_formgrader_on_an_ngshare_hub_collects_with_the_course_collect(tmp_path):
    """The instructors' nbgrader configuration on a hub whose exchange is ngshare: ngshare-exchange's
    classes, then the course's collect from ngshare in place of its own (read after); the students' names
    nothing of the grader. On the folder exchange, nbgrader_config.py's CourseCollect stays."""
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.classroom import hub, ngshare
    from autograder.classroom.collecting import NGSHARE_COLLECT

    conf = {**hub.DEFAULTS, "exchange": ngshare.NGSHARE}
    for role, students in (("instructors", False), ("students", True)):
        hub.user_config(tmp_path / role, conf, students=students)
    for role in ("instructors", "students"):
        text = (tmp_path / role / "nbgrader_config.py").read_text()
        text = text.replace("load_subconfig(", "(lambda path: None)(").replace(
            "from autograder.course import share_with_home_group\nshare_with_home_group()\n", "")
        (tmp_path / role / "read.py").write_text(text)
    instructors = PyFileConfigLoader("read.py", path=str(tmp_path / "instructors")).load_config()
    assert instructors.ExchangeFactory.collect == NGSHARE_COLLECT
    assert instructors.ExchangeFactory.submit == "ngshare_exchange.ExchangeSubmit"
    students = PyFileConfigLoader("read.py", path=str(tmp_path / "students")).load_config()
    assert students.ExchangeFactory.collect == "ngshare_exchange.ExchangeCollect"
    assert NGSHARE_COLLECT not in (tmp_path / "students" / "nbgrader_config.py").read_text()
    folder = {**hub.DEFAULTS, "exchange": str(tmp_path / "exchange")}
    hub.user_config(tmp_path / "folder", folder, students=False)
    assert "ExchangeFactory.collect" not in (tmp_path / "folder" / "nbgrader_config.py").read_text()


def test_the_course_collect_from_ngshare_keeps_files_inside_the_submission_and_closes_them_to_others(tmp_path):
    """NgshareCollect (in the hub's environment, where ngshare-exchange is) given ngshare's answer: a path
    out of the submission's folder is left out, nothing is left writable by every account."""
    import subprocess

    from autograder.classroom.collecting import inside
    from hub import HUB_PYTHON, hub_problem
    from conftest import ROOT

    assert inside("01-on-paper.ipynb") and inside("data/x.csv") and inside("./a/../b.txt")
    assert not any(inside(p) for p in ("", ".", "..", "../x", "/etc/passwd", "a/../../x", "..\\x"))
    if not HUB_PYTHON.exists():
        import pytest
        pytest.skip(hub_problem() or "no hub environment")
    dest = tmp_path / "submitted" / "ann" / STEP
    probe = (
        "import base64, os, sys\n"
        "os.umask(0)\n"
        "import logging; logging.basicConfig()\n"
        "from autograder.classroom.collecting import NgshareCollect\n"
        "files = [{'path': p, 'content': base64.encodebytes(b'{}').decode()}\n"
        "         for p in ('01-on-paper.ipynb', '../escaped.txt', '/tmp/absolute.txt', 'timestamp.txt')]\n"
        "NgshareCollect(log=logging.getLogger('collect')).do_copy(files, sys.argv[1])\n")
    done = subprocess.run([str(HUB_PYTHON), "-c", probe, str(dest)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "USER": os.environ.get("USER", "root"),
                                            "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in dest.iterdir()) == ["01-on-paper.ipynb", "timestamp.txt"]
    assert not (tmp_path / "submitted" / "ann" / "escaped.txt").exists()
    assert "outside the submission's folder" in done.stderr
    for path in [dest, *dest.iterdir()]:
        assert not path.stat().st_mode & stat.S_IWOTH, (path, oct(path.stat().st_mode))
