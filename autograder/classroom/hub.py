"""The course on a JupyterHub on one machine (`make hub`): local users, nbgrader's exchange, JupyterLab.

Everything comes from two files of the course: course.toml's `[hub]` table (the port, the instructors,
the exchange, the address) and roster.csv (the students: each roster id is a local account). The
exchange is nbgrader's folder exchange in the folder `[hub] exchange` names, or, with
`exchange = "ngshare"` (or `make hub EXCHANGE=ngshare`), ngshare run as a service of the hub
(autograder/classroom/ngshare.py).
`make hub` (run by root) does, in order:

  1. writes the hub's configuration into .hub/ (git-ignored): jupyterhub_config.py, and the Jupyter
     configuration every user's server reads (jupyter/: nbgrader's exchange and its JupyterHub auth
     plugin; for students, the Formgrader and Create Assignment extensions switched off; for
     instructors, the formgrader pointed at the course, its grading home and gradebook; for everyone,
     jupyter_lsp and JupyterLab's build check off: LEAN_SERVER, LEAN_PAGE);
  2. creates a local (PAM) account for every student and instructor that does not have one yet, with
     the development password `dev-<account>` (FOR LOCAL TESTING ONLY: say `--no-passwords` and set
     real ones, or use OAuth or LTI 1.3, README "On JupyterHub"), and links the course folder into
     every instructor's home as ~/<course id>, where their formgrader finds it;
  3. makes the exchange's folder, writable by all as nbgrader's folder exchange needs, and releases
     the step into it (nbgrader release_assignment) unless it holds it already, its inbound folder
     readable by the instructors' group (their formgrader's Collect lists it); with ngshare, writes
     the token of the course's grader service instead;
  4. starts JupyterHub (PAMAuthenticator, LocalProcessSpawner, JupyterLab as the default UI); with
     ngshare, once its service answers, makes the course there (instructors, roster) and releases the
     step into it.

The hub knows the course's students through its groups: `nbgrader-<course>` (the roster) and
`formgrade-<course>` (the instructors), which nbgrader.auth.JupyterHubAuthPlugin reads with each
user's own server token.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ..course import COURSE_ID, ENGINE_ROOT, ROOT
from ..errors import GraderError
from ..nbgrader_cmd import SINGLEUSER_MAIN
from .lab import LEAN_PAGE, LEAN_SERVER
from . import ngshare

HUB_DIR = ngshare.HUB_DIR  # .hub/ ($COURSE_HUB_DIR: the tests' folder of their own)
PROXY = ENGINE_ROOT / ".hub" / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
DEFAULTS = {
    "ip": "127.0.0.1",
    "port": ngshare.DEFAULT_PORT,
    "instructors": ["instructor"],
    "exchange": "/srv/nbgrader/exchange",
    "image": "registry.example.org/dl-course:latest",  # on Kubernetes only (hub_values.py): the course's, the instructors'
    "student_image": "registry.example.org/dl-course-student:latest",  # the students' servers' (student_image.py)
}
ACCOUNT = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")  # what useradd takes on Debian without --badname
# The short-polling Execute (nbgrader's, without the slider-cell hang) that every user's server runs for
# Validate: the grader's own module, which stands alone (it imports only nbclient and nbgrader, and holds
# nothing but the polling), copied as it is beside the user's nbgrader configuration under this name.
SHORT_POLLS = Path(__file__).resolve().parent.parent / "kernel" / "shortpolls.py"
SHORT_POLLS_MODULE = "course_short_polls"


class HubError(GraderError, RuntimeError):
    """The hub cannot be set up as asked; the message says what to fix."""


def settings(term: dict | None = None, exchange: str | None = None) -> dict:
    """course.toml's [hub], with the defaults filled in; `exchange`: in place of course.toml's (a folder,
    or "ngshare")."""
    from ..term import load_term

    given = (load_term() if term is None else term).get("hub", {})
    unknown = set(given) - set(DEFAULTS)
    if unknown:
        raise HubError(f"course.toml [hub]: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(DEFAULTS)})")
    out = {**DEFAULTS, **given}
    if exchange:
        out["exchange"] = exchange
    if not isinstance(out["exchange"], str) or not out["exchange"].strip():
        raise HubError(f'course.toml [hub] exchange = {out["exchange"]!r}: a folder, or "ngshare"')
    if not isinstance(out["port"], int) or not 1024 <= out["port"] <= 65000:
        raise HubError(f"course.toml [hub] port = {out['port']!r}: a port from 1024 to 65000")
    if isinstance(out["instructors"], str):
        out["instructors"] = [out["instructors"]]
    return out


def accounts(conf: dict) -> tuple[list[str], list[str]]:
    """(students, instructors): the roster's ids and course.toml's instructors, each a usable local
    account name."""
    from ..lms.roster import roster, roster_file

    students = sorted(roster())
    instructors = sorted(conf["instructors"])
    if not students:
        raise HubError(
            f"{roster_file().name}: no students (make roster FROM=<the LMS's export>): "
            "the hub serves the roster's students"
        )
    bad = [name for name in students + instructors if not ACCOUNT.match(name)]
    if bad:
        raise HubError(
            f"not usable as local account names: {', '.join(bad)} (lower-case letters, digits, - and _, "
            "starting with a letter; at most 32)"
        )
    both = set(students) & set(instructors)
    if both:
        raise HubError(f"both a student and an instructor: {', '.join(sorted(both))}")
    if ngshare.GRADER in students + instructors:  # ngshare would take that account for its admin, the grader
        raise HubError(f"{ngshare.GRADER}: the name of the course's grader service on the hub, not an account's")
    return students, instructors


def dev_password(account: str) -> str:
    """The development password of a local account: FOR LOCAL TESTING ONLY."""
    return f"dev-{account}"


def create_accounts(names: list[str], passwords: bool = True) -> list[str]:
    """A local account with a home folder for each name that has none; returns those created. With
    `passwords`, every one of them (new or not) gets its development password."""
    if os.geteuid() != 0:
        raise HubError("local accounts are created by root: sudo make hub")
    created = []
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True)
            created.append(name)
    if passwords and names:
        lines = "".join(f"{name}:{dev_password(name)}\n" for name in names)
        subprocess.run(["chpasswd"], input=lines, text=True, check=True)
    return created


def prepare_exchange(root: Path) -> Path:
    """nbgrader's folder exchange: a folder every user may write (its course folders below are made by
    nbgrader with their own permissions)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o777)
    return root


