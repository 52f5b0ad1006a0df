"""The course on a Kubernetes JupyterHub: Helm values for Zero to JupyterHub (z2jh), made from the same
two files as `make hub`'s configuration (course.toml's `[hub]` and roster.csv, read by hub.py).

`make hub-values` (`python -m autograder hub --k8s-values DIR`) writes into DIR (default .hub/k8s/):

  values.yaml        for `helm upgrade --install ... jupyterhub/jupyterhub --version CHART_VERSION`:
                     each user's server is JupyterLab with nbgrader's Assignments
                     (and, for the instructors, Formgrader and Create Assignment), reading the course's
                     Jupyter configuration (hub.user_config_files, mounted from the values); the
                     roster's students and course.toml's instructors are the allowed users, the
                     instructors the admins; the hub's groups nbgrader-<course> and formgrade-<course>
                     as `make hub` loads them; authentication to switch to OAuth or LTI 1.3 commented;
  exchange-pvc.yaml  the exchange's volume (`kubectl apply -f` before the chart);
  student-image/     the build context of the students' servers' image (`[hub] student_image`, which
                     holds nothing of the grader: student_image.py); the instructors' servers run the
                     course image (`[hub] image`, as the grading Job's), chosen per user in hub.extraConfig.

The exchange is nbgrader's folder exchange, as on one machine, on a ReadWriteMany volume mounted at
course.toml's `[hub] exchange` in every user's server: the course's `collect` and `return-feedback`
read that folder, and nothing more is installed. Its cost on Kubernetes: every user's server runs as
the same uid (the chart's singleuser.uid), so the folder's permissions no longer keep students out
of each other's submissions; ngshare (a hub service that checks each request's user) does, and is
named, commented, in the values (README, "On Kubernetes").

The values are validated against the chart's own schema (z2jh/values.schema.yaml, vendored with
its source in z2jh/SOURCE.toml) merged over the chart's defaults, as Helm does; strictly, as the
schema says (tests/test_hub_values.py).
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import yaml

from ..course import COURSE_ID
from . import ngshare, student_image
from .hub import HubError, accounts, settings, user_config_files

VENDORED = Path(__file__).with_name("z2jh")
SOURCE = VENDORED / "SOURCE.toml"
CHART_VERSION = "4.4.0"  # z2jh's newest release; its hub runs JupyterHub 5.5.0 (the chart's appVersion)
EXCHANGE_CLAIM = "course-exchange"
CONFIG_MOUNT = "/etc/course/jupyter"  # students/ and instructors/ below: each user's JUPYTER_CONFIG_PATH
SINGLEUSER = "/course/.venv/bin/jupyterhub-singleuser"  # the course image: the course at /course, as the Job's
STUDENT_IMAGE = "student-image"  # the students' image's build context, beside the values (student_image.py)
HEADER = """\
# Helm values for Zero to JupyterHub {version}: the course {course} on Kubernetes.
# Written by `make hub-values` from course.toml [hub] and roster.csv (autograder/classroom/hub_values.py):
# edit those, not this. README, "On Kubernetes":
#   kubectl apply -f exchange-pvc.yaml
#   helm upgrade --install course jupyterhub/jupyterhub --version {version} --values values.yaml \\
#       --set-string hub.config.DummyAuthenticator.password=<a password for trying it out>
# The exchange: nbgrader's folder exchange on the ReadWriteMany volume {claim} (exchange-pvc.yaml),
# mounted at {exchange} in every user's server, where the course's collect and return-feedback read it.
# Every user's server runs as singleuser.uid 1000, the image's `jovyan` (nbgrader then takes each
# student's id from the hub), so a student who looks can read another's submission in that folder:
# for a class that must not, use ngshare (commented at the end).
# Two images. Students' servers run {student_image} (singleuser.image): the student environment,
# dlcourse and the corpus, nothing of the grader (no autograder/, source/, solutions/, gradebook or case
# key), built from {student_image_dir}/ beside this file (docker build -t {student_image} {student_image_dir}).
# Instructors' servers (course-roles below) run the course image {course_image}: the course at /course
# with its environment (`make install data release`), as the grading Job's, plus jupyterhub
# {app_version}, the chart's hub's version, for jupyterhub-singleuser.
"""
AUTH_NOTE = """\
    # Authentication: `dummy` with one password given at install (--set-string above) is for
    # trying the course out; with students, OAuth or LTI 1.3: set authenticator_class above to
    # generic-oauth or ltiauthenticator.lti13.auth.LTI13Authenticator (both are in the chart's
    # hub image) and uncomment that one's lines below. The name it gives each user must be the
    # roster's student id. Secrets are given at install (--set-string), never written here.
