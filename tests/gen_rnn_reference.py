#!/usr/bin/python3
"""Writes tests/data/rnn_ref.bin, the PyTorch references of tests/rnn.cpp (RNN, LSTM, GRU and their
cells). Run with Debian's PyTorch: /usr/bin/python3 tests/gen_rnn_reference.py

For each case: the module's state dict filled with det() values ("<case>/sd/<key>"), the outputs for
det() inputs and states ("<case>/out", "/h_n", "/c_n"), and the gradients of
sum(out * det(999)) + sum(h_n * det(998)) + sum(c_n * det(997)) with respect to the input ("/gx"),
the initial states ("/gh0", "/gc0") and every parameter ("/g/<name>")."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from refbin import Writer, det  # noqa: E402

ref = Writer("rnn_ref.bin")


def fill(m, seed):
    with torch.no_grad():
        for i, (k, v) in enumerate(m.state_dict().items()):
            v.copy_(det(v.shape, seed + i, torch.float64).float() * 0.5)
    for k, v in m.state_dict().items():
        yield k, v


def put_grads(name, m, loss, x, h0, c0):
    """The gradients of loss with respect to x, the initial states given and every parameter."""
    names = [n for n, _ in m.named_parameters()]
    ins = [x] + ([h0] if h0 is not None else []) + ([c0] if c0 is not None else []) + list(m.parameters())
    gs = torch.autograd.grad(loss, ins)
    ref.put(f"{name}/gx", gs[0])
    k = 1
    if h0 is not None:
        ref.put(f"{name}/gh0", gs[k])
        k += 1
    if c0 is not None:
        ref.put(f"{name}/gc0", gs[k])
        k += 1
    for n, g in zip(names, gs[k:]):
        ref.put(f"{name}/g/{n}", g)


def run_case(name, m, x_shape, h0_shape=None, c0_shape=None, cell=False):
    for k, v in fill(m, 300):
        ref.put(f"{name}/sd/{k}", v)
    x = det(x_shape, 1).float().requires_grad_(True)
    h0 = det(h0_shape, 2).float().requires_grad_(True) if h0_shape else None
    c0 = det(c0_shape, 3).float().requires_grad_(True) if c0_shape else None
    if cell:
        if isinstance(m, nn.LSTMCell):
            h, c = m(x, (h0, c0)) if h0 is not None else m(x)
            out, h_n, c_n = h, None, c
        else:
            out, h_n, c_n = (m(x, h0) if h0 is not None else m(x)), None, None
    else:
        if isinstance(m, nn.LSTM):
            out, (h_n, c_n) = m(x, (h0, c0)) if h0 is not None else m(x)
        else:
            out, h_n = m(x, h0) if h0 is not None else m(x)
            c_n = None
    ref.put(f"{name}/out", out)
    loss = (out * det(out.shape, 999).float()).sum()
    if h_n is not None:
        ref.put(f"{name}/h_n", h_n)
        loss = loss + (h_n * det(h_n.shape, 998).float()).sum()
    if c_n is not None:
        ref.put(f"{name}/c_n", c_n)
        loss = loss + (c_n * det(c_n.shape, 997).float()).sum()
    put_grads(name, m, loss, x, h0, c0)


run_case("rnn_tanh", nn.RNN(5, 7), (4, 3, 5))
run_case("rnn_relu_2l_bi_bf", nn.RNN(5, 7, num_layers=2, nonlinearity="relu", bidirectional=True, batch_first=True), (3, 4, 5),
         h0_shape=(4, 3, 7))
run_case("lstm", nn.LSTM(5, 7), (4, 3, 5), h0_shape=(1, 3, 7), c0_shape=(1, 3, 7))
run_case("lstm_3l_bi_bf", nn.LSTM(4, 6, num_layers=3, bidirectional=True, batch_first=True), (2, 5, 4))
run_case("lstm_proj_2l_bi", nn.LSTM(5, 8, num_layers=2, bidirectional=True, proj_size=3), (4, 2, 5), h0_shape=(4, 2, 3),
         c0_shape=(4, 2, 8))
run_case("lstm_nobias", nn.LSTM(5, 7, bias=False), (3, 2, 5))
run_case("gru_2l_bi", nn.GRU(5, 7, num_layers=2, bidirectional=True), (4, 3, 5), h0_shape=(4, 3, 7))
run_case("gru_unbatched", nn.GRU(5, 7), (4, 5), h0_shape=(1, 7))
run_case("rnncell_tanh", nn.RNNCell(5, 7), (3, 5), h0_shape=(3, 7), cell=True)
run_case("rnncell_relu", nn.RNNCell(5, 7, nonlinearity="relu"), (3, 5), cell=True)
run_case("lstmcell", nn.LSTMCell(5, 7), (3, 5), h0_shape=(3, 7), c0_shape=(3, 7), cell=True)
run_case("grucell", nn.GRUCell(5, 7), (3, 5), h0_shape=(3, 7), cell=True)


def packed_case(name, m, x_shape, lengths, batch_first, enforce_sorted, h0_shape=None, c0_shape=None, total_length=None):
    """pack_padded_sequence -> module -> pad_packed_sequence; the padded output, lengths and gradients."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    for k, v in fill(m, 500):
        ref.put(f"{name}/sd/{k}", v)
    x = det(x_shape, 1).float().requires_grad_(True)
    h0 = det(h0_shape, 2).float().requires_grad_(True) if h0_shape else None
    c0 = det(c0_shape, 3).float().requires_grad_(True) if c0_shape else None
    packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=batch_first, enforce_sorted=enforce_sorted)
    ref.put(f"{name}/batch_sizes", packed.batch_sizes)
    if isinstance(m, nn.LSTM):
        out, (h_n, c_n) = m(packed, (h0, c0)) if h0 is not None else m(packed)
    else:
        out, h_n = m(packed, h0) if h0 is not None else m(packed)
        c_n = None
    padded, lens = pad_packed_sequence(out, batch_first=batch_first, padding_value=-1.0, total_length=total_length)
    ref.put(f"{name}/out", padded)
    ref.put(f"{name}/lengths", lens)
    ref.put(f"{name}/h_n", h_n)
    loss = (padded * det(padded.shape, 999).float()).sum() + (h_n * det(h_n.shape, 998).float()).sum()
    if c_n is not None:
        ref.put(f"{name}/c_n", c_n)
        loss = loss + (c_n * det(c_n.shape, 997).float()).sum()
    put_grads(name, m, loss, x, h0, c0)


packed_case("lstm_packed", nn.LSTM(5, 7, num_layers=2, bidirectional=True), (5, 4, 5), [3, 5, 1, 4], False, False,
            h0_shape=(4, 4, 7), c0_shape=(4, 4, 7))
packed_case("gru_packed_bf", nn.GRU(5, 7, batch_first=True), (3, 4, 5), [4, 2, 3], True, False, total_length=6)
packed_case("rnn_packed_sorted", nn.RNN(5, 7, bidirectional=True), (4, 3, 5), [4, 3, 1], False, True, h0_shape=(2, 3, 7))
ref.save()