def short_polls_config() -> str:
    """The nbgrader configuration's lines that make Validate (the Assignments tab's) run a notebook with
    the short-polling Execute of SHORT_POLLS_MODULE, the file beside it: nbgrader's own Execute can wait
    out the whole cell timeout on a slider cell. The server reads no other file of the course: the
    grader is not on its path. nbgrader's Validator does not take its `preprocessors` from the
    configuration (the trait is not configurable), so its default list is set to the same list, as the
    course's nbgrader_config.py does. Without the file, nbgrader's own Execute and a warning that names
    the missing file and says to rerun `make hub` (or `make hub-values`): the exchange's settings,
    earlier in the configuration, still apply."""
    name = SHORT_POLLS_MODULE
    return (
        "# Validate runs the notebook with nbgrader's Execute polling the kernel in short steps (no wait of the\n"
        f"# whole cell timeout on a slider cell): {name}.py beside this file, nothing but that polling.\n"
        "# Without that file, nbgrader's own Execute, with a warning: the rest of this file still applies.\n"
        "import os as _os  # noqa: E402\n"
        "import sys as _sys  # noqa: E402\n"
        f"_short_polls = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), {name + '.py'!r})\n"
        f"if {name!r} not in _sys.modules and _os.path.isfile(_short_polls):\n"
        "    import importlib.util as _util\n"
        f"    _spec = _util.spec_from_file_location({name!r}, _short_polls)\n"
        "    _module = _util.module_from_spec(_spec)\n"
        "    _spec.loader.exec_module(_module)\n"
        "    _sys.modules[_spec.name] = _module\n"
        f"if {name!r} in _sys.modules:\n"
        f"    from {name} import Execute as _Execute\n"
        "    from nbgrader.validator import Validator as _Validator\n"
        "    c.Validator.preprocessors = [_Execute if p.__name__ == 'Execute' else p\n"
        "                                 for p in _Validator.class_traits()['preprocessors'].default()]\n"
        "    _Validator.class_traits()['preprocessors'].default_value = list(c.Validator.preprocessors)\n"
        "else:\n"
        "    from traitlets.config import Application as _Application\n"
        '    _missing = (_short_polls + " is missing: Validate runs nbgrader\'s own Execute, which can wait out the whole "\n'
        "                'cell timeout on a slider cell. The file is written beside this configuration by `make hub` '\n"
        "                '(on Kubernetes, mounted from the values of `make hub-values`): rerun it.')\n"
        "    if _Application.initialized():  # the server's log\n"
        "        _Application.instance().log.warning(_missing)\n"
        "    else:\n"
        "        print(_missing, file=_sys.stderr)\n"
    )


