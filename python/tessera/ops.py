"""Message passing on blocks in tessera's C++ kernels (include/tessera/
aggregate.h), what the layers of ``tessera.nn`` are built from: aggregation
with sum / mean / max over a block's in-edges (optionally weighted per edge
or per head), edge softmax, and the narrow first-layer projection. Forward
and backward are multi-threaded, without per-edge intermediate tensors."""
import torch

from tessera import _C


def _linear(x, fc):
    """``fc(x)`` for an ``nn.Linear`` ``fc``; narrow outputs (a first layer's
    projection of every sampled node) in tessera's AVX-512 kernel."""
    if x.dim() == 2 and x.dtype == torch.float32 and fc.weight.shape[0] <= 32:
        return _C.narrow_linear(x, fc.weight, fc.bias)
    return fc(x)


def _csr(block):
    """``(indptr, sources in CSR order, perm)``: ``perm[i]`` is the edge id
    at CSR position ``i``, or None when the block's edges are in CSR order
    (a loader's blocks; a ``RelationBlock`` keeps its relation's order)."""
    return block.indptr, getattr(block, "csr_indices", block.indices), getattr(
        block, "csr_perm", None)


def _to_csr_order(block, values):
    """Per-edge ``values`` (edge order) in CSR order."""
    perm = getattr(block, "csr_perm", None)
    return values if perm is None else values.index_select(0, perm)


def _to_edge_order(block, values):
    """Per-edge ``values`` in CSR order back in edge order."""
    perm = getattr(block, "csr_perm", None)
    if perm is None:
        return values
    return values.new_empty(values.shape).index_copy(0, perm, values)


def aggregate(block, h_src, reduce="sum", edge_weight=None):
    """``out[d] = reduce over the block's edges s -> d of edge_weight_e *
    h_src[s]`` (``reduce``: "sum", "mean" or "max"; 0 without in-edges), in
    tessera's CSR kernels (forward and backward multi-threaded, no per-edge
    intermediate). ``edge_weight``: ``[E]``, ``[E, 1]`` or ``[E, H]`` (one per
    head of ``h_src`` ``[N, H, F]``), in the block's edge order."""
    indptr, indices, _ = _csr(block)
    if edge_weight is not None:
        edge_weight = _to_csr_order(block, edge_weight)
    return _C.aggregate(indptr, indices, h_src, reduce, edge_weight)


def mean_aggregate(block, h_src):
    """out[d] = mean of h_src[s] over the block's edges s -> d (0 without edges)."""
    return aggregate(block, h_src, "mean")


def sum_aggregate(block, h_src, edge_weight=None):
    """out[d] = sum of h_src[s] (times ``edge_weight``) over the block's edges s -> d."""
    return aggregate(block, h_src, "sum", edge_weight)


def dropout(x, p=0.5, training=True):
    """``torch.nn.functional.dropout``'s distribution (each element zeroed with
    probability ``p``, the others scaled by ``1 / (1 - p)``) from a hash of
    each element's index instead of one Bernoulli draw per element, which
    torch 1.13's CPU kernel makes serially (~20x slower). The hash's key
    comes from torch's default generator: ``torch.manual_seed`` repeats the
    masks. CPU floating-point tensors."""
    return _C.dropout(x, float(p), bool(training))


class Dropout(torch.nn.Dropout):
    """``torch.nn.Dropout`` (same ``p``, same train/eval behaviour) computed
    by :func:`dropout`. The layers of ``tessera.nn`` use it; ``inplace`` is
    accepted and ignored (a new tensor is returned)."""

    def forward(self, x):
        return dropout(x, self.p, self.training)
