"""One head of causal self-attention, exactly as the Step 4 handout gives it.

The notebook `02-the-head` shows the same class in a cell for students to read and run;
a test keeps the two identical.
"""
import torch, torch.nn as nn        # import with alias (as)
import torch.nn.functional as F

class Head(nn.Module):              # class definition with inheritance (subclass of nn.Module)
    def __init__(self, d, d_head, T_max):
        super().__init__()          # super(): call the parent class's constructor
        self.key   = nn.Linear(d, d_head, bias=False)
        self.query = nn.Linear(d, d_head, bias=False)
        self.value = nn.Linear(d, d_head, bias=False)
        # causal mask, precomputed; `register_buffer` = tensor state that isn't a parameter
        self.register_buffer('tril', torch.tril(torch.ones(T_max, T_max)))

    def forward(self, x):                       # x: (B, T, d)
        B, T, d = x.shape                       # tuple unpacking
        q, k, v = self.query(x), self.key(x), self.value(x)     # (B, T, d_head)
        scores = q @ k.transpose(-2, -1) / k.shape[-1]**0.5     # @ = matrix multiply; ** = power; -1 = last index
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float('-inf'))  # boolean mask (==); float('-inf')
        A = F.softmax(scores, dim=-1)                           # (B, T, T)
        self.A = A.detach()                                     # stash for visualization
        return A @ v                                            # (B, T, d_head)
