"""ngshare as the course's exchange on its JupyterHub (course.toml `[hub] exchange = "ngshare"`).

ngshare (LibreTexts) keeps the exchange in a service of the hub instead of a folder every user may
write: a Tornado server that stores released notebooks, submissions and feedback, and checks every
request's JupyterHub token (a student reaches only their own submissions and feedback; a course's
instructors reach the course). Every user's server talks to it through ngshare-exchange, nbgrader's
exchange classes for ngshare (its ExchangeFactory in the user's nbgrader configuration).
ngshare-exchange 0.5.2 lives in the hub's environment, .hub-venv (requirements-hub.txt; 0.5.3 wants
jupyter-core below 4.11.2). ngshare 0.6.0 has an environment of its own, .ngshare-venv
(requirements-ngshare.txt, `make hub-deps`): it needs SQLAlchemy 1.x, where the hub's environment has
SQLAlchemy 2 (with 2, ngshare answers a release or a submission with success and stores nothing).
Each environment's `pip check` is clean.

On one machine (`make hub`):
  - ngshare runs as a JupyterHub managed service (SERVICE) at 127.0.0.1 on the hub's port + 3, from
    .ngshare-venv, its database and files in .hub/ngshare/ (root's alone). ngshare listens on every
    interface by its own code; the service's command (LAUNCHER) binds it to the service's loopback
    address instead.
  - The course's own commands (`make collect`, `make return-feedback`, run as root on the hub's
    machine with NBGRADER_EXCHANGE=ngshare) act as GRADER, a JupyterHub service with a token of its
    own (.hub/ngshare/grader-token, written once, readable by root alone): ngshare knows it by that
    name, as its admin and an instructor of the course. They run nbgrader's exchange commands from the
    hub's environment, where ngshare-exchange is (autograder/classroom/exchange.py).
  - The course in ngshare: created by GRADER with the instructors (course.toml) and GRADER as its
    instructors and the roster as its students, then the step released into it (`enrol`, then
    nbgrader release_assignment): once the hub is up, as ngshare is a service of the hub
    (`make hub` does it after starting the hub; `python -m autograder hub --publish` does it for a
    hub started otherwise).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
from pathlib import Path

from ..course import COURSE_ID, ENGINE_ROOT, ROOT
from ..errors import GraderError

HUB_DIR = Path(os.environ.get("COURSE_HUB_DIR") or ROOT / ".hub")  # the hub's folder (the tests: their own)
# ngshare's own environment (make hub-deps)
NGSHARE_PYTHON = Path(os.environ.get("COURSE_NGSHARE_PYTHON") or ENGINE_ROOT / ".ngshare-venv" / "bin" / "python")
DEFAULT_PORT = 8000  # course.toml [hub] port when it says none (hub.DEFAULTS)

NGSHARE = "ngshare"  # course.toml [hub] exchange, and NBGRADER_EXCHANGE for the course's commands
SERVICE = "ngshare"  # the hub's service (its URL prefix /services/ngshare/)
GRADER = f"{COURSE_ID}-grader"  # the hub service the course's commands act as in ngshare
# nbgrader's exchange classes, each ngshare-exchange's (what its configureExchange sets, as import paths)
CLASSES = {
    "exchange": "ngshare_exchange.Exchange",
    "fetch_assignment": "ngshare_exchange.ExchangeFetchAssignment",
    "fetch_feedback": "ngshare_exchange.ExchangeFetchFeedback",
    "release_assignment": "ngshare_exchange.ExchangeReleaseAssignment",
    "release_feedback": "ngshare_exchange.ExchangeReleaseFeedback",
    "list": "ngshare_exchange.ExchangeList",
    "submit": "ngshare_exchange.ExchangeSubmit",
    "collect": "ngshare_exchange.ExchangeCollect",
}


class NgshareError(GraderError, RuntimeError):
    """ngshare did not answer as asked; the message says what it said."""


def chosen(conf: dict) -> bool:
    """Whether course.toml's [hub] asks for ngshare."""
    return str(conf.get("exchange", "")).strip() == NGSHARE


def port(conf: dict) -> int:
    return int(conf["port"]) + 3


