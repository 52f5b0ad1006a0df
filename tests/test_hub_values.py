"""The course on Kubernetes (`make hub-values`, autograder/classroom/hub_values.py) gets Helm values for Zero
to JupyterHub made from course.toml's [hub] and the roster as `make hub`'s configuration is, valid against
the chart's own schema (vendored, its sha256 checked) merged over the chart's defaults as Helm merges
them, strictly; a misspelt key is rejected with where it is. No cluster runs here; the exchange's volume
is checked against the Kubernetes API's schemas, strictly. `make hub`'s configuration with ngshare as the
exchange (a hub service, every server on ngshare-exchange) is checked here too; the values refuse it."""
import hashlib
import json
import re
import subprocess
import sys
import tomllib

import pytest
import yaml

from autograder.classroom import hub, hub_values, student_image
from autograder.classroom.hub_values import CHART_VERSION, VENDORED
from autograder.course import COURSE_ID
from autograder.errors import GraderError

from conftest import ROOT
from test_cluster_recipe import kubernetes_versions

STUDENTS = ["alice", "bob", "carol"]


@pytest.fixture
def course(tmp_path, monkeypatch):
    """The course's own course.toml [hub] and a roster of three students."""
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name\n" + "".join(f"{s},Student {s}\n" for s in STUDENTS), encoding="utf-8")
    monkeypatch.setenv("COURSE_ROSTER", str(roster))
    return hub.settings()


def test_the_vendored_chart_files_are_the_recorded_release():
    record = tomllib.loads((VENDORED / "SOURCE.toml").read_text(encoding="utf-8"))
    assert record["chart"] == "jupyterhub" and record["version"] == CHART_VERSION
    assert set(record["files"]) == {"values.schema.yaml", "values.yaml", "LICENSE"}
    for name, entry in record["files"].items():
        assert hashlib.sha256((VENDORED / name).read_bytes()).hexdigest() == entry["sha256"], name
        assert f"/zero-to-jupyterhub-k8s/{CHART_VERSION}/" in entry["url"], entry["url"]
    schema = hub_values.vendored("values.schema.yaml")
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#" and schema["additionalProperties"] is False


def test_a_changed_vendored_file_is_refused(tmp_path, monkeypatch):
    for name in ("values.schema.yaml", "values.yaml", "SOURCE.toml"):
        (tmp_path / name).write_bytes((VENDORED / name).read_bytes())
    (tmp_path / "values.yaml").write_text((VENDORED / "values.yaml").read_text() + "\n# edited\n")
    monkeypatch.setattr(hub_values, "VENDORED", tmp_path)
    monkeypatch.setattr(hub_values, "SOURCE", tmp_path / "SOURCE.toml")
    hub_values.vendored("values.schema.yaml")
    with pytest.raises(GraderError, match="values.yaml: not the file SOURCE.toml records"):
        hub_values.vendored("values.yaml")


def test_the_chart_defaults_are_valid_and_the_course_values_are_valid(course):
    hub_values.validate({})             # the chart's own defaults, as a check that the check reads them
    hub_values.validate(hub_values.values(course))