def user_config_files(conf: dict, students: bool) -> dict[str, str]:
    """The Jupyter configuration a user's server reads (through JUPYTER_CONFIG_PATH), file name -> text:
    nbgrader's exchange and the JupyterHub auth plugin, and Validate with the short-polling Execute
    (short_polls_config; the module SHORT_POLLS beside it); for students the instructors' extensions
    are off. For everyone, what a user's server would do for nothing at each start or page load is off
    (LEAN_SERVER, LEAN_PAGE). The same on one machine (written into .hub/) and on Kubernetes (mounted
    from the chart's values, autograder/classroom/hub_values.py)."""
    exchange = (
        ngshare.client_config(ngshare.url(conf))
        if ngshare.chosen(conf)
        else f"c.Exchange.root = {str(Path(conf['exchange']))!r}\n"
    )
    nbgrader_config = (
        "# Written from course.toml [hub] (autograder/classroom/hub.py): do not edit, edit course.toml.\n"
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        + exchange
        + "c.Authenticator.plugin_class = 'nbgrader.auth.JupyterHubAuthPlugin'\n"
        + short_polls_config()
    )
    off = {**LEAN_SERVER, **({"nbgrader.server_extensions.formgrader": False} if students else {})}
    disabled = {"@jupyter/nbgrader:formgrader": True, "@jupyter/nbgrader:create-assignment": True} if students else {}
    return {
        "nbgrader_config.py": nbgrader_config,
        f"{SHORT_POLLS_MODULE}.py": SHORT_POLLS.read_text(encoding="utf-8"),
        "jupyter_server_config.json": json.dumps({"ServerApp": {"jpserver_extensions": off}}, indent=1),
        "labconfig/page_config.json": json.dumps({**LEAN_PAGE, "disabledExtensions": disabled}, indent=1),
    }


def formgrader_config() -> str:
    """What the instructors' nbgrader configuration adds on one machine: their formgrader grades the
    course's own submissions, as `make formgrader` does. It reads the course's nbgrader_config.py (the
    sanitised submission pages, MathJax from the server) with the grading home and gradebook this
    `make hub` runs with, and reaches the course folder through ~/<course id> (link_course): nbgrader
    wants the course inside the server's root, the instructor's home. Then the lines every user reads
    (the hub's exchange) follow. The formgrader's own files in the grading home are the instructors'
    group's to write (course.py share_with_home_group): its Collect writes submitted/ there."""
    from ..course import db_url, grader_home

    return (
        "# The formgrader grades the course's submissions as `make formgrader` does (autograder/classroom/hub.py).\n"
        "import os\n"
        "from jupyter_core.paths import jupyter_data_dir\n"
        f"os.environ.setdefault('COURSE_ROOT', {str(ROOT)!r})\n"
        f"os.environ.setdefault('GRADER_HOME', {str(grader_home())!r})\n"
        f"os.environ.setdefault('NBGRADER_DB_URL', {db_url()!r})\n"
        f"load_subconfig({str(ENGINE_ROOT / 'nbgrader_config.py')!r})  # noqa: F821\n"
        "# what the formgrader makes in the shared grading home (its Collect into submitted/, a gradebook\n"
        "# it creates) is writable by the instructors' group, as what `make grade` makes there as root\n"
        "from autograder.course import share_with_home_group\n"
        "share_with_home_group()\n"
        f"c.CourseDirectory.root = os.path.expanduser({'~/' + COURSE_ID!r})\n"
        "c.Exchange.assignment_dir = '.'\n"
        "c.Exchange.cache = os.path.join(jupyter_data_dir(), 'nbgrader_cache')\n"
    )


