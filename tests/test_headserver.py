"""Heads served by the grader behave exactly like local heads, and give nothing else away."""
import os
import tempfile

import pytest
import torch

from autograder.checks.contexts import LocalContext, RemoteContext
from autograder.checks.framework import outcome
from autograder.checks.suites import SUITES, MutantHead
from autograder.headserver import HeadServer


def reference_perturbation(head, x, t):
    out = head(x)
    x2 = x.clone()
    x2[:, t, :] = torch.randn_like(x2[:, t, :])
    out2 = head(x2)
    assert torch.equal(out[:, :t], out2[:, :t])
    assert (out[:, t:] != out2[:, t:]).any(dim=-1).all()


def reference_gradient(head, x, i):
    x = x.detach().clone().requires_grad_(True)
    head(x)[0, i].sum().backward()
    assert (x.grad[0, i + 1:] == 0).all()
    assert (x.grad[0, : i + 1] != 0).any(dim=-1).all()


def reference_simplex(A):
    T = A.shape[-1]
    assert (A >= 0).all()
    assert ((A.sum(-1) - 1).abs() <= 1e-6).all()
    assert (A[..., torch.triu(torch.ones(T, T, dtype=torch.bool), 1)] == 0).all()


@pytest.fixture
def server():
    folder = tempfile.mkdtemp(prefix="hs-")
    with HeadServer(os.path.join(folder, "s.sock")) as srv:
        yield srv


def run_suite(ctx, name):
    torch.manual_seed(0)
    x = torch.randn(4, 8, 32)
    results = {}
    for token, obj in ctx.suite(name):
        if name == "simplex":
            results[token] = [outcome(reference_simplex, obj)]
        elif name == "causal_perturbation":
            results[token] = []
            for t in (2, 5, 7):
                torch.manual_seed(t)
                results[token].append(outcome(reference_perturbation, obj, x, t).split(":")[0])
        else:
            results[token] = [outcome(reference_gradient, obj, x, i).split(":")[0] for i in (0, 3, 6)]
    return results


@pytest.mark.parametrize("name", ["simplex", "causal_perturbation", "causal_gradient"])
def test_remote_suite_gives_the_same_verdicts_as_the_local_one(server, name):
    local = run_suite(LocalContext(), name)
    remote = run_suite(RemoteContext(server.socket_path), name)
    by_case = {case.name: remote[token] for token, case in server.cases(name)}
    assert set(by_case) == set(local)
    for case_name, verdicts in local.items():
        assert [v.split(":")[0] for v in by_case[case_name]] == [v.split(":")[0] for v in verdicts], case_name


@pytest.mark.parametrize("name", ["simplex", "causal_perturbation", "causal_gradient"])
def test_reference_checks_pass_every_wheat_and_catch_every_chaff(name):
    verdicts = run_suite(LocalContext(), name)
    for case in SUITES[name]:
        caught = any(v.startswith("assertion") for v in verdicts[case.name])
        if case.kind == "wheat":
            assert all(v == "returned" for v in verdicts[case.name]), f"reference rejects wheat {case.name}"
        else:
            assert caught, f"reference misses chaff {case.name}: {case.description}"


def test_tokens_say_nothing_and_the_order_is_shuffled(server):
    ctx = RemoteContext(server.socket_path)
    tokens = [t for t, _ in ctx.suite("causal_gradient")]
    names = [c.name for _, c in server.cases("causal_gradient")]
    assert not set(tokens) & set(names)
    assert all(len(t) == 16 and set(t) <= set("0123456789abcdef") for t in tokens), tokens
    assert len(set(tokens)) == len(tokens), "two cases share a token"
    other = tempfile.mkdtemp(prefix="hs-")
    with HeadServer(os.path.join(other, "s.sock")) as second:
        RemoteContext(second.socket_path).suite("causal_gradient")
        orders = [[c.name for _, c in srv.cases("causal_gradient")] for srv in (server, second)]
    assert sorted(orders[0]) == sorted(orders[1])
    # 16 cases: two servers serve the same order by chance with probability 1/16! (about 5e-14)
    assert orders[0] != orders[1], "two servers serve the suite in the same order: it is not shuffled"


def test_remote_forward_and_backward_match_the_local_head(server):
    ctx = RemoteContext(server.socket_path)
    ctx.suite("causal_gradient")
    token, case = next((t, c) for t, c in server.cases("causal_gradient") if c.name == "correct_seed0")
    from autograder.checks.contexts import RemoteHead
    remote, local = RemoteHead(ctx, token), case.build()
    torch.manual_seed(1)
    x = torch.randn(4, 8, 32)
    xr, xl = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    out_r, out_l = remote(xr), local(xl)
    assert torch.equal(out_r, out_l) and torch.equal(remote.A, local.A)
    (out_r[0, 3].sum() * 2).backward()
    (out_l[0, 3].sum() * 2).backward()
    assert torch.allclose(xr.grad, xl.grad, atol=1e-7)


def test_server_refuses_abuse_with_an_error_not_a_crash(server):
    ctx = RemoteContext(server.socket_path)
    with pytest.raises(RuntimeError, match="KeyError"):
        ctx.request({"op": "forward", "token": "nope", "x": None})
    with pytest.raises(RuntimeError, match="larger than any"):
        token = ctx.suite("causal_gradient")[0][0]
        from autograder.checks.plain import to_plain
        ctx.request({"op": "forward", "token": token, "x": to_plain(torch.zeros(1, 8, 20_000))})
    with pytest.raises(RuntimeError, match="unknown request"):
        ctx.request({"op": "read_file", "path": "/etc/passwd"})
    assert ctx.suite("simplex")            # still serving


def test_mutant_heads_do_not_disturb_the_callers_random_stream():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    MutantHead("correct", seed=42)
    assert torch.equal(torch.rand(3), expected)
