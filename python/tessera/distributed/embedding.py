"""DistEmbedding (dgl.distributed.DistEmbedding)."""
import itertools

import torch

from tessera import _C
from tessera.distributed import _prefetch
from tessera._utils import INT64_MAX, as_ids, as_int
from tessera.distributed.tensor import (DistTensor, _BuiltinInit, _check_name,
                                        _init_collectively, _init_kind, _policy_args)

_anonymous = itertools.count()


class DistEmbedding:
    """Learnable rows sharded like the nodes (or edges), trained with
    ``tessera.distributed.optim.SparseAdagrad`` / ``SparseAdam``:

        emb = DistEmbedding(g.num_nodes(), 64, "node_emb")
        opt = tessera.distributed.optim.SparseAdam([emb], lr=0.01)
        h = emb(input_nodes)      # takes part in autograd
        loss.backward(); opt.step()

    As in DGL it is not an ``nn.Module``: lookups made while gradients are
    enabled are recorded until the optimizer's next ``step()``. Rows start at
    zero unless ``init_func(shape, dtype)`` fills them (called per partition by
    the trainer whose call created the embedding; construction is collective).
    """

    def __init__(self, num_embeddings, embedding_dim, name=None, init_func=None,
                 part_policy=None):
        num_embeddings = as_int(num_embeddings, "DistEmbedding: num_embeddings", 0, INT64_MAX)
        embedding_dim = as_int(embedding_dim, "DistEmbedding: embedding_dim", 0, INT64_MAX)
        if name is None:
            name = f"embedding-{next(_anonymous)}"
        _check_name(name, "DistEmbedding")
        if init_func is not None and not callable(init_func):
            raise TypeError("DistEmbedding: init_func must be callable (shape, dtype) -> Tensor")
        kind, a, b, seed = _init_kind(init_func)
        # On a heterograph, NodePartitionPolicy(gpb, ntype) (or "node~<ntype>")
        # says which type's per-type ids index it, as in DGL.
        policy_kind, policy_type = _policy_args(part_policy)
        self._part_policy = part_policy
        self._e = _C.DistEmbedding(num_embeddings, embedding_dim, name, kind, a, b,
                                   seed, policy_kind, policy_type)
        # Its rows change with every optimizer step (in C++, on any trainer):
        # never answer a read of them from rows a loader pulled ahead.
        _prefetch.wrote(self._e.weight.name)
        if init_func is not None and not isinstance(init_func, _BuiltinInit):
            _init_collectively(self._e.weight, init_func)

    def __call__(self, idx, device=torch.device("cpu")):
        ids, _ = as_ids(idx, f"DistEmbedding '{self.name}'", self.num_embeddings)
        if torch.device(device).type != "cpu":
            raise _C.TesseraError(f"DistEmbedding: device must be the CPU, got {device}")
        return self._e.forward(ids)

    @property
    def name(self):
        return self._e.name

    @property
    def part_policy(self):
        """The ``part_policy`` it was made with (None if none was given, as
        DGL); ``weight.part_policy`` is the one its rows follow."""
        return self._part_policy

    @property
    def num_embeddings(self):
        return self._e.num_embeddings

    @property
    def embedding_dim(self):
        return self._e.embedding_dim

    @property
    def weight(self):
        return DistTensor._wrap(self._e.weight)

    def train(self, mode=True):
        """Whether lookups are recorded for the optimizer (default on)."""
        self._e.train(bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def save(self, path):
        """Every row to the checkpoint folder ``path`` (docs/checkpoint.md;
        replaced if it exists). Collective. ``tessera export-embeddings path
        --out DIR`` writes them as .npy in the input graph's node order."""
        self._e.save(str(path))

    def load(self, path):
        """Every row from a checkpoint folder that holds this embedding (written
        by ``save`` or ``tessera.distributed.checkpoint.save``, on any
        partitioning of the graph). Collective."""
        self._e.load(str(path))
