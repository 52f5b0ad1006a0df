"""The grader's errors: one base, `GraderError`, for every problem a person can fix.

A GraderError's message says what is wrong and what to do about it (run a command, fix a line of a
file, give another option). Modules raise them and never exit: only `python -m autograder`
(`__main__.py`) turns one into a message on stderr and an exit code, so the same function can be
called from a test, a notebook or another command and fail the same way.

  GraderError          a problem a person can fix; exit code 1
    UsageError         an option or argument a command cannot use; exit code 2
    SetupError         the course or the machine is not ready for what was asked (a program not
                       installed, a release not built, a damaged key); exit code 1
    and each module's own (RosterError, TermError, ExchangeError, SubmissionError, ...), which
    subclass one of these, and their builtin kind too (a RosterError is a ValueError).

Signals the grader uses inside itself (a student's name missing in the kernel, a kernel gone, a
template that cannot fork) are GraderErrors as well, so nothing the engine raises on purpose escapes
as a traceback. The kernel's side (`autograder/runtime/`) keeps errors of its own: a graded kernel
imports nothing of the grader but that folder.
"""

from __future__ import annotations


class GraderError(Exception):
    """A problem a person can fix; the message says what is wrong and what to do."""

    exit_code = 1


class UsageError(GraderError):
    """A command's option or argument that cannot be used."""

    exit_code = 2


class SetupError(GraderError):
    """The course or the machine is not ready for what was asked."""
