#!/usr/bin/python3
"""PyTorch side of bench/sequence.cpp: prints, per round, the median time (ms) of forward + backward of
  - nn.LSTM(128, 256, num_layers=2, batch_first=True), batch 64, sequence 100, and
  - nn.TransformerEncoderLayer(256, 4, batch_first=True) (dim_feedforward 2048, dropout 0.1, training),
    batch 32, sequence 128, and
  - nn.Embedding(1_000_000, 64, sparse=True) looking up 512 x 20 indices, with a SparseAdam step
    (forward, backward and step; the indices (i * 2654435761) mod 1e6, the same on both sides).
The loss is sum(out * g) with a fixed g, so both sides do the same backward.
usage: sequence.py ROUNDS"""
import sys
import time

import torch
import torch.nn as nn

torch.set_num_threads(2)
torch.manual_seed(0)

lstm = nn.LSTM(128, 256, num_layers=2, batch_first=True)
x = torch.randn(64, 100, 128, requires_grad=True)
g = torch.randn(64, 100, 256)
enc = nn.TransformerEncoderLayer(256, 4, batch_first=True)
enc.train()
s = torch.randn(32, 128, 256, requires_grad=True)
gs = torch.randn(32, 128, 256)
emb = nn.Embedding(1_000_000, 64, sparse=True)
opt = torch.optim.SparseAdam(emb.parameters())
idx = ((torch.arange(512 * 20, dtype=torch.int64) * 2654435761) % 1_000_000).reshape(512, 20)
ge = torch.randn(512, 20, 64)


def lstm_step():
    out, _ = lstm(x)
    (out * g).sum().backward()


def enc_step():
    (enc(s) * gs).sum().backward()


def emb_step():
    opt.zero_grad()
    (emb(idx) * ge).sum().backward()
    opt.step()


def median_ms(f, calls):
    for _ in range(calls):
        f()
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        t.append((time.perf_counter() - t0) / calls * 1e3)
    t.sort()
    return t[len(t) // 2]


for _ in range(int(sys.argv[1])):
    print(median_ms(lstm_step, 2), median_ms(enc_step, 2), median_ms(emb_step, 5), flush=True)
