"""The command line (python -m autograder, the Makefile's targets): every command parses."""
import pytest

from autograder.__main__ import COMMANDS, parser


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_answers_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        parser().parse_args([command, "--help"])
    assert done.value.code == 0
    assert "--step" in capsys.readouterr().out, f"{command} takes no --step"


def test_an_unknown_step_is_refused_with_the_steps_there_are():
    from autograder.steps import UnknownStep, find_step
    with pytest.raises(UnknownStep, match=r"no step called 'step-99' .*\(steps: .*step-04"):
        find_step("step-99")


def test_a_graders_error_becomes_a_message_and_an_exit_code_in_main_alone(capsys):
    """Modules raise GraderErrors (they never exit); `python -m autograder` alone turns one into a line on
    stderr, prefixed by the command, and its exit code: 2 for an option it cannot use, 1 otherwise."""
    from autograder.__main__ import main
    from autograder.errors import GraderError, SetupError, UsageError
    from autograder.steps import UnknownStep
    assert issubclass(UnknownStep, UsageError) and issubclass(SetupError, GraderError)
    assert main(["steps", "--step", "step-04"]) == 0
    capsys.readouterr()
    assert main(["release", "--step", "step-99"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("release: no step called 'step-99'") and "Traceback" not in err
    assert main(["similarity", "--threshold", "1.5"]) == 2
    assert capsys.readouterr().err.strip() == "similarity: --threshold must be above 0 and at most 1"


def test_no_module_of_the_engine_exits_by_itself():
    """Only __main__ turns an error into an exit code: no `SystemExit` raised anywhere else in the engine."""
    import ast
    from pathlib import Path
    engine = Path(__file__).resolve().parent.parent / "autograder"
    raising = []
    for path in sorted(engine.rglob("*.py")):
        if path.name == "__main__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(target, ast.Name) and target.id in ("SystemExit", "exit"):
                    raising.append(f"{path.relative_to(engine.parent)}:{node.lineno}")
            if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "SystemExit" for b in node.bases):
                raising.append(f"{path.relative_to(engine.parent)}:{node.lineno} (class {node.name})")
    assert raising == []


def test_every_error_the_engine_defines_has_the_one_base():
    """One error base: every exception class the engine defines is a GraderError, but for the kernel's side
    (autograder/runtime/), which a graded kernel imports alone and so imports nothing of the grader."""
    import importlib
    import inspect
    import pkgutil

    import autograder
    from autograder.errors import GraderError
    found, outside = [], []
    for info in pkgutil.walk_packages(autograder.__path__, "autograder."):
        if info.name.startswith("autograder.runtime") or info.name == "autograder.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name:
                found.append(name)
                if not issubclass(value, GraderError):
                    outside.append(f"{info.name}.{name}")
    assert len(found) >= 15, found
    assert outside == []


def test_student_text_reaches_the_terminal_as_text():
    """Whatever a command prints passes the terminal's allowlist (autograder/safetext.py): a file name
    holding an OSC sequence (a window title, a clipboard write), colours and a right-to-left override
    comes out as its escapes, on the real command line."""
    import subprocess
    import sys
    from conftest import ROOT
    hostile = "answers\x1b]0;owned\x07\x1b]52;c;SGVsbG8=\x07\x1b[31mred\u202eevil.csv"
    proc = subprocess.run([sys.executable, "-m", "autograder", "written-scores", "--step", "step-04", "--from", hostile],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "no such file" in proc.stderr, proc.stderr
    assert "\\x1b]0;owned\\x07" in proc.stderr and "\\u202eevil" in proc.stderr, proc.stderr
    assert all(c.isprintable() or c in "\n\t" for c in proc.stdout + proc.stderr), repr(proc.stderr)


def test_the_terminal_allowlist_passes_every_script_and_nothing_else():
    from autograder.safetext import terminal_text
    prose = "Zoë 学生 عربى Ελληνικά — ✓ 1.5 ≤ 2\n\tnext"
    assert terminal_text(prose) == prose
    for c in ["\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\x00", "\r", "\x7f", "\ue000", "\udceb", "\u200b",
              # printable, yet shown as nothing: Hangul fillers, a variation selector, the grapheme joiner
              "\u3164", "\u115f", "\uffa0", "\ufe0f", "\u034f", "\U000e0100"]:
        assert terminal_text(f"a{c}b") != f"a{c}b" and terminal_text(f"a{c}b").isprintable(), repr(c)
