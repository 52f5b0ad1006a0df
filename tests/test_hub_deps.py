"""`make hub-deps`: JupyterHub with the pins of requirements-hub.txt in the course environment, pip
check clean, and configurable-http-proxy at the Makefile's version (REQUIRE_HUB=1 in CI)."""
import re
import subprocess
import sys
from importlib import metadata

from conftest import ROOT
from hub import PROXY, hub_or_skip, pinned


def test_the_hub_pins_are_installed_beside_the_course_pins_and_pip_check_is_clean():
    hub_or_skip()
    hub, course = pinned(ROOT / "requirements-hub.txt"), pinned(ROOT / "requirements.txt")
    assert "jupyterhub" in hub and not set(hub) & set(course), "the hub's pins repeat or change a course pin"
    for name, version in {**hub, **course}.items():
        installed = metadata.version(name).split("+")[0]          # torch's CPU build: 2.13.0+cpu
        assert installed == version, f"{name}: installed {metadata.version(name)}, pinned {version}"
    check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "No broken requirements" in check.stdout, check.stdout + check.stderr


def test_the_proxy_is_the_makefiles_version():
    hub_or_skip()
    wanted = re.search(r"^CHP_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    shown = subprocess.run([str(PROXY), "--version"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.strip() == wanted, (shown.stdout, shown.stderr)