GRADERS_GROUP = f"{COURSE_ID}-graders"  # the local group of the instructors: the grading home is shared with it


def share_grading_home(instructors: list[str]) -> Path:
    """The grading home (the gradebook's folder) shared with the instructors, whose formgraders run as
    their own accounts and write the gradebook (scores given by hand) while `make grade` runs as root:
    a local group GRADERS_GROUP holding the instructors, the folder in that group, writable by it and
    setgid (files made in it, SQLite's journal too, are in the group); a gradebook made in such a folder
    is writable by the group (records/gradebook.py `share_with_folder_group`)."""
    import grp

    from ..course import db_url, grader_home, sqlite_path
    from ..records.gradebook import opened, share_with_folder_group

    subprocess.run(["groupadd", "--force", GRADERS_GROUP], check=True)
    for name in instructors:
        subprocess.run(["usermod", "--append", "--groups", GRADERS_GROUP, name], check=True)
    home = grader_home()
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, -1, grp.getgrnam(GRADERS_GROUP).gr_gid)
    home.chmod(0o2775)
    gradebook = sqlite_path(db_url())
    if gradebook is not None and gradebook.parent == home and not gradebook.exists():
        # made here, as root, so that it is the group's to write: one an instructor's formgrader made
        # first (its Collect opens it) would be theirs alone, SQLite making its files 0644 whatever the umask
        with opened():
            pass
    share_with_folder_group(home / "gradebook.db")
    return home


def share_exchange_inbound(root: Path, group: str = GRADERS_GROUP) -> Path | None:
    """The course's inbound folder in the folder exchange readable by the instructors' group: the
    release `make hub` made as root left it root's alone to list (nbgrader's 2733: students may
    write into it, only its owner may read it), and the formgrader's Collect, which runs as the
    instructor's account, lists it. The folder goes into the group, setgid and group-readable, as
    nbgrader makes it with CourseDirectory.groupshared (2773); students are not in that group, so
    they still cannot list each other's submissions. Returns the folder, or None if there is none."""
    import grp

    inbound = Path(root) / COURSE_ID / "inbound"
    if not inbound.is_dir():
        return None
    os.chown(inbound, -1, grp.getgrnam(group).gr_gid)
    inbound.chmod(0o2773)
    return inbound


def ngshare_collect_config() -> str:
    """What the instructors' nbgrader configuration ends with on a hub whose exchange is ngshare: their
    formgrader's Collect is the course's collect from ngshare (collecting.NGSHARE_COLLECT: nothing outside a
    submission's folder, nothing left writable by every account), in place of ngshare-exchange's own the
    exchange's lines name. It reads the grader's module, which formgrader_config puts on the path."""
    from .collecting import NGSHARE_COLLECT

    return (
        "# The formgrader's Collect: the course's collect from ngshare (autograder/classroom/collecting.py)\n"
        f"c.ExchangeFactory.collect = {NGSHARE_COLLECT!r}\n"
    )