"""
# The lines that switch authentication, as they are uncommented (tests/test_hub_values.py validates them).
OAUTH = {
    "GenericOAuthenticator": {
        "client_id": "<the provider's client id>",
        "oauth_callback_url": "https://<hub>/hub/oauth_callback",
        "authorize_url": "https://<provider>/authorize",
        "token_url": "https://<provider>/token",
        "userdata_url": "https://<provider>/userinfo",
        "username_claim": "preferred_username",
    }
}
LTI13 = {
    "LTI13Authenticator": {
        "issuer": "https://canvas.instructure.com",
        "client_id": ["<the developer key's client id>"],
        "authorize_url": "https://<lms>/api/lti/authorize_redirect",
        "jwks_endpoint": "https://<lms>/api/lti/security/jwks",
        "username_key": "<the claim that holds the roster's student id>",
    }
}
AUTHENTICATORS = {"generic-oauth": OAUTH, "ltiauthenticator.lti13.auth.LTI13Authenticator": LTI13}
NGSHARE = """\
# ngshare instead of the folder exchange (not what this course's collect reads; README, "On Kubernetes"):
# install ngshare's own Helm chart, which prints the service to add under `hub:` above, e.g.
#   hub:
#     services:
#       ngshare:
#         url: http://ngshare.<namespace>.svc.cluster.local:8080
#         apiToken: <the token ngshare's chart was given>
# and in the image, ngshare-exchange, with nbgrader's ExchangeFactory pointed at it.
"""


def source() -> dict:
    """z2jh/SOURCE.toml: where the vendored chart files come from, and their sha256."""
    return tomllib.loads(SOURCE.read_text(encoding="utf-8"))


def vendored(name: str) -> dict:
    """One of the chart's vendored files (values.schema.yaml, values.yaml), its sha256 checked."""
    data = (VENDORED / name).read_bytes()
    recorded = source()["files"][name]["sha256"]
    if hashlib.sha256(data).hexdigest() != recorded:
        raise HubError(f"autograder/classroom/z2jh/{name}: not the file SOURCE.toml records (sha256 {recorded})")
    return yaml.safe_load(data)


def _role_hook(instructors: list[str], course_image: str) -> str:
    """hub.extraConfig: each user's server reads the configuration of its role, as `make hub`'s
    per-user JUPYTER_CONFIG_PATH; an instructor's runs the course image (singleuser.image, every other
    user's, is the students' image, which holds nothing of the grader)."""
    return (
        "# Written by `make hub-values` (autograder/classroom/hub_values.py): each user's server reads the\n"
        "# course's Jupyter configuration of its role (nbgrader's exchange; students: no Formgrader); the\n"
        "# instructors' run the course image, everyone else's singleuser.image, the students' image.\n"
        f"_INSTRUCTORS = {set(instructors)!r}\n"
        "def _course_config_path(spawner):\n"
        f"    return {CONFIG_MOUNT!r} + ('/instructors' if spawner.user.name in _INSTRUCTORS else '/students')\n"
        "c.KubeSpawner.environment.update({'JUPYTER_CONFIG_PATH': _course_config_path})\n"
        "def _course_image(spawner):\n"
        "    if spawner.user.name in _INSTRUCTORS:\n"
        f"        spawner.image = {course_image!r}\n"
        f"        spawner.cmd = [{SINGLEUSER!r}]\n"
        "c.KubeSpawner.pre_spawn_hook = _course_image\n"
    )


def _image(conf: dict, key: str) -> tuple[str, str]:
    """course.toml [hub]'s image `key` as (name, tag)."""
    image, _, tag = conf[key].rpartition(":")
    if not image or "/" in tag:
        raise HubError(f"course.toml [hub] {key} = {conf[key]!r}: an image with its tag, name:tag")
    return image, tag