def test_the_values_serve_the_course_as_make_hub_does(course):
    vals = hub_values.values(course)
    config = vals["hub"]["config"]
    instructors = course["instructors"]
    assert config["Authenticator"]["allowed_users"] == sorted(STUDENTS + instructors)
    assert config["Authenticator"]["admin_users"] == instructors
    local = hub.hub_config(ROOT / ".hub", course, STUDENTS, instructors)
    assert f"'nbgrader-{COURSE_ID}': {{'users': {STUDENTS!r}}}" in local        # the same groups as `make hub`
    assert config["JupyterHub"]["load_groups"] == {f"nbgrader-{COURSE_ID}": {"users": STUDENTS},
                                                   f"formgrade-{COURSE_ID}": {"users": instructors}}
    assert vals["hub"]["loadRoles"] == {"server": {"scopes": ["inherit"]}}
    assert "'name': 'server', 'scopes': ['inherit']" in local
    single = vals["singleuser"]
    assert single["defaultUrl"] == "/lab" and single["cmd"][0].endswith("/jupyterhub-singleuser")
    name, tag = course["student_image"].rsplit(":", 1)
    assert single["image"] == {"name": name, "tag": tag}                     # the students' image (below)
    # the exchange: course.toml's folder, on the ReadWriteMany claim, in every user's server
    (mount,) = single["storage"]["extraVolumeMounts"]
    (volume,) = single["storage"]["extraVolumes"]
    assert mount == {"name": volume["name"], "mountPath": course["exchange"]}
    assert volume["persistentVolumeClaim"]["claimName"] == hub_values.exchange_claim()["metadata"]["name"]
    assert single["extraEnv"]["COURSE_EXCHANGE"] == course["exchange"]
    # each role's Jupyter configuration is the one `make hub` writes, file for file
    mounted = {f["mountPath"]: f["stringData"] for f in single["extraFiles"].values()}
    # Validate with the short-polling Execute, from its own module beside the configuration (hub.py)
    for role in ("students", "instructors"):
        assert "c.Validator.preprocessors" in mounted[f"{hub_values.CONFIG_MOUNT}/{role}/nbgrader_config.py"]
        assert mounted[f"{hub_values.CONFIG_MOUNT}/{role}/{hub.SHORT_POLLS_MODULE}.py"] == hub.SHORT_POLLS.read_text(
            encoding="utf-8")
    for role in ("students", "instructors"):
        for name, text in hub.user_config_files(course, students=role == "students").items():
            assert mounted.pop(f"{hub_values.CONFIG_MOUNT}/{role}/{name}") == text
    assert mounted == {}
    assert all(re.fullmatch(r"[-._a-zA-Z0-9]+", key) for key in single["extraFiles"]), "keys of a Secret"


def test_each_users_server_reads_its_roles_configuration(course):
    """hub.extraConfig, run as the chart's hub runs it (after singleuser.extraEnv is set)."""
    from traitlets.config import Config

    vals = hub_values.values(course)
    c = Config()
    c.KubeSpawner.environment = dict(vals["singleuser"]["extraEnv"])
    exec(compile(vals["hub"]["extraConfig"]["course-roles"], "course-roles", "exec"), {"c": c})
    pick = c.KubeSpawner.environment["JUPYTER_CONFIG_PATH"]
    user = lambda name: type("Spawner", (), {"user": type("User", (), {"name": name})})()  # noqa: E731
    assert pick(user(course["instructors"][0])) == f"{hub_values.CONFIG_MOUNT}/instructors"
    assert pick(user("alice")) == f"{hub_values.CONFIG_MOUNT}/students"
    assert c.KubeSpawner.environment["COURSE_EXCHANGE"] == course["exchange"]
    # an instructor's server runs the course image, with its formgrader, as before; a student's is left
    # as singleuser says: the students' image
    instructor, student = user(course["instructors"][0]), user("alice")
    c.KubeSpawner.pre_spawn_hook(instructor)
    c.KubeSpawner.pre_spawn_hook(student)
    assert instructor.image == course["image"] and instructor.cmd == [hub_values.SINGLEUSER]
    assert not hasattr(student, "image") and not hasattr(student, "cmd")


