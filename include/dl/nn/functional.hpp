// dl/nn/functional.hpp — dl::nn::functional (F in samples), the stateless layer functions with
// PyTorch's argument order, defaults and shape checks, and dl::nn::grad: one header per family
// (linear and bilinear, convolution, pooling, activations, softmax, losses, dropout, normalization,
// embedding and one_hot, padding). Include one of them to pay only for what a program uses.
#pragma once

#include "functional/activation.hpp"
#include "functional/batched.hpp"
#include "functional/conv.hpp"
#include "functional/fold.hpp"
#include "functional/interpolate.hpp"
#include "functional/dropout.hpp"
#include "functional/linear.hpp"
#include "functional/loss.hpp"
#include "functional/normalization.hpp"
#include "functional/padding.hpp"
#include "functional/pixel_shuffle.hpp"
#include "functional/pooling.hpp"
#include "functional/softmax.hpp"
#include "functional/sparse.hpp"
