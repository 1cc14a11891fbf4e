"""Sparse optimizers for DistEmbedding (dgl.distributed.optim)."""
import torch

from tessera import _C
from tessera._utils import as_ids
from tessera.distributed import context
from tessera.distributed.embedding import DistEmbedding
from tessera.distributed.tensor import DistTensor


def _params(params, what):
    params = list(params)
    if not params:
        raise _C.TesseraError(f"{what}: params is empty")
    for p in params:
        if not isinstance(p, DistEmbedding):
            raise TypeError(f"{what}: params must be DistEmbeddings, got {type(p).__name__}")
    return params


class _SparseOptimizer:
    def _build(self):
        raise NotImplementedError

    def step(self):
        """Applies the gradients of every lookup since the last step, on the
        machines that own the rows (the mean over duplicate ids, as DGL), and
        forgets them."""
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

    def _states(self):
        """{embedding name: [its state DistTensors]} (C++ lists each
        embedding's weight, then its state)."""
        tensors = self._o.tensors()
        per = len(tensors) // len(self._embs)
        return {emb.name: [DistTensor._wrap(t) for t in tensors[i * per + 1:(i + 1) * per]]
                for i, emb in enumerate(self._embs)}

    def _hyper(self):
        return {"_lr": self.lr, "_eps": self.eps}

    def local_state_dict(self):
        """DGL's local state: ``{"emb_states": {embedding name: {"ids": ids,
        "states": {state name: rows}}}, "params": {"world_size": ..., "_lr":
        ..., ...}}`` over the rows of this machine's partition (split among
        its trainers by ``id % trainers per machine``, as DGL). State names
        are tessera's (``"emb.adam_m"``; DGL's ``"node~_N~emb_mem"``); the
        world size and rank are the job's."""
        info = context._state["info"]
        world, rank = (int(info["world_size"]), int(info["rank"])) if info else (1, 0)
        states = self._states()
        out = {"emb_states": {}, "params": {"world_size": world}}
        for emb in self._embs:
            policy = emb.weight.part_policy
            book = policy.partition_book
            ids = (book.partid2nids(book.partid, policy.type_name) if policy.is_node
                   else book.partid2eids(book.partid, policy.type_name))
            per_machine = world // max(1, book.num_partitions())
            if per_machine > 1:
                ids = ids[ids % per_machine == rank % per_machine]
            out["emb_states"][emb.name] = {
                "ids": ids, "states": {s.name: s[ids] for s in states[emb.name]}}
        out["params"].update(self._hyper())
        return out

    def load_local_state_dict(self, local_state_dict):
        """Writes the rows of a ``local_state_dict()`` back and takes its
        hyperparameters (``_lr``, ...), as DGL's. Everything is checked
        before anything is written: a bad dict changes nothing."""
        what = "load_local_state_dict"
        if not isinstance(local_state_dict, dict) or not isinstance(
                local_state_dict.get("emb_states"), dict):
            raise TypeError(f"{what}: expected a local_state_dict() (a dict with "
                            f"'emb_states' and 'params'), got {type(local_state_dict).__name__}")
        states = self._states()
        writes = []
        for emb_name, emb_state in local_state_dict["emb_states"].items():
            if emb_name not in states:
                raise KeyError(f"{what}: the optimizer has no embedding "
                               f"'{emb_name}' (it has {sorted(states)})")
            mine = {s.name: s for s in states[emb_name]}
            if len(emb_state["states"]) != len(mine):
                raise ValueError(f"loaded state dict has a different number of states of "
                                 f"embedding {emb_name}")
            ids, _ = as_ids(emb_state["ids"], f"{what}: ids of {emb_name}")
            rows_of = len(mine[next(iter(mine))]) if mine else 0
            if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < rows_of):
                raise _C.TesseraError(f"{what}: ids of {emb_name} must lie in [0, {rows_of})")
            for name, rows in emb_state["states"].items():
                if name not in mine:
                    raise ValueError(f"loaded state dict contains a state {name} that can't "
                                     f"be found in the optimizer states ({sorted(mine)})")
                t = mine[name]
                rows = torch.as_tensor(rows).to(torch.device("cpu"), t.dtype)
                want = (len(ids),) + tuple(t.shape[1:])
                if tuple(rows.shape) != want:
                    raise ValueError(f"{what}: state {name} has rows of shape "
                                     f"{tuple(rows.shape)}, expected {want}")
                writes.append((t, ids, rows))
        params = dict(local_state_dict.get("params", {}))
        old = self._hyper()
        try:
            new = {k: float(params.get(k, v)) for k, v in old.items()}
        except (TypeError, ValueError):
            raise TypeError(f"{what}: params {({k: params[k] for k in old if k in params})} "
                            f"must be numbers") from None
        rebuilt = None
        if new != old:  # Built (and so checked) now, taken once the rows are in.
            self._set_hyper(new)
            try:
                rebuilt = self._build()  # Attaches to the same state tensors.
            except Exception as e:
                raise _C.TesseraError(f"{what}: params: {e}") from e
            finally:
                self._set_hyper(old)
        for tensor, ids, rows in writes:
            tensor[ids] = rows
        if rebuilt is not None:
            self._set_hyper(new)
            self._o = rebuilt


class SparseAdagrad(_SparseOptimizer):
    """state_sum += g^2; w -= lr * g / (sqrt(state_sum) + eps): textbook
    Adagrad (DGL 1.1.3's CPU path differs after the first step of a row,
    see docs/python.md)."""

    def __init__(self, params, lr, eps=1e-10):
        self.lr, self.eps = lr, eps
        self._embs = _params(params, "SparseAdagrad")
        self._o = self._build()

    def _build(self):
        return _C.SparseAdagrad([p._e for p in self._embs], float(self.lr), float(self.eps))

    def _set_hyper(self, h):
        self.lr, self.eps = h["_lr"], h["_eps"]


class SparseAdam(_SparseOptimizer):
    """Adam with a step count per row (rows not looked up do not age)."""

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-08):
        try:
            beta1, beta2 = betas
        except (TypeError, ValueError):
            raise ValueError(f"SparseAdam: betas must be a pair (beta1, beta2), got "
                             f"{betas!r}") from None
        self.lr, self.betas, self.eps = lr, (beta1, beta2), eps
        self._embs = _params(params, "SparseAdam")
        self._o = self._build()

    def _build(self):
        beta1, beta2 = self.betas
        return _C.SparseAdam([p._e for p in self._embs], float(self.lr), float(beta1),
                             float(beta2), float(self.eps))

    def _hyper(self):
        return {"_lr": self.lr, "_eps": self.eps, "_beta1": self.betas[0],
                "_beta2": self.betas[1]}

    def _set_hyper(self, h):
        self.lr, self.eps, self.betas = h["_lr"], h["_eps"], (h["_beta1"], h["_beta2"])
