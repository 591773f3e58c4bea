#!/usr/bin/python3
"""The PyTorch twin of samples/char_lstm.cpp (same words, model, batches, optimizer and clipping), and
the side-by-side timing of both: rounds alternate one dl epoch and one PyTorch epoch on the same
subset; medians of the training throughput (words/s) and the validation perplexities reached.

  env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \
    /usr/bin/python3 bench/char_lstm.py build/samples/char_lstm [--rounds 3] [--limit 20000]
(the environment the other benchmarks give PyTorch: its OpenMP OpenBLAS). Each side is timed as a
whole program epoch: batch assembly (Python loops in the twin, C++ in the sample) included.
  /usr/bin/python3 bench/char_lstm.py --twin-only [--epochs 4]     # the PyTorch program alone
"""
import argparse
import math
import random
import re
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

END, START, VOCAB = 0, 27, 28


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.lstm = nn.LSTM(32, 256, num_layers=2, batch_first=True)
        self.head = nn.Linear(256, VOCAB)

    def forward(self, x):
        out, _ = self.lstm(self.embed(x))
        return self.head(out)


def read_words(path, seed):
    words = sorted({w.strip().lower() for w in open(path, encoding="utf-8", errors="replace")} - {""})
    words = [w for w in words if re.fullmatch("[a-z]+", w)]
    random.Random(seed).shuffle(words)
    return words


def make_batch(words):
    T = max(len(w) for w in words) + 1
    x = torch.full((len(words), T), END, dtype=torch.long)
    y = torch.full((len(words), T), -100, dtype=torch.long)
    for b, w in enumerate(words):
        ids = [ord(c) - ord("a") + 1 for c in w]
        x[b, 0] = START
        x[b, 1:len(w) + 1] = torch.tensor(ids, dtype=torch.long)
        y[b, :len(w)] = torch.tensor(ids, dtype=torch.long)
        y[b, len(w)] = END
    return x, y


@torch.no_grad()
def perplexity(model, words):
    total, chars = 0.0, 0
    for i in range(0, len(words), 256):
        x, y = make_batch(words[i:i + 256])
        total += F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1), reduction="sum").item()
        chars += int((y != -100).sum())
    return math.exp(total / chars)


def twin(epochs, limit, seed=0, quiet=False):
    """The PyTorch program; returns [(words/s, validation perplexity)] per epoch."""
    torch.manual_seed(seed)
    words = read_words("/usr/share/dict/words", seed)
    if limit:
        words = words[:limit]
    n_val = len(words) // 20
    n_train = len(words) - n_val
    train, val = words[:n_train], words[n_train:]
    model = CharLM()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    rng = random.Random(seed)
    out = []
    for epoch in range(1, epochs + 1):
        rng.shuffle(train)
        model.train()
        t0 = time.perf_counter()
        steps, loss_sum = 0, 0.0
        for i in range(0, n_train - 63, 64):
            x, y = make_batch(train[i:i + 64])
            loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            loss_sum += loss.item()
            steps += 1
        secs = time.perf_counter() - t0
        model.eval()
        ppl = perplexity(model, val)
        out.append((steps * 64 / secs, ppl))
        if not quiet:
            print(f"epoch {epoch}/{epochs}  train loss {loss_sum / steps:.4f}  validation perplexity {ppl:.2f}  "
                  f"({secs:.1f} s, {steps * 64 / secs:.0f} words/s)", flush=True)
    return out


def dl_epoch(exe, limit):
    r = subprocess.run([exe, "--epochs", "1", "--limit", str(limit)], capture_output=True, text=True, check=True)
    m = re.search(r"validation perplexity ([0-9.]+)  \(([0-9.]+) s, ([0-9]+) words/s\)", r.stdout)
    return float(m.group(3)), float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe", nargs="?")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=20000)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--twin-only", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(2)
    if a.twin_only:
        twin(a.epochs, 0)
        return
    if not a.exe:
        sys.exit("usage: char_lstm.py build/samples/char_lstm [--rounds N] [--limit N]")
    d, t = [], []
    for _ in range(a.rounds):
        d.append(dl_epoch(a.exe, a.limit))
        t.append(twin(1, a.limit, quiet=True)[0])
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    dw, tw = med([x[0] for x in d]), med([x[0] for x in t])
    print(f"char-level LSTM, 1 epoch on {a.limit} words (batch 64, 2 threads), medians of {a.rounds} interleaved rounds")
    print(f"{'':10} {'words/s':>10} {'val perplexity':>15}")
    print(f"{'dl':10} {dw:10.0f} {med([x[1] for x in d]):15.2f}")
    print(f"{'PyTorch':10} {tw:10.0f} {med([x[1] for x in t]):15.2f}")
    print(f"dl speedup: {dw / tw:.2f}x")


if __name__ == "__main__":
    main()