def user_config(folder: Path, conf: dict, students: bool) -> Path:
    """user_config_files written into a folder; the instructors' with formgrader_config too (and, with
    ngshare, ngshare_collect_config)."""
    for name, text in user_config_files(conf, students).items():
        if name == "nbgrader_config.py" and not students:
            head = "c = get_config()  # noqa: F821\n"
            text = text.replace(head, head + formgrader_config(), 1)
            if ngshare.chosen(conf):
                text += ngshare_collect_config()
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def link_course(instructors: list[str]) -> None:
    """~/<course id> in every instructor's home: a link to the course folder, which their formgrader
    grades (formgrader_config). A folder of that name that is not a link is left as it is."""
    for name in instructors:
        account = pwd.getpwnam(name)
        link = Path(account.pw_dir) / COURSE_ID
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            continue
        link.symlink_to(ROOT)
        os.lchown(link, account.pw_uid, account.pw_gid)


def hub_config(folder: Path, conf: dict, students: list[str], instructors: list[str]) -> str:
    """jupyterhub_config.py's text; with ngshare, its service (ngshare.service_config) too."""
    port = conf["port"]
    venv_bin = Path(sys.executable).parent
    per_user = {name: str(folder / "jupyter" / "students") for name in students}
    per_user.update({name: str(folder / "jupyter" / "instructors") for name in instructors})
    lines = [
        "# Written by `make hub` from course.toml [hub] and roster.csv (autograder/classroom/hub.py): edit those, not this.",
        "c = get_config()  # noqa: F821",
        f"c.JupyterHub.bind_url = 'http://{conf['ip']}:{port}'",
        f"c.JupyterHub.hub_bind_url = 'http://127.0.0.1:{port + 1}'",
        f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{port + 2}'",
        f"c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]",
        f"c.ConfigurableHTTPProxy.pid_file = {str(folder / 'proxy.pid')!r}",
        f"c.JupyterHub.pid_file = {str(folder / 'jupyterhub.pid')!r}",
        f"c.JupyterHub.db_url = {'sqlite:///' + str(folder / 'jupyterhub.sqlite')!r}",
        f"c.JupyterHub.cookie_secret_file = {str(folder / 'jupyterhub_cookie_secret')!r}",
        "",
        "# Who may log in: local accounts (PAM), the roster's students and the instructors. For OAuth or",
        "# LTI 1.3 change these lines (README, On JupyterHub).",
        "c.JupyterHub.authenticator_class = 'pam'",
        "c.PAMAuthenticator.open_sessions = False",
        f"c.Authenticator.allowed_users = {set(students) | set(instructors)!r}",
        f"c.Authenticator.admin_users = {set(instructors)!r}",
        "",
        "# The course's groups, read by nbgrader.auth.JupyterHubAuthPlugin with each user's server token.",
        f"c.JupyterHub.load_groups = {{'nbgrader-{COURSE_ID}': {{'users': {students!r}}},",
        f"                            'formgrade-{COURSE_ID}': {{'users': {instructors!r}}}}}",
        "c.JupyterHub.load_roles = [{'name': 'server', 'scopes': ['inherit']}]",
        "",
        "# Each user's server: JupyterLab 4 from the course environment, as that user, in their home.",
        "c.JupyterHub.spawner_class = 'localprocess'",
        f"c.Spawner.cmd = [{str(venv_bin / 'python')!r}, '-c', {SINGLEUSER_MAIN!r}]",
        "c.Spawner.default_url = '/lab'",
        "c.Spawner.start_timeout = 120",
        "c.Spawner.http_timeout = 120",
        f"_CONFIG = {per_user!r}",
        "def _environment(spawner):",
        "    return _CONFIG[spawner.user.name]",
        "c.Spawner.environment = {",
        f"    'PATH': {str(venv_bin) + ':/usr/local/bin:/usr/bin:/bin'!r},",
        "    'JUPYTER_CONFIG_PATH': _environment,",
        f"    'COURSE_EXCHANGE': {(ngshare.NGSHARE if ngshare.chosen(conf) else str(Path(conf['exchange'])))!r},",
        "}",
    ]
    if ngshare.chosen(conf):
        lines += ["", *ngshare.service_config(folder, conf)]
    return "\n".join(lines) + "\n"