def url(conf: dict) -> str:
    """Where ngshare answers, for every user's server and the course's commands (on the hub's machine)."""
    return f"http://127.0.0.1:{port(conf)}/services/{SERVICE}"


def course_commands() -> tuple[str, Path, Path]:
    """(ngshare's URL, the hub's folder, the hub's Python) for the course's commands on the hub's
    machine: the hub of course.toml's [hub], its environment .hub-venv ($COURSE_HUB_PYTHON names another)."""
    from ..term import load_term

    python = Path(os.environ.get("COURSE_HUB_PYTHON") or ENGINE_ROOT / ".hub-venv" / "bin" / "python")
    if not python.exists():
        raise NgshareError(f"ngshare's client is in the hub's environment, and there is no {python}: make hub-deps")
    return url({"port": load_term().get("hub", {}).get("port", DEFAULT_PORT)}), HUB_DIR, python


def folder(hub_dir: Path) -> Path:
    return Path(hub_dir) / "ngshare"


def token_file(hub_dir: Path) -> Path:
    return folder(hub_dir) / "grader-token"


def ensure_token(hub_dir: Path) -> Path:
    """GRADER's token, written once (root's alone); the hub's configuration reads it when it starts."""
    path = token_file(hub_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    if not path.is_file() or not path.read_text(encoding="utf-8").strip():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(secrets.token_hex(32) + "\n")
    path.chmod(0o600)
    return path


def client_config(ngshare_url: str) -> str:
    """The lines of an nbgrader configuration that make ngshare its exchange."""
    lines = [f"c.ExchangeFactory.{name} = {path!r}" for name, path in CLASSES.items()]
    return "\n".join(lines + [f"c.Exchange._ngshare_url = {ngshare_url!r}"]) + "\n"


def configure_client(c, ngshare_url: str) -> None:
    """client_config applied to a traitlets configuration (the course's nbgrader_config.py)."""
    for name, path in CLASSES.items():
        setattr(c.ExchangeFactory, name, path)
    c.Exchange._ngshare_url = ngshare_url


# The service's command: ngshare's main, its server bound to the address of its service URL (loopback)
# where ngshare's own code binds every interface. Run by ngshare's environment, where the course's
# package is not: `python -c LAUNCHER <ngshare's options>`.
LAUNCHER = (
    "import os, sys; from urllib.parse import urlparse; from tornado.httpserver import HTTPServer; "
    "host = urlparse(os.environ['JUPYTERHUB_SERVICE_URL']).hostname; listen = HTTPServer.listen; "
    "HTTPServer.listen = lambda self, port, address='', **kw: listen(self, port, host, **kw); "
    "from ngshare.ngshare import main; main(sys.argv[1:])"
)


def service_config(hub_dir: Path, conf: dict, python: Path | None = None) -> list[str]:
    """jupyterhub_config.py's lines that run ngshare as a managed service (from its environment, or
    `python`'s), with GRADER beside it."""
    data = folder(hub_dir)
    command = [
        str(python or NGSHARE_PYTHON),
        "-c",
        LAUNCHER,
        "--admins",
        GRADER,
        "--database",
        f"sqlite:///{data / 'ngshare.db'}",
        "--storage",
        str(data / "files"),
    ]
    return [
        "# nbgrader's exchange: ngshare, a service of the hub (autograder/classroom/ngshare.py), its data in",
        f"# {data}; the course's commands act in it as the service {GRADER!r} with the token beside it.",
        "c.JupyterHub.services = [",
        f"    {{'name': {SERVICE!r}, 'url': 'http://127.0.0.1:{port(conf)}', 'command': {command!r}}},",
        f"    {{'name': {GRADER!r}, 'api_token': open({str(token_file(hub_dir))!r}).read().strip()}},",
        "]",
    ]


# ---- the course's commands in ngshare (as GRADER) -----------------------------------------------


def client_env(hub_dir: Path) -> dict[str, str]:
    """What nbgrader's ngshare-exchange needs to act as GRADER: its token and name."""
    path = token_file(hub_dir)
    if not path.is_file():
        raise NgshareError(f"no {path}: the hub was not set up with ngshare (course.toml [hub] exchange, make hub)")
    try:
        token = path.read_text(encoding="utf-8").strip()
    except PermissionError:
        raise NgshareError(f"{path} is root's: the course's commands on ngshare are run by root") from None
    return {"JUPYTERHUB_API_TOKEN": token, "JUPYTERHUB_USER": GRADER}


class Client:
    """ngshare's REST API as GRADER."""

    def __init__(self, ngshare_url: str, hub_dir: Path):
        self.url = ngshare_url.rstrip("/")
        self.token = client_env(hub_dir)["JUPYTERHUB_API_TOKEN"]

    def call(self, method: str, path: str, ok: tuple[int, ...] = (200,), **data) -> dict:
        import urllib.error
        import urllib.parse
        import urllib.request

        body = urllib.parse.urlencode(data).encode() if data and method != "GET" else None
        query = "?" + urllib.parse.urlencode(data) if data and method == "GET" else ""
        request = urllib.request.Request(
            self.url + urllib.parse.quote(path) + query,
            data=body,
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                status, text = answer.status, answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as err:
            status, text = err.code, err.read().decode("utf-8", "replace")
        except OSError as err:
            raise NgshareError(f"ngshare at {self.url} does not answer ({err}): is the hub running?") from None
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {"success": False, "message": text[:300]}
        if status not in ok:
            raise NgshareError(f"ngshare {method} {path}: HTTP {status}: {answer.get('message', text[:300])}")
        return answer

    def enrol(self, instructors: list[str], students: dict[str, str]) -> None:
        """The course in ngshare with GRADER and `instructors` as its instructors and `students`
        (account -> name) as its students; made when missing, the students added when missing."""
        courses = self.call("GET", "/courses").get("courses", [])
        if COURSE_ID not in courses:
            self.call("POST", f"/course/{COURSE_ID}", instructors=json.dumps([GRADER, *instructors]))
        else:
            known = {i["username"] for i in self.call("GET", f"/instructors/{COURSE_ID}")["instructors"]}
            for name in sorted(set(instructors) - known):
                self.call("POST", f"/instructor/{COURSE_ID}/{name}", first_name=name, last_name="", email="")
        if students:
            roster = [
                {"username": sid, "first_name": name, "last_name": "", "email": ""}
                for sid, name in sorted(students.items())
            ]
            answer = self.call("POST", f"/students/{COURSE_ID}", students=json.dumps(roster))
            refused = [s for s in answer.get("status", []) if not s.get("success")]
            if refused:
                raise NgshareError(f"ngshare did not take these students: {refused}")

    def released(self, step: str) -> dict[str, str] | None:
        """file path -> md5 of the step as released in ngshare, or None when it is not."""
        if step not in self.call("GET", f"/assignments/{COURSE_ID}").get("assignments", []):
            return None
        files = self.call("GET", f"/assignment/{COURSE_ID}/{step}", list_only="true")["files"]
        return {f["path"]: f["checksum"] for f in files}

    def submissions(self, step: str, student: str) -> list[str]:
        """The time stamps of a student's submissions of the step, as ngshare writes them."""
        answer = self.call("GET", f"/submissions/{COURSE_ID}/{step}/{student}", ok=(200, 404))
        return [s["timestamp"] for s in answer.get("submissions", [])]

    def download(self, step: str, student: str, timestamp: str, dest: Path) -> Path:
        """One submission's files -> dest, with its timestamp.txt (as nbgrader's collect writes it)."""
        files = self.call("GET", f"/submission/{COURSE_ID}/{step}/{student}", timestamp=timestamp)["files"]
        dest.mkdir(parents=True, exist_ok=True)
        for entry in files:
            path = (dest / entry["path"]).resolve()
            if dest.resolve() not in path.parents:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(base64.b64decode(entry["content"]))
        (dest / "timestamp.txt").write_text(timestamp, encoding="utf-8")
        return dest


def md5(path: Path) -> str:
    """ngshare's checksum of a file."""
    return hashlib.md5(Path(path).read_bytes()).hexdigest()
