"""Sparse optimizers for DistEmbedding (dgl.distributed.optim)."""
from tessera import _C
from tessera.distributed.embedding import DistEmbedding


def _params(params, what):
    params = list(params)
    if not params:
        raise _C.TesseraError(f"{what}: params is empty")
    for p in params:
        if not isinstance(p, DistEmbedding):
            raise TypeError(f"{what}: params must be DistEmbeddings, got {type(p).__name__}")
    return [p._e for p in params]


class _SparseOptimizer:
    def step(self):
        """Applies the gradients of every lookup since the last step, on the
        machines that own the rows (duplicate ids summed), and forgets them."""
        self._o.step()

    def zero_grad(self):
        """As in DGL: nothing to clear now. Every ``step()`` forgets the lookups
        it applied, so the usual ``zero_grad(); loss.backward(); step()``
        applies this step's gradients (dropping the lookups here, as the C++
        ``SparseOptimizer::zero_grad`` does, would silently lose them)."""

    def clear(self):
        """Forgets the lookups recorded since the last step without applying
        them (a tessera extension; C++ ``zero_grad``)."""
        self._o.zero_grad()

    def save(self, f):
        """The optimizer state to the checkpoint folder ``f`` (collective;
        DGL writes one file per rank instead, reloadable only on the same
        trainer count: this one loads on any)."""
        self._o.save(str(f))

    def load(self, f):
        self._o.load(str(f))


class SparseAdagrad(_SparseOptimizer):
    """state_sum += g^2; w -= lr * g / (sqrt(state_sum) + eps)."""

    def __init__(self, params, lr, eps=1e-10):
        self.lr, self.eps = lr, eps
        self._o = _C.SparseAdagrad(_params(params, "SparseAdagrad"), float(lr), float(eps))


class SparseAdam(_SparseOptimizer):
    """Adam with a step count per row (rows not looked up do not age)."""

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-08):
        try:
            beta1, beta2 = betas
        except (TypeError, ValueError):
            raise ValueError(f"SparseAdam: betas must be a pair (beta1, beta2), got "
                             f"{betas!r}") from None
        self.lr, self.betas, self.eps = lr, (beta1, beta2), eps
        self._o = _C.SparseAdam(_params(params, "SparseAdam"), float(lr), float(beta1),
                                float(beta2), float(eps))
