"""Causal attention computed in blocks of keys with an online softmax (the streaming version of
notebook 06, vectorised over the queries and over blocks of keys): the T x T matrix A is never
held, only a (T, block) slice of scores at a time."""

from __future__ import annotations

import torch


def streaming_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block: int = 256) -> torch.Tensor:
    """softmax(q kᵀ / sqrt(d_k), causal) v; q, k: (..., T, d_k), v: (..., T, d_v)."""
    T, d_k = q.shape[-2], q.shape[-1]
    scale = d_k**-0.5
    running_max = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)  # (..., T)
    running_sum = torch.zeros(q.shape[:-1], dtype=q.dtype)  # (..., T)
    running_out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)  # (..., T, d_v)
    query_pos = torch.arange(T)[:, None]  # (T, 1)
    for start in range(0, T, block):
        stop = min(start + block, T)
        s = (q @ k[..., start:stop, :].transpose(-2, -1)) * scale  # (..., T, block)
        s = s.masked_fill(query_pos < torch.arange(start, stop)[None, :], float("-inf"))
        new_max = torch.maximum(running_max, s.amax(dim=-1))  # (..., T)
        # rows with no visible key yet keep max -inf: exp(-inf - -inf) would be nan
        safe_max = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        correction = torch.exp(running_max - safe_max)  # (..., T)
        weights = torch.exp(s - safe_max[..., None])  # (..., T, block)
        running_sum = running_sum * correction + weights.sum(dim=-1)
        running_out = running_out * correction[..., None] + weights @ v[..., start:stop, :]
        running_max = new_max
    return running_out / running_sum[..., None]  # (..., T, d_v)
