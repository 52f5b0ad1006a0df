"""Grading kernels, started through jupyter_client's extension point for that: a kernel provisioner.

A grading kernel is an ordinary ipykernel whose command is wrapped by the job's sandbox (see
autograder/kernel/sandbox.py: resource limits, and bubblewrap when it is used). jupyter_client's
`KernelManager` asks its kernel spec manager for the kernel's spec and the spec names the
provisioner that launches it:

  * `GradingKernelSpecs` (a `KernelSpecManager`) knows one kernel, `grading`, whose spec is the
    sandboxed command and names the provisioner `grading-kernel` with the job's sandbox as its
    configuration;
  * `GradingProvisioner` (a `LocalProvisioner`) lets the sandbox make the job's scratch folder ready
    for the connection file it has just written, and tells the sandbox when the kernel answers.

`start_kernel` puts these together; the executor (autograder/kernel/execute.py) only runs cells.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager, NoSuchKernel
from jupyter_client.provisioning import KernelProvisionerFactory, LocalProvisioner
from traitlets import Any, Unicode

KERNEL_NAME = "grading"
PROVISIONER_NAME = "grading-kernel"

# the interpreter as kernels, templates and limit wrappers are started with: sys.executable without
# "..", which would name folders the sandbox does not bind (python started as ../.venv/bin/python)
PYTHON = os.path.abspath(sys.executable)


def kernel_command() -> list[str]:
    """The kernel, as every sandbox starts it (after its own wrapping). quit() and exit() in a
    cell stop the kernel's event loop 0.1 s later, in whichever cell then runs: the grade would
    depend on timing. The grading kernel ignores them (the shell's ask_exit does nothing)."""
    return [
        PYTHON,
        "-m",
        "ipykernel_launcher",
        "-f",
        "{connection_file}",
        "--HistoryManager.hist_file=:memory:",
        "--IPKernelApp.exec_lines=['get_ipython().ask_exit = lambda: None']",
    ]


class GradingProvisioner(LocalProvisioner):
    """Launches a grading kernel as its spec says (the sandboxed command) and keeps the job's
    sandbox informed: connection file written, kernel answering."""

    sandbox = Any(help="the job's sandbox (autograder.kernel.sandbox.Sandbox or a subclass)").tag(config=True)
    workdir = Unicode(help="the kernel's working folder").tag(config=True)

    async def pre_launch(self, **kwargs):
        kwargs = await super().pre_launch(**kwargs)  # writes the connection file, formats the command
        self.sandbox.prepare(Path(self.parent.connection_file))
        return kwargs

    def ready(self) -> None:
        """The kernel answers: before any cell runs."""
        self.sandbox.started(Path(self.workdir))


class GradingKernelSpecs(KernelSpecManager):
    """Knows one kernel, `grading`: the sandbox's command for it, launched by GradingProvisioner."""

    def __init__(self, spec: KernelSpec, **kwargs):
        super().__init__(**kwargs)
        self.spec = spec

    def find_kernel_specs(self) -> dict[str, str]:
        return {}

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        if kernel_name != KERNEL_NAME:
            raise NoSuchKernel(kernel_name)
        return self.spec


def register_provisioner() -> None:
    """Make `grading-kernel` known to jupyter_client's provisioner factory. Provisioners are found
    through the `jupyter_client.kernel_provisioners` entry points of installed distributions; the
    grader is not an installed distribution (only `dlcourse` is), so its provisioner is entered here,
    in the factory's table of those entry points, as the factory itself does for its own default."""
    factory = KernelProvisionerFactory.instance()
    if PROVISIONER_NAME not in factory.provisioners:
        factory.provisioners[PROVISIONER_NAME] = EntryPoint(
            PROVISIONER_NAME, f"{__name__}:{GradingProvisioner.__name__}", KernelProvisionerFactory.GROUP_NAME
        )


def kernel_manager(sandbox, workdir: Path, env: dict, limits) -> AsyncKernelManager:
    """A kernel manager for one grading kernel of this job (not started): Unix sockets in the
    sandbox's connection folder (no TCP ports, nothing on the network)."""
    register_provisioner()
    spec = KernelSpec(
        argv=sandbox.argv(workdir, limits, env),
        env={},
        language="python",
        display_name="grading kernel",
        interrupt_mode=sandbox.interrupt_mode,
        metadata={
            "kernel_provisioner": {
                "provisioner_name": PROVISIONER_NAME,
                "config": {"sandbox": sandbox, "workdir": str(workdir)},
            }
        },
    )
    conn_dir = sandbox.connection_dir(workdir)
    options = {"ip": str(conn_dir / "kernel-ipc")} if sandbox.transport == "ipc" else {}
    return AsyncKernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=GradingKernelSpecs(spec),
        transport=sandbox.transport,
        connection_file=str(conn_dir / "kernel.json"),
        **options,
    )


async def launch(km: AsyncKernelManager, workdir: Path, env: dict, log_fd: int) -> None:
    """Start the kernel of `km` in `workdir`, its process's own stdout and stderr into `log_fd`."""
    await km.start_kernel(env=env, cwd=str(workdir), stdout=log_fd, stderr=subprocess.STDOUT)
