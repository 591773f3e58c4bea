"""PyTorch twin of samples/two_layer_net.cpp ("Learning PyTorch with examples"): the same two-layer
network trained by hand with a custom autograd Function (MyReLU), 500 steps on random data, the
update written under torch.no_grad(); prints the loss every 50 steps and the time per step.
  env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 bench/two_layer_net.py"""
import time

import torch

torch.set_num_threads(2)
torch.manual_seed(0)


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x < 0, torch.zeros_like(g), g)


N, D_in, H, D_out = 64, 1000, 100, 10
x, y = torch.randn(N, D_in), torch.randn(N, D_out)
w1 = torch.randn(D_in, H, requires_grad=True)
w2 = torch.randn(H, D_out, requires_grad=True)
t0 = time.perf_counter()
for t in range(500):
    y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    if t % 50 == 49 or t == 0:
        print(f"step {t + 1:3d}  loss {loss.item():.6g}")
    loss.backward()
    with torch.no_grad():
        w1 -= 1e-6 * w1.grad
        w2 -= 1e-6 * w2.grad
        w1.grad.zero_()
        w2.grad.zero_()
print(f"{(time.perf_counter() - t0) / 500 * 1e3:.3f} ms per step")
