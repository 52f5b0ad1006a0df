"""`make hub-deps`: the hub's environment .hub-venv with the pins of requirements.txt and
requirements-hub.txt, ngshare's own environment .ngshare-venv with the pins of requirements-ngshare.txt,
`pip check` clean in both, and configurable-http-proxy at the Makefile's version (REQUIRE_HUB=1 in CI)."""
import json
import os
import re
import subprocess

from conftest import ROOT
from hub import NGSHARE_PYTHON, PROXY, hub_or_skip, pinned, python

# an environment judged by what is installed in it alone (a PYTHONPATH naming the checkout would show the
# course's own package, whose requirements only the course's environment has)
OWN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_the_hub_environment_holds_the_course_pins_and_the_hub_pins_and_pip_check_is_clean():
    hub_or_skip()
    hub, course = pinned(ROOT / "requirements-hub.txt"), pinned(ROOT / "requirements.txt")
    assert "jupyterhub" in hub and not set(hub) & set(course), "the hub's pins repeat or change a course pin"
    listed = subprocess.run([python(), "-m", "pip", "list", "--format=json"], capture_output=True, text=True, timeout=120,
                            env=OWN_ENV)
    installed = {re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in json.loads(listed.stdout)}
    for name, version in {**hub, **course}.items():
        assert installed.get(name, "").split("+")[0] == version, \
            f"{name}: installed {installed.get(name)}, pinned {version}"          # torch's CPU build: 2.13.0+cpu
    check = subprocess.run([python(), "-m", "pip", "check"], capture_output=True, text=True, timeout=120, env=OWN_ENV)
    assert check.returncode == 0 and "No broken requirements" in check.stdout, check.stdout + check.stderr


def test_ngshares_environment_holds_its_pins_and_pip_check_is_clean():
    """ngshare, the exchange as a hub service, in an environment of its own: it needs SQLAlchemy 1.x, the
    hub's environment has 2 (requirements-ngshare.txt); ngshare-exchange, its client, is in the hub's."""
    hub_or_skip()
    own = pinned(ROOT / "requirements-ngshare.txt")
    assert own["ngshare"] == "0.6.0" and own["sqlalchemy"].startswith("1.") and "ngshare" not in pinned(
        ROOT / "requirements-hub.txt")
    assert pinned(ROOT / "requirements-hub.txt")["ngshare-exchange"] == "0.5.2"
    assert own["jupyterhub"] == pinned(ROOT / "requirements-hub.txt")["jupyterhub"]
    listed = subprocess.run([str(NGSHARE_PYTHON), "-m", "pip", "list", "--format=json"], capture_output=True,
                            text=True, timeout=120, env=OWN_ENV)
    installed = {re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in json.loads(listed.stdout)}
    for name, version in own.items():
        assert installed.get(name) == version, f"{name}: installed {installed.get(name)}, pinned {version}"
    check = subprocess.run([str(NGSHARE_PYTHON), "-m", "pip", "check"], capture_output=True, text=True, timeout=120,
                           env=OWN_ENV)
    assert check.returncode == 0 and "No broken requirements" in check.stdout, check.stdout + check.stderr


def test_every_local_user_can_run_the_hubs_python():
    """The students' servers run as their own accounts: the interpreter must not be one under root's home."""
    hub_or_skip()
    real = subprocess.run([python(), "-c", "import sys, os; print(os.path.realpath(sys.executable))"],
                          capture_output=True, text=True, timeout=60).stdout.strip()
    assert real and not real.startswith("/root/"), real
    probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python(), "-c",
                            "import jupyterhub, nbgrader, dlcourse; print('ok')"],
                           capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip() == "ok", probe.stdout + probe.stderr


def test_the_proxy_is_the_makefiles_version():
    hub_or_skip()
    wanted = re.search(r"^CHP_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    shown = subprocess.run([str(PROXY), "--version"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.strip() == wanted, (shown.stdout, shown.stderr)
