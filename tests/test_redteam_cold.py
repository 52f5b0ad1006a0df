"""The red-team corpus again, graded in cold kernels (a fresh kernel started per notebook): the
grader's fallback where warm kernels cannot be had (`--kernels cold`, no fork, a template that died).
The same batch and the same tests as tests/test_redteam.py, which grades it in warm kernels."""
import pytest

from test_redteam import *  # noqa: F401,F403  (the tests, collected again here with the fixture below)
from test_redteam import pytestmark  # noqa: F401


@pytest.fixture(scope="module")
def kernels() -> str:
    return "cold"
