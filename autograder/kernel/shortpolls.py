"""nbgrader's Execute preprocessor, and any nbclient client, without the slider-cell hang (nbclient issue 312).

nbclient waits for a cell's reply on the shell socket while, for an ipywidgets Output widget (every
`interactive` slider has one), it also sends on that socket from another task. With pyzmq's asyncio
sockets that wait can miss its wake-up and sleep until the whole cell timeout runs out: a slider cell
then takes the full timeout. Short polls notice the waiting message within POLL_STEP.

This module stands alone and holds nothing but the polling: it imports only the standard library,
nbclient and nbgrader. Every user's server on the course's JupyterHub gets a copy of it beside its
nbgrader configuration, which names its Execute for Validate.
"""

from __future__ import annotations

import time
from queue import Empty

from nbclient.util import run_sync
from nbgrader.preprocessors import Execute as NbgraderExecute

POLL_STEP = 0.25  # seconds of one poll of a kernel's channel (a cadence, not a limit)


def poll_in_short_steps(channel) -> None:
    """Make `channel.get_msg(timeout)` poll the socket in steps of POLL_STEP instead of one long wait."""
    wait = channel.get_msg

    async def get_msg(timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = POLL_STEP if deadline is None else max(0.0, min(POLL_STEP, deadline - time.monotonic()))
            try:
                return await wait(timeout=step)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    get_msg.polls_in_short_steps = True  # type: ignore[attr-defined]
    channel.get_msg = get_msg


class ShortPolls:
    """Mixin for nbclient clients (nbgrader's Execute included): short polls on the shell and iopub channels."""

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        poll_in_short_steps(kc.shell_channel)
        poll_in_short_steps(kc.iopub_channel)
        return kc

    # nbclient's synchronous path (`setup_kernel`, then `execute_cell` one cell at a time) calls its own
    # `run_sync` of the base class's coroutine, which would skip the one above: its channels waited in
    # one long wait, and a slider cell on a busy machine took the whole cell timeout.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)


class Execute(ShortPolls, NbgraderExecute):
    """nbgrader's Execute preprocessor without the slider-cell hang."""
