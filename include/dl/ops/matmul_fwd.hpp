// dl/ops/matmul_fwd.hpp — declarations of dl::matmul and dl::mm (defined in dl/ops/matmul.hpp), so
// that the a.matmul(b) / a.mm(b) members of tensors and expressions can name them.
#pragma once

#include "../expr/node.hpp"

namespace dl {

/// Matrix product with PyTorch's rules: 1-D x 1-D is a dot product, 2-D x 1-D a matrix-vector
/// product, 2-D x 2-D a matrix product, and N-D operands are batches of matrices whose batch dims
/// broadcast (a 1-D operand gets a dim prepended / appended, removed again from the result).
/// Needs <dl/ops/matmul.hpp> (or <dl/dl.hpp>) for its definition.
template <expression A, expression B>
Tensor<expr::value_type_t<A>> matmul(const A& a, const B& b);

/// Product of two matrices: [n, m] x [m, p] -> [n, p].
template <expression A, expression B>
Tensor<expr::value_type_t<A>> mm(const A& a, const B& b);

}  // namespace dl