def values(conf: dict | None = None) -> dict:
    """The chart's values for the course (what values.yaml holds, without its comments)."""
    conf = conf or settings()
    if ngshare.chosen(conf):
        raise HubError(
            'course.toml [hub] exchange = "ngshare": on Kubernetes, ngshare is installed with its own Helm chart '
            "(values.yaml's comments); here the exchange is the folder on the shared volume"
        )
    students, instructors = accounts(conf)
    _image(conf, "image")
    image, tag = _image(conf, "student_image")
    if conf["student_image"] == conf["image"]:
        raise HubError(
            f"course.toml [hub] student_image = {conf['student_image']!r}: the course image, which holds the grader; "
            "the students' image is another (autograder/classroom/student_image.py)"
        )
    files = {}
    for role in ("students", "instructors"):
        for name, text in user_config_files(conf, students=role == "students").items():
            key = f"{role}-{name.replace('/', '-').replace('_', '-')}"
            files[key] = {"mountPath": f"{CONFIG_MOUNT}/{role}/{name}", "stringData": text}
    exchange = str(Path(conf["exchange"]))
    return {
        "singleuser": {
            "image": {"name": image, "tag": tag},
            "uid": 1000,  # the image's jovyan: nbgrader then takes each user's id from the hub (JUPYTERHUB_USER)
            "cmd": [student_image.SINGLEUSER],
            "defaultUrl": "/lab",
            "extraEnv": {"COURSE_EXCHANGE": exchange},
            "extraFiles": files,
            "storage": {
                "extraVolumes": [{"name": EXCHANGE_CLAIM, "persistentVolumeClaim": {"claimName": EXCHANGE_CLAIM}}],
                "extraVolumeMounts": [{"name": EXCHANGE_CLAIM, "mountPath": exchange}],
            },
        },
        "hub": {
            "loadRoles": {"server": {"scopes": ["inherit"]}},
            "extraConfig": {"course-roles": _role_hook(instructors, conf["image"])},
            "config": {
                "JupyterHub": {
                    "load_groups": {
                        f"nbgrader-{COURSE_ID}": {"users": students},
                        f"formgrade-{COURSE_ID}": {"users": instructors},
                    },
                    "authenticator_class": "dummy",
                },
                "Authenticator": {"admin_users": instructors, "allowed_users": sorted(students + instructors)},
            },
        },
    }


class _Dumper(yaml.SafeDumper):
    """YAML as a person edits it: no anchors and aliases, multi-line text as a block."""

    def ignore_aliases(self, data) -> bool:
        return True


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None),
)


def _dump(data: dict) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)


def _commented(block: dict, indent: int) -> str:
    text = _dump(block)
    return "".join(" " * indent + "# " + line + "\n" for line in text.splitlines())


def render(vals: dict, course_image: str) -> str:
    """values.yaml's text: the values, with the lines that switch authentication commented at the end
    of hub.config (uncommented, they are keys of hub.config) and ngshare's after them; `course_image`:
    the instructors' (course.toml [hub] image), named in the header."""
    body = _dump(vals)
    if not body.rstrip().endswith(vals["hub"]["config"]["Authenticator"]["allowed_users"][-1]):
        raise HubError("values.yaml: hub.config.Authenticator must come last, before the commented authenticators")
    auth = AUTH_NOTE + "".join(
        f"    # {name}:\n" + _commented(block, 4) for name, block in zip(("OAuth", "LTI 1.3"), (OAUTH, LTI13))
    )
    head = HEADER.format(
        version=CHART_VERSION,
        app_version=source()["app_version"],
        course=COURSE_ID,
        claim=EXCHANGE_CLAIM,
        exchange=vals["singleuser"]["extraEnv"]["COURSE_EXCHANGE"],
        student_image="{name}:{tag}".format(**vals["singleuser"]["image"]),
        student_image_dir=STUDENT_IMAGE,
        course_image=course_image,
    )
    return head + body + auth + NGSHARE


def exchange_claim(size: str = "10Gi") -> dict:
    """The exchange's volume: ReadWriteMany, as every user's server mounts it at once."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": EXCHANGE_CLAIM, "labels": {"app.kubernetes.io/part-of": COURSE_ID}},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}},
    }


def merged(defaults: dict, given: dict) -> dict:
    """Helm's coalescing of a values file over the chart's defaults: maps merge, anything else is
    replaced, and null removes the key."""
    out = dict(defaults)
    for key, value in given.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def validate(given: dict) -> None:
    """The values merged over the chart's defaults, against the chart's schema (jsonschema draft 7,
    as the schema declares); HubError naming every place that is wrong."""
    import jsonschema

    schema = vendored("values.schema.yaml")
    errors = sorted(
        jsonschema.Draft7Validator(schema).iter_errors(merged(vendored("values.yaml"), given)),
        key=lambda e: list(map(str, e.absolute_path)),
    )
    if errors:
        lines = [f"  at {'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors]
        raise HubError(f"not valid values for Zero to JupyterHub {CHART_VERSION}:\n" + "\n".join(lines))


def write(folder: Path, conf: dict | None = None) -> list[Path]:
    """values.yaml and exchange-pvc.yaml into a folder, the values validated first, and the students'
    image's build context beside them (student_image.write_context)."""
    conf = conf or settings()
    vals = values(conf)
    validate(vals)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = [folder / "values.yaml", folder / "exchange-pvc.yaml"]
    out[0].write_text(render(vals, conf["image"]), encoding="utf-8")
    out[1].write_text(
        "# The exchange's volume for the course on Kubernetes (autograder/classroom/hub_values.py): its storage\n"
        "# class must offer ReadWriteMany (NFS, CephFS, a cloud's file storage); set storageClassName if it\n"
        "# is not the cluster's default.\n" + _dump(exchange_claim()),
        encoding="utf-8",
    )
    out.append(student_image.write_context(folder / STUDENT_IMAGE, source()["app_version"]))
    return out
