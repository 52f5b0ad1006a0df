"""The environment files agree, and this environment is the one they pin."""
import re
from importlib import metadata

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import ROOT


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_requirements() -> dict[str, Requirement]:
    reqs = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            reqs[norm(req.name)] = req
    return reqs


def conda_environment() -> tuple[dict[str, str], list[str], str]:
    """(conda package -> version spec, pip lines, python spec) from environment.yml, read without YAML
    tricks: the file is a flat list, as conda and Binder read it."""
    conda, pip_lines, python = {}, [], ""
    in_pip = False
    for raw in (ROOT / "environment.yml").read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if line.strip() == "- pip:":
            in_pip = True
            continue
        if in_pip and raw.startswith("      - "):
            pip_lines.append(line.strip()[2:].strip())
            continue
        in_pip = False
        item = line.strip()
        if raw.startswith("  - ") and not raw.startswith("  - conda-forge"):
            spec = item[2:].strip()
            name = re.split(r"[<>=!]", spec, maxsplit=1)[0]
            version = spec[len(name):]
            if name == "python":
                python = version
            elif name != "pip":
                conda[norm(name)] = version
    return conda, pip_lines, python


def test_environment_yml_lists_exactly_the_pip_requirements():
    reqs = pip_requirements()
    conda, pip_lines, python = conda_environment()
    pip_reqs = {norm(Requirement(l).name): Requirement(l) for l in pip_lines if not l.startswith("-")}
    readme = (ROOT / "README.md").read_text()
    assert python.startswith("=") and f"python{python[1:]} -m venv" in readme and f"Python {python[1:]}" in readme, \
        f"environment.yml asks python{python}, the README's setup another"
    assert set(conda) | set(pip_reqs) == set(reqs), (
        f"only in environment.yml: {sorted(set(conda) | set(pip_reqs) - set(reqs))}; "
        f"only in requirements.txt: {sorted(set(reqs) - set(conda) - set(pip_reqs))}")
    assert "-e ." in pip_lines, "environment.yml must install the course package (pip: -e .)"


def test_every_pin_satisfies_the_conda_range():
    reqs = pip_requirements()
    conda, pip_lines, _ = conda_environment()
    for name, spec in conda.items():
        pinned = next(iter(reqs[name].specifier)).version
        conda_spec = SpecifierSet(spec.replace("=", "==", 1) if re.fullmatch(r"=[\d.]+", spec) else spec)
        assert Version(pinned) in conda_spec, f"{name}: requirements.txt pins {pinned}, environment.yml asks {spec}"
    for line in pip_lines:
        if not line.startswith("-"):
            req = Requirement(line)
            assert str(req.specifier) == str(reqs[norm(req.name)].specifier), f"{req.name} pinned differently"


def test_the_readme_installs_the_pinned_torch():
    """The README's commands for a setup by hand install the torch requirements.txt pins."""
    (spec,) = pip_requirements()["torch"].specifier
    installs = re.findall(r"pip install torch==([\w.]+)", (ROOT / "README.md").read_text())
    assert installs and set(installs) == {spec.version}, f"requirements.txt pins torch {spec.version}, the README installs {installs}"


def test_every_requirement_is_pinned_and_installed_at_that_version():
    for name, req in pip_requirements().items():
        (spec,) = req.specifier
        assert spec.operator == "==", f"{name} is not pinned exactly"
        installed = Version(metadata.version(name))
        assert installed.release == Version(spec.version).release, (
            f"{name} {installed} is installed but requirements.txt pins {spec.version}: run `make install`")
