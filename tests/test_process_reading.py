"""The process checks' reading of an answer's source (source/step-04/checks/process.py): whole-matrix
work is found whatever the library or op, one entry's work is never taken for it, and code that can
change what its text says (the trace turned off, exec, a second definition) cannot be judged."""
from __future__ import annotations

import pytest

from conftest import STEP4  # noqa: F401  (the step's checks are importable once the step is loaded)

import importlib

process = importlib.import_module(STEP4.checks["scores_entrywise_hidden"].__module__.rpartition(".")[0] + ".process")

QK = {"q": ("B", "T", "D"), "k": ("B", "T", "D")}
SCORES = {"scores": ("*", "K")}
QKV = {"q": ("*", "Q", "D"), "k": ("*", "K", "D"), "v": ("*", "K", "E")}

LOOPS = '''
    B, T, d = q.shape
    s = torch.zeros(B, T, T, dtype=q.dtype)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                s[b, i, j] = {entry}
    return s'''

ONE_ENTRY = {
    "dot of two vectors": "torch.dot(q[b, i], k[b, j])",
    "(1×d)@(d×1)": "(q[b, i:i + 1] @ k[b, j:j + 1].T).squeeze()",
    "width-1 slices multiplied": "(q[b, i:i + 1] * k[b, j:j + 1]).sum()",
    "numpy dot": "np.dot(q.numpy()[b, i], k.numpy()[b, j])",
    "vecdot of two vectors": "torch.linalg.vecdot(q[b, i], k[b, j])",
    "einsum of two vectors": "torch.einsum('d,d->', q[b, i], k[b, j])",
    "Python floats": "sum(a * c for a, c in zip(q[b, i].tolist(), k[b, j].tolist()))",
}

WHOLE = {
    "matmul": "    return q @ k.transpose(-2, -1)",
    "numpy per sequence": "    out = np.zeros((2, 3, 3))\n    for b in range(2):\n        out[b] = q.numpy()[b] @ k.numpy()[b].T\n    return out",
    "broadcast vecdot": "    return torch.linalg.vecdot(q[:, :, None, :], k[:, None, :, :])",
    "in-place broadcast": "    p = q[:, :, None, :] + torch.zeros_like(k)[:, None, :, :]\n    p *= k[:, None, :, :]\n    return p.sum(-1)",
    "a row at once": "    s = torch.zeros(2, 3, 3)\n    for b in range(2):\n        for i in range(3):\n            s[b, i] = k[b] @ q[b, i]\n    return s",
    "a helper doing it": "    return helper(q, k)\n\ndef helper(a, c):\n    return torch.bmm(a, c.transpose(1, 2))",
    "einsum": "    return torch.einsum('bid,bjd->bij', q, k)",
}


@pytest.mark.parametrize("entry", list(ONE_ENTRY.values()), ids=list(ONE_ENTRY))
def test_one_entry_at_a_time_is_one_entrys_work(entry):
    source = "def scores_entrywise(q, k):" + LOOPS.format(entry=entry)
    assert process.entrywise_work([source], "scores_entrywise", QK) == ("", [])


@pytest.mark.parametrize("body", list(WHOLE.values()), ids=list(WHOLE))
def test_whole_matrix_work_is_found_in_any_library(body):
    problem, found = process.entrywise_work(["def scores_entrywise(q, k):\n" + body], "scores_entrywise", QK)
    assert problem == "" and found, body


@pytest.mark.parametrize("cell", [
    "with torch._C.DisableTorchFunction():\n    pass",
    "exec('x = 1')",
    "globals()['scores_entrywise'] = lambda q, k: q @ k.mT",
    "import sys\nsys.modules['torch'].matmul = None",
    "from torch.overrides import TorchFunctionMode",
])
def test_code_that_can_change_what_its_text_says_is_not_judged(cell):
    answer = "def scores_entrywise(q, k):" + LOOPS.format(entry=ONE_ENTRY["dot of two vectors"])
    problem, _ = process.entrywise_work([answer, cell], "scores_entrywise", QK)
    assert "cannot be judged" in problem


def test_a_second_definition_is_not_judged_but_a_cell_run_twice_is():
    answer = "def scores_entrywise(q, k):" + LOOPS.format(entry=ONE_ENTRY["dot of two vectors"])
    assert process.entrywise_work([answer, answer], "scores_entrywise", QK) == ("", [])
    other = "def scores_entrywise(q, k):\n    return q @ k.mT"
    assert "more than once" in process.entrywise_work([answer, other], "scores_entrywise", QK)[0]
    assert "no `def" in process.entrywise_work(["x = 1"], "scores_entrywise", QK)[0]


ONLINE = '''
def online_softmax(scores):
    m = torch.full(scores.shape[:-1], float('-inf'), dtype=scores.dtype)
    z = torch.zeros(scores.shape[:-1], dtype=scores.dtype)
    for j in range(scores.shape[-1]):
        new = torch.maximum(m, scores[..., j])
        z = z * torch.exp(m - new) + torch.exp(scores[..., j] - new)
        m = new
    return torch.exp(scores - m[..., None]) / z[..., None]
'''


def test_a_streamed_softmax_is_streamed_and_a_one_shot_one_is_not():
    assert process.streamed_work([ONLINE], "online_softmax", SCORES) == ("", [])
    for body in ("x = scores.numpy()\n    e = np.exp(x - x.max(axis=-1, keepdims=True))\n    return e / e.sum(-1, keepdims=True)",
                 "return torch.softmax(scores, dim=-1)",
                 "return torch.exp(scores - torch.logsumexp(scores, -1, keepdim=True))"):
        problem, found = process.streamed_work([f"def online_softmax(scores):\n    {body}"], "online_softmax", SCORES)
        assert problem == "" and found, body


def test_streaming_attention_without_and_with_the_t_by_t_matrix():
    streamed = '''
def streaming_attention(q, k, v):
    T = q.shape[-2]
    m = torch.full(q.shape[:-1], float('-inf'), dtype=q.dtype)
    z = torch.zeros(q.shape[:-1], dtype=q.dtype)
    o = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for j in range(T):
        s = (q @ k[..., j, :, None]).squeeze(-1) / q.shape[-1] ** 0.5
        new = torch.maximum(m, s)
        w = torch.exp(s - new)
        z = z * torch.exp(m - new) + w
        o = o * torch.exp(m - new)[..., None] + w[..., None] * v[..., j, None, :]
        m = new
    return o / z[..., None]
'''
    assert process.streamed_work([streamed], "streaming_attention", QKV) == ("", [])
    one_shot = "def streaming_attention(q, k, v):\n    return torch.softmax(q @ k.mT, -1) @ v"
    problem, found = process.streamed_work([one_shot], "streaming_attention", QKV)
    assert problem == "" and len(found) >= 2