def configure(folder: Path | None = None, conf: dict | None = None) -> tuple[Path, list[str], list[str]]:
    """.hub/jupyterhub_config.py and the users' Jupyter configuration; returns (config file, students,
    instructors)."""
    folder = Path(folder or HUB_DIR)
    conf = conf or settings()
    students, instructors = accounts(conf)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    if ngshare.chosen(conf):
        ngshare.ensure_token(folder)
    user_config(folder / "jupyter" / "students", conf, students=True)
    user_config(folder / "jupyter" / "instructors", conf, students=False)
    config = folder / "jupyterhub_config.py"
    config.write_text(hub_config(folder, conf, students, instructors), encoding="utf-8")
    return config, students, instructors


def command(config: Path) -> list[str]:
    """The command line that starts the hub with this configuration."""
    return [str(Path(sys.executable).parent / "jupyterhub"), "-f", str(config)]


def setup(
    step: str, folder: Path | None = None, passwords: bool = True, say=print, exchange: str | None = None
) -> list[str]:
    """Steps 1-3 of `make hub`; returns the command that starts the hub. With ngshare the step is
    released once the hub runs (publish)."""
    from .exchange import publish

    if not PROXY.exists() or shutil.which("jupyterhub", path=str(Path(sys.executable).parent)) is None:
        raise HubError("JupyterHub or its proxy is not installed: make hub-deps")
    conf = settings(exchange=exchange)
    if ngshare.chosen(conf):
        import importlib.util

        if importlib.util.find_spec("ngshare_exchange") is None:
            raise HubError("ngshare-exchange is not in the hub's environment: make hub-deps")
        if not ngshare.NGSHARE_PYTHON.exists():
            raise HubError(f"ngshare's environment is not there ({ngshare.NGSHARE_PYTHON}): make hub-deps")
    config, students, instructors = configure(folder, conf)
    created = create_accounts(students + instructors, passwords=passwords)
    link_course(instructors)
    shared = share_grading_home(instructors)
    if ngshare.chosen(conf):
        root = ngshare.url(conf)
        os.environ["NBGRADER_EXCHANGE"] = ngshare.NGSHARE
    else:
        root = prepare_exchange(Path(conf["exchange"]))
        os.environ["NBGRADER_EXCHANGE"] = str(root)
        publish(step)
        share_exchange_inbound(root)
    say(
        f"hub: {len(students)} students and {len(instructors)} instructors ({len(created)} local accounts created"
        + ("; development passwords dev-<account>, for local testing only" if passwords else "")
        + ")"
    )
    say(f"hub: exchange {root}; configuration {config}; grading home {shared}, shared with group {GRADERS_GROUP}")
    if ngshare.chosen(conf):
        say(
            f"hub: ngshare runs as the hub's service; the course and {step} go into it once the hub is up "
            "(`make hub` does it; a hub started otherwise: NBGRADER_EXCHANGE=ngshare python -m autograder hub --publish)"
        )
    say(f"hub: http://{conf['ip']}:{conf['port']}/ (JupyterLab with nbgrader's Assignments; instructors: Formgrader)")
    return command(config)


def publish_when_up(step: str, hub, timeout: float = 180, say=print) -> None:
    """With ngshare: once the started hub's ngshare answers, the course and the step into it (publish).
    `hub`: the hub's process (a failure to start ends the wait)."""
    import time

    from .exchange import ExchangeError, ngshare_client

    client = ngshare_client()
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.call("GET", "/courses")
            break
        except ngshare.NgshareError:
            if hub.poll() is not None or time.monotonic() > deadline:
                raise ExchangeError(f"ngshare at {client.url} did not answer once the hub started") from None
            time.sleep(0.5)
    publish_ngshare(step)
    say(f"hub: {COURSE_ID} and {step} in ngshare ({client.url})")


def publish_ngshare(step: str) -> None:
    """The course in the running hub's ngshare (the instructors and the roster, ngshare.Client.enrol),
    then the step released into it (exchange.publish)."""
    from ..lms.roster import roster
    from .exchange import ngshare_client, publish

    students, instructors = accounts(settings())
    names = roster()
    ngshare_client().enrol(instructors, {sid: (names.get(sid, {}).get("name") or "").strip() for sid in students})
    publish(step)
