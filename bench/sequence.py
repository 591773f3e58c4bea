#!/usr/bin/python3
"""PyTorch side of bench/sequence.cpp: prints, per round, the median time (ms) of forward + backward of
  - nn.LSTM(128, 256, num_layers=2, batch_first=True), batch 64, sequence 100, and
  - nn.TransformerEncoderLayer(256, 4, batch_first=True) (dim_feedforward 2048, dropout 0.1, training),
    batch 32, sequence 128.
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


def lstm_step():
    out, _ = lstm(x)
    (out * g).sum().backward()


def enc_step():
    (enc(s) * gs).sum().backward()


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
    print(median_ms(lstm_step, 2), median_ms(enc_step, 2), flush=True)