def test_a_users_server_on_the_hub_runs_no_node_process_for_yarns_configuration(tmp_path):
    """Each user's server on the hub starts with SINGLEUSER_MAIN, whose first statements keep JupyterLab from
    running `node yarn.js config --json` when its server module is imported (a Node.js process at every
    start, for the npm registry of builds a user's server never makes: hub.LEAN_PAGE). Here with a `node`
    first on PATH that notes each call: those statements, then JupyterLab's server module imported; no
    call, and the registry is JupyterLab's default."""
    import os

    from autograder.nbgrader_cmd import SINGLEUSER_MAIN
    first, server = SINGLEUSER_MAIN.split("from jupyterhub.singleuser import")
    assert "main()" in server and "_yarn_config" in first, SINGLEUSER_MAIN
    calls = tmp_path / "calls"
    (tmp_path / "node").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    (tmp_path / "node").chmod(0o755)
    program = first + ("import jupyterlab.labapp; from jupyterlab.commands import AppOptions, YARN_DEFAULT_REGISTRY; "
                       "print(AppOptions().registry == YARN_DEFAULT_REGISTRY)")
    done = subprocess.run([sys.executable, "-c", program], env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not calls.exists(), calls.read_text()
    assert done.stdout.strip().splitlines()[-1] == "True", done.stdout


def test_the_courses_own_jupyterlab_leaves_lsp_and_the_build_check_off_and_asks_yarn_nothing(tmp_path):
    """`make lab`, `make formgrader` and the browser tests' JupyterLab (classroom/lab.py lab_arguments,
    JUPYTERLAB_MAIN) leave off what the hub's users' servers leave off: their options, read by Jupyter
    Server's own parser, turn jupyter_lsp off and give the page no build and no build check (LEAN_SERVER,
    LEAN_PAGE), the instructor's pages keep their Content-Security-Policy; the command's first statements
    keep JupyterLab from asking yarn's configuration of a Node.js process."""
    from jupyter_server.serverapp import ServerApp

    from autograder.classroom.lab import INSTRUCTOR_CSP, LEAN_PAGE, LEAN_SERVER, lab_arguments
    from autograder.nbgrader_cmd import JUPYTERLAB_MAIN
    assert LEAN_SERVER == {"jupyter_lsp": False} and LEAN_PAGE == {"buildAvailable": False, "buildCheck": False}
    for role in ("student", "instructor"):
        app = ServerApp()
        app.parse_command_line(lab_arguments(tmp_path, role))
        assert app.jpserver_extensions == LEAN_SERVER, (role, app.jpserver_extensions)
        assert app.tornado_settings["page_config_data"] == LEAN_PAGE, (role, app.tornado_settings)
        headers = app.tornado_settings.get("headers", {})
        assert headers == ({"Content-Security-Policy": INSTRUCTOR_CSP} if role == "instructor" else {}), headers
    first, lab = JUPYTERLAB_MAIN.split("from jupyterlab.labapp import")
    assert "main()" in lab and "_yarn_config" in first, JUPYTERLAB_MAIN


def test_the_written_file_is_the_values_and_its_commented_authenticators_are_valid(course, tmp_path):
    values_file, claim_file, context = hub_values.write(tmp_path)
    assert context == tmp_path / hub_values.STUDENT_IMAGE and (context / "Dockerfile").is_file()
    text = values_file.read_text(encoding="utf-8")
    vals = yaml.safe_load(text)
    assert vals == hub_values.values(course)
    header = text.split("\nsingleuser:", 1)[0]
    assert course["student_image"] in header and course["image"] in header and "nothing of the grader" in header
    assert f"--version {CHART_VERSION}" in text and "ngshare" in text
    assert "&" not in re.sub(r"#.*", "", text), "no YAML anchors: a person edits this file"
    assert "password" not in json.dumps(vals).lower(), "no secret in the file"
    # uncommenting OAuth's or LTI 1.3's lines (and naming it in authenticator_class) gives valid values
    for label, (cls, block) in zip(("OAuth", "LTI 1.3"), hub_values.AUTHENTICATORS.items()):
        section = text.split(f"    # {label}:\n", 1)[1]
        lines = []
        for line in section.splitlines():
            if not line.startswith("    # ") or line.startswith("    # LTI 1.3:"):
                break
            lines.append("    " + line[len("    # "):])
        switched = yaml.safe_load(text.replace("authenticator_class: dummy", f"authenticator_class: {cls}")
                                  + "\n".join(lines) + "\n")
        assert {k: v for k, v in switched["hub"]["config"].items() if k in block} == block, label
        assert switched["hub"]["config"]["JupyterHub"]["authenticator_class"] == cls
        hub_values.validate(switched)
    claim = yaml.safe_load(claim_file.read_text(encoding="utf-8"))
    assert claim == hub_values.exchange_claim()


def test_a_misspelt_or_mistyped_value_is_rejected_with_where_it_is(course):
    vals = hub_values.values(course)
    misspelt = json.loads(json.dumps(vals))
    misspelt["singleuser"]["defaultURL"] = misspelt["singleuser"].pop("defaultUrl")
    with pytest.raises(GraderError) as err:
        hub_values.validate(misspelt)
    message = str(err.value)
    assert f"not valid values for Zero to JupyterHub {CHART_VERSION}" in message
    assert "at singleuser:" in message and "'defaultURL' was unexpected" in message, message
    nested = json.loads(json.dumps(vals))
    nested["singleuser"]["storage"]["extraVolumeMount"] = nested["singleuser"]["storage"].pop("extraVolumeMounts")
    with pytest.raises(GraderError, match=r"at singleuser\.storage: .*'extraVolumeMount' was unexpected"):
        hub_values.validate(nested)
    mistyped = json.loads(json.dumps(vals))
    mistyped["singleuser"]["uid"] = "1000"
    with pytest.raises(GraderError, match=r"at singleuser\.uid: '1000' is not of type"):
        hub_values.validate(mistyped)
    lowercase = json.loads(json.dumps(vals))
    lowercase["hub"]["config"]["authenticator"] = {"admin_users": ["x"]}   # a section must be a class name
    with pytest.raises(GraderError, match=r"at hub\.config: .*'authenticator'"):
        hub_values.validate(lowercase)


def test_the_exchange_volume_is_valid_against_the_kubernetes_api_schema():
    import kubernetes_validate
    claim = hub_values.exchange_claim()
    misspelt = json.loads(json.dumps(claim))
    misspelt["spec"]["accessMode"] = misspelt["spec"].pop("accessModes")
    for version in kubernetes_versions():
        kubernetes_validate.validate(claim, version, strict=True)
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(misspelt, version, strict=True)


def test_what_the_values_cannot_be_made_from_is_said(course, monkeypatch, tmp_path):
    with pytest.raises(GraderError, match="an image with its tag"):
        hub_values.values({**course, "image": "registry.example.org/dl-course"})
    monkeypatch.setenv("COURSE_ROSTER", str(tmp_path / "none.csv"))
    with pytest.raises(GraderError, match="no students"):
        hub_values.values(course)


def test_the_command_writes_them_without_root_or_a_hub(course, tmp_path):
    import os
    done = subprocess.run([sys.executable, "-m", "autograder", "hub", "--k8s-values", str(tmp_path / "k8s")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"values valid for Zero to JupyterHub {CHART_VERSION}" in done.stdout
    assert sorted(p.name for p in (tmp_path / "k8s").iterdir()) == ["exchange-pvc.yaml", "student-image",
                                                                     "values.yaml"]
    assert f"docker build -t {course['student_image']}" in done.stdout
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-m autograder hub --k8s-values $(HUB_DIR)/k8s" in makefile


def test_the_readme_says_how_to_install_it_and_what_is_not_tested():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### On Kubernetes", 1)[1].split("\n## ", 1)[0]
    for needed in ("make hub-values", f"--version {CHART_VERSION}", "ReadWriteMany", "ngshare",
                   "autograder/classroom/z2jh/", "tests/test_hub_values.py", "Not exercised",
                   "student_image", ".hub/k8s/student-image", "autograder/classroom/student_image.py"):
        assert needed in section, needed


def test_with_ngshare_the_hub_runs_it_as_a_service_and_every_server_uses_ngshare_exchange(course, tmp_path,
                                                                                           monkeypatch):
    """`[hub] exchange = "ngshare"` (make hub EXCHANGE=ngshare): the configuration `make hub` writes runs
    ngshare from its own environment as a hub service on loopback, with the course's grader service and
    its token (root's alone) beside it; every user's nbgrader exchange is ngshare-exchange's, pointed at
    it. On Kubernetes the values are refused with where ngshare comes from there."""
    from autograder.classroom import ngshare
    conf = hub.settings(exchange="ngshare")
    assert ngshare.chosen(conf) and not ngshare.chosen(course)
    for students in (True, False):
        text = hub.user_config_files(conf, students=students)["nbgrader_config.py"]
        assert "c.Exchange.root" not in text and "JupyterHubAuthPlugin" in text
        assert f"c.Exchange._ngshare_url = 'http://127.0.0.1:{conf['port'] + 3}/services/ngshare'" in text
        assert all(f"c.ExchangeFactory.{name} = {path!r}" in text for name, path in ngshare.CLASSES.items())
    folder = tmp_path / "hub"
    token = ngshare.ensure_token(folder)
    assert len(token.read_text().strip()) == 64 and token.stat().st_mode & 0o777 == 0o600
    assert ngshare.ensure_token(folder).read_text() == token.read_text()        # written once
    config = hub.hub_config(folder, conf, STUDENTS, conf["instructors"])
    assert f"'url': 'http://127.0.0.1:{conf['port'] + 3}'" in config and str(ngshare.NGSHARE_PYTHON) in config
    assert f"'--admins', '{ngshare.GRADER}'" in config and f"'name': '{ngshare.GRADER}'" in config
    assert "'COURSE_EXCHANGE': 'ngshare'" in config
    assert "'name': 'ngshare'" not in hub.hub_config(folder, course, STUDENTS, course["instructors"])
    compile(ngshare.LAUNCHER, "launcher", "exec")                              # the service's command parses
    with pytest.raises(GraderError, match="its own Helm chart"):
        hub_values.values(conf)
    roster = tmp_path / "with-grader.csv"                   # no account may take the grader service's name
    roster.write_text(f"student,name\nalice,A\n{ngshare.GRADER},G\n", encoding="utf-8")
    monkeypatch.setenv("COURSE_ROSTER", str(roster))
    with pytest.raises(GraderError, match="grader service"):
        hub.accounts(conf)


# Students' servers: only what a student may see. The grader's paths, which no student's server may hold.
GRADER_PATHS = ("autograder", "source", "solutions", "tests", "gradebook.db", "case-key", "course.toml",
                "roster.csv", "extensions.csv", "nbgrader_config.py", "submitted", "autograded", "feedback")


def copied(dockerfile: str) -> list[str]:
    """The sources every COPY or ADD of a Dockerfile takes from its context (--from= stages included)."""
    sources = []
    for line in re.sub(r"\\\n", " ", dockerfile).splitlines():
        words = line.split()
        if words and words[0].upper() in ("COPY", "ADD"):
            args = [w for w in words[1:] if not w.startswith("--")]
            sources += [words[0].upper() + " " + a if words[0].upper() == "ADD" else a for a in args[:-1]]
            sources += [w for w in words[1:] if w.startswith("--from")]
    return sources


def refused(sources: list[str]) -> list[str]:
    """What the allowlist does not let pass: anything not one of student_image.ALLOWED exactly."""
    return [src for src in sources if src not in student_image.ALLOWED]


def test_students_servers_run_the_students_image_which_names_nothing_of_the_grader(course):
    single = hub_values.values(course)["singleuser"]
    assert "{name}:{tag}".format(**single["image"]) == course["student_image"] != course["image"]
    for word in single["cmd"]:
        assert not word.startswith("/course"), word
        assert not any(part in GRADER_PATHS for part in word.split("/")), word
    assert single["cmd"] == [student_image.SINGLEUSER] and student_image.HOME != "/course"
    # what a student's server is given from the values: its configuration and the short polls' copy only
    for entry in single["extraFiles"].values():
        role, name = entry["mountPath"].removeprefix(hub_values.CONFIG_MOUNT + "/").split("/", 1)
        assert name in hub.user_config_files(course, students=role == "students"), entry["mountPath"]
        if role == "students":
            assert "autograder" not in entry["stringData"].replace("autograder/classroom/hub.py", ""), name
    with pytest.raises(GraderError, match="the course image, which holds the grader"):
        hub_values.values({**course, "student_image": course["image"]})
    with pytest.raises(GraderError, match="student_image = .*an image with its tag"):
        hub_values.values({**course, "student_image": "dl-course-student"})


def test_the_allowlist_refuses_what_is_not_on_it():
    bad = "FROM x\nCOPY dlcourse/ autograder/ /srv/\nADD source/ /s/\nCOPY --from=course /course /course\nCOPY . /all\n"
    assert refused(copied(bad)) == ["autograder/", "ADD source/", "/course", "--from=course", "."]
    assert refused(copied(student_image.dockerfile())) == []


def test_the_students_image_recipe_copies_only_what_a_student_may_see(tmp_path):
    from test_handout import PROVIDED, solution_lines
    from conftest import SOURCE_NOTEBOOKS, STEP4, load
    context = student_image.write_context(tmp_path / "student-image", "5.5.0")
    dockerfile = (context / "Dockerfile").read_text(encoding="utf-8")
    sources = copied(dockerfile)
    assert sources and refused(sources) == [], refused(sources)
    assert set(sources) == set(student_image.ALLOWED)
    # and the context holds nothing else, so no recipe built from it could copy more
    names = {p.relative_to(context).as_posix() for p in context.rglob("*") if p.is_file()}
    assert all(n == "Dockerfile" or any(n == a or n.startswith(a) for a in student_image.ALLOWED) for n in names), names
    for part in GRADER_PATHS:
        assert not any(n == part or n.startswith(part + "/") for n in names), part
    package = {f"dlcourse/{p.name}" for p in (ROOT / "dlcourse").glob("*.py") if p.name != "grading.py"}
    assert {n for n in names if n.startswith("dlcourse/")} == package
    assert names - package - {"Dockerfile", "requirements.txt", "pyproject.toml"} <= {
        "data/tinyshakespeare.txt", "data/.keep"}
    # the image's environment: the students' pins, the grader's packages left out, jupyterhub at the hub's version
    pins = (context / "requirements.txt").read_text(encoding="utf-8")
    for needed in ("torch==", "numpy==", "matplotlib==", "jupyterlab==", "nbgrader==", "ipywidgets==",
                   "jupyterhub==5.5.0"):
        assert needed in pins, needed
    for grader_only in ("psycopg2", "latex2mathml", "nh3", "confusable"):
        assert grader_only not in pins, grader_only
    assert f"ENV PATH={student_image.HOME}/venv/bin" in dockerfile and "USER jovyan" in dockerfile
    # no solution line and no hidden check in any file of it
    texts = {n: (context / n).read_text(encoding="utf-8", errors="replace") for n in names}
    everything = "\n".join(texts.values())
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden(", "autograder.checks", "autograder.runtime"):
        assert marker not in everything, marker
    lines = [line for source in SOURCE_NOTEBOOKS for line in solution_lines(load(source))]
    assert len(lines) > 50 and not [line for line in lines if line in everything]
    checks = sorted(STEP4.checks_dir.glob("*.py")) + sorted((ROOT / "autograder" / "checks").glob("*.py"))
    distinctive = [line.strip() for c in checks for line in c.read_text().splitlines()
                   if len(line.strip()) > 40 and line.strip() not in PROVIDED]
    assert len(distinctive) > 20 and not [line for line in distinctive if line in everything]
