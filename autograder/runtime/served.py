"""Objects the grader serves to a student's code: heads and embeddings that live in the grader.

A `ServedModule` is an `nn.Module` with no parameters and no code of its own to read: calling
it sends the input to the grader, which runs its module and sends the output back (and the
attention weights, readable as `.A` after a call). Gradients flow through it: `backward`,
`torch.autograd.grad`, `torch.func.grad`/`vjp`, `torch.func.vmap`, hooks, `no_grad` and double
precision all work as they do on a real module.
"""
from __future__ import annotations

import socket
import threading

import torch

from .plain import from_plain, to_plain
from .wire import receive, send


class Link:
    """One connection to the grader for every served object of a kernel."""

    def __init__(self, socket_path: str):
        self._path = socket_path
        self._sock = None
        self._lock = threading.Lock()

    def request(self, message: dict) -> dict:
        with self._lock:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._sock.connect(self._path)
            send(self._sock, message)
            reply = receive(self._sock)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def close(self) -> None:
        """Hang up; a served object called later connects again."""
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


class ServedModule(torch.nn.Module):
    """A module that lives in the grader: call it like any module; `.A` holds the last weights."""

    def __init__(self, link: Link, token: str):
        super().__init__()
        self._link = link
        self._token = token
        self._last_call = None
        self.A = None

    def forward(self, x):
        return _ServedCall.apply(self, x)

    def extra_repr(self) -> str:
        return "served by the grader"


def _plain(t: torch.Tensor) -> dict:
    """A tensor's values as plain data, also from under torch.func's wrappers (a backward run under
    torch.func.grad gets a wrapped gradient)."""
    functorch = torch._C._functorch
    with torch._C._DisableFuncTorch():
        while functorch.is_functorch_wrapped_tensor(t):
            t = functorch.get_unwrapped(t)
        return to_plain(t.detach())


class _ServedCall(torch.autograd.Function):
    @staticmethod
    def forward(module, x):
        reply = module._link.request({"op": "forward", "token": module._token, "x": _plain(x)})
        module._last_call = reply["call"]
        module.A = from_plain(reply["A"], tensors=True) if reply.get("A") is not None else None
        return from_plain(reply["out"], tensors=True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        module, x = inputs
        ctx.link, ctx.call = module._link, module._last_call

    @staticmethod
    def backward(ctx, grad_out):
        reply = ctx.link.request({"op": "backward", "call": ctx.call, "grad": _plain(grad_out)})
        return None, from_plain(reply["grad_x"], tensors=True)

    @staticmethod
    def vmap(info, in_dims, module, x):
        """torch.func.vmap: one call per slice of the mapped axis, stacked."""
        x = x.movedim(in_dims[1], 0)                                 # (N, ...)
        outs, weights = [], []
        for i in range(x.shape[0]):
            outs.append(_ServedCall.apply(module, x[i]))
            weights.append(module.A)
        if all(a is not None for a in weights):
            module.A = torch.stack(weights)                          # (N, ...)
        return torch.stack(outs), 0                                  # (N, ...)
