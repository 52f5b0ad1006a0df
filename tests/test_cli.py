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
