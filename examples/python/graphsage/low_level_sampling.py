"""GraphSAGE trained with the low-level sampling loop of DGL's user guide
(chapter 7.2, "distributed sampling"): a ``DistDataLoader`` whose
``collate_fn`` samples each layer with ``dgl.distributed.sample_neighbors``
and turns it into a block with ``dgl.to_block``; the layer is written with
message passing (``update_all(fn.copy_u, fn.mean)``, chapter 6's custom
SAGE layer). Written the way a DGL user writes it, with ``import tessera as
dgl`` the only change.

Standalone:  python3 low_level_sampling.py --graph_name cora --part_config parts/cora.json
Launched:    tessera launch ... "python3 low_level_sampling.py --graph_name cora ..."
"""
import argparse
import json
import os
import time

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F

import tessera as dgl  # was: import dgl
import tessera.function as fn  # was: import dgl.function as fn


class SAGELayer(nn.Module):
    """h_dst' = W [h_dst ; mean of h_src over in-edges]."""

    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.linear = nn.Linear(in_feats * 2, out_feats)

    def forward(self, block, h):
        with block.local_scope():
            block.srcdata["h"] = h
            block.dstdata["h"] = h[:block.number_of_dst_nodes()]
            block.update_all(fn.copy_u("h", "m"), fn.mean("m", "h_neigh"))
            return self.linear(th.cat([block.dstdata["h"], block.dstdata["h_neigh"]], 1))


class SAGE(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes, dropout):
        super().__init__()
        self.layers = nn.ModuleList([SAGELayer(in_feats, n_hidden),
                                     SAGELayer(n_hidden, n_classes)])
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.dropout(F.relu(h))
        return h


def make_sampler(g, fanouts):
    def sample_blocks(seeds):
        seeds = th.LongTensor(np.asarray(seeds))
        blocks = []
        for fanout in fanouts:
            frontier = dgl.distributed.sample_neighbors(g, seeds, fanout, replace=True)
            block = dgl.to_block(frontier, seeds)
            seeds = block.srcdata[dgl.NID]
            blocks.insert(0, block)
        return blocks
    return sample_blocks


def all_sum(values):
    t = th.tensor(values, dtype=th.float64)
    if th.distributed.is_initialized():
        th.distributed.all_reduce(t)
    return t.tolist()


def accuracy(model, g, nids, fanouts, batch_size):
    """Correct predictions and count over `nids` (sampled, like training)."""
    model.eval()
    correct = 0
    with th.no_grad():
        loader = dgl.distributed.DistDataLoader(dataset=nids, batch_size=batch_size,
                                                collate_fn=make_sampler(g, fanouts))
        for blocks in loader:
            x = g.ndata["feat"][blocks[0].srcdata[dgl.NID]]
            y = g.ndata["label"][blocks[-1].dstdata[dgl.NID]].long()
            correct += (model(blocks, x).argmax(1) == y).sum().item()
    model.train()
    return correct, len(nids)


def main(args):
    th.manual_seed(args.seed)
    dgl.distributed.initialize(args.ip_config)
    if "WORLD_SIZE" in os.environ:
        th.distributed.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.part_config)
    pb = g.get_partition_book()
    train_nid = dgl.distributed.node_split(g.ndata["train_mask"], pb, force_even=True)
    test_nid = dgl.distributed.node_split(g.ndata["test_mask"], pb, force_even=True)
    fanouts = [int(f) for f in args.fan_out.split(",")]
    n_classes = int(g.ndata["label"][th.arange(g.num_nodes())].max()) + 1
    model = SAGE(g.ndata["feat"].shape[1], args.num_hidden, n_classes, args.dropout)
    if th.distributed.is_initialized():
        model = th.nn.parallel.DistributedDataParallel(model)
    optimizer = th.optim.Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)
    # The seeds' loop: the collate function samples; batches are lists of blocks.
    dataloader = dgl.distributed.DistDataLoader(dataset=train_nid, batch_size=args.batch_size,
                                                collate_fn=make_sampler(g, fanouts),
                                                shuffle=True)
    for epoch in range(args.num_epochs):
        tic, loss_sum, seen = time.time(), 0.0, 0
        for blocks in dataloader:
            input_nodes = blocks[0].srcdata[dgl.NID]
            seeds = blocks[-1].dstdata[dgl.NID]
            batch_inputs = g.ndata["feat"][input_nodes]
            batch_labels = g.ndata["label"][seeds].long()
            loss = F.cross_entropy(model(blocks, batch_inputs), batch_labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum, seen = loss_sum + loss.item() * len(seeds), seen + len(seeds)
        loss_all, seen_all = all_sum([loss_sum, seen])
        print(f"Part {g.rank()}, Epoch {epoch} Time(s): {time.time() - tic:.4f}, "
              f"loss {loss_all / max(seen_all, 1):.4f}", flush=True)
    module = model.module if hasattr(model, "module") else model
    correct, total = all_sum(list(accuracy(module, g, test_nid, [-1] * len(fanouts),
                                           args.batch_size)))
    test_acc = correct / max(total, 1)
    print(f"Part {g.rank()}, Test Acc {test_acc:.4f}", flush=True)
    print("RESULT " + json.dumps({"rank": g.rank(), "test_acc": test_acc}), flush=True)
    dgl.distributed.exit_client()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="GraphSAGE, the seeds' low-level loop.")
    parser.add_argument("--graph_name", "--graph-name", type=str, required=True)
    parser.add_argument("--ip_config", "--ip-config", type=str, default=None)
    parser.add_argument("--part_config", "--part-config", type=str)
    parser.add_argument("--num_epochs", "--num-epochs", type=int, default=30)
    parser.add_argument("--num_hidden", "--num-hidden", type=int, default=16)
    parser.add_argument("--fan_out", "--fan-out", type=str, default="10,25")
    parser.add_argument("--batch_size", "--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args())
