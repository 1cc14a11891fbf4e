"""Learnable node embeddings with DistEmbedding + SparseAdam (DGL's
transductive setting for featureless nodes, as in its distributed R-GCN and
GraphSAGE "--standalone embedding" examples): every node's input is a
learned row, trained together with a GraphSAGE model (dense Adam via DDP,
sparse Adam for the rows, applied where the rows live).

It prints the test accuracy of the untrained model first, then trains.

Standalone:  python3 node_embedding.py --graph_name cora --part_config parts/cora.json
Launched:    tessera launch ... "python3 node_embedding.py --graph_name cora ..."
"""
import argparse
import json
import os
import time

import torch as th
import torch.distributed
import torch.nn as nn
import torch.nn.functional as F

import tessera.distributed as dist
import tessera.nn as dglnn


class SAGE(nn.Module):
    def __init__(self, in_feats, hidden, classes, dropout):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.SAGEConv(in_feats, hidden, "mean"),
                                     dglnn.SAGEConv(hidden, classes, "mean")])
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks, x):
        h = self.layers[0](blocks[0], x)
        h = self.dropout(F.relu(h))
        return self.layers[1](blocks[1], h)


def accuracy(model, emb, g, nids, fanouts, labels):
    """Accuracy over the nids of all trainers (sampled neighbourhoods)."""
    model.eval()
    emb.eval()
    correct = total = 0
    loader = dist.DistNodeDataLoader(g, nids, dist.NeighborSampler(fanouts), batch_size=1000,
                                     seed=7)
    with th.no_grad():
        for input_nodes, seeds, blocks in loader:
            pred = model(blocks, emb(input_nodes)).argmax(1)
            correct += int((pred == labels[seeds].long()).sum())
            total += len(seeds)
    model.train()
    emb.train()
    t = th.tensor([correct, total], dtype=th.float64)
    if th.distributed.is_initialized():
        th.distributed.all_reduce(t)
    return float(t[0] / max(t[1], 1))


def main(args):
    th.manual_seed(args.seed)
    dist.initialize(args.ip_config)
    if "WORLD_SIZE" in os.environ:
        th.distributed.init_process_group(backend="gloo")
    g = dist.DistGraph(args.graph_name, part_config=args.part_config)
    pb = g.get_partition_book()
    train_nid = dist.node_split(g.ndata["train_mask"], pb)
    test_nid = dist.node_split(g.ndata["test_mask"], pb)
    labels = g.ndata[args.label_name]
    n_classes = int(labels[th.arange(g.num_nodes())].max()) + 1
    emb = dist.DistEmbedding(g.num_nodes(), args.dim, "node_emb",
                             init_func=dist.init.normal(0.0, 1.0, seed=args.seed))
    model = SAGE(args.dim, args.num_hidden, n_classes, args.dropout)
    train_model = (th.nn.parallel.DistributedDataParallel(model)
                   if th.distributed.is_initialized() else model)
    fanouts = [int(f) for f in args.fan_out.split(",")]
    opt = th.optim.Adam(train_model.parameters(), lr=args.lr)
    sparse_opt = dist.optim.SparseAdam([emb], lr=args.sparse_lr)
    untrained = accuracy(model, emb, g, test_nid, fanouts, labels)
    print(f"Part {g.rank()}, untrained test accuracy {untrained:.4f}", flush=True)
    loader = dist.DistNodeDataLoader(g, train_nid, dist.NeighborSampler(fanouts),
                                     batch_size=args.batch_size, shuffle=True)
    for epoch in range(1, args.num_epochs + 1):
        tic, total, steps = time.time(), 0.0, 0
        for input_nodes, seeds, blocks in loader:
            logits = train_model(blocks, emb(input_nodes))
            loss = F.cross_entropy(logits, labels[seeds].long())
            opt.zero_grad()
            sparse_opt.zero_grad()
            loss.backward()
            opt.step()
            sparse_opt.step()
            total, steps = total + loss.item(), steps + 1
        if epoch % args.log_every == 0 or epoch == args.num_epochs:
            print(f"Part {g.rank()}, Epoch {epoch} Time(s): {time.time() - tic:.4f}, "
                  f"loss {total / max(steps, 1):.4f}", flush=True)
    trained = accuracy(model, emb, g, test_nid, fanouts, labels)
    print(f"Part {g.rank()}, test accuracy {trained:.4f} (untrained {untrained:.4f})",
          flush=True)
    if args.save_embedding:
        emb.save(args.save_embedding)
    if args.json:
        print("RESULT " + json.dumps({"rank": g.rank(), "untrained_acc": untrained,
                                      "test_acc": trained}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Learned node embeddings + GraphSAGE")
    parser.add_argument("--graph_name", "--graph-name", type=str)
    parser.add_argument("--ip_config", "--ip-config", type=str, default=None)
    parser.add_argument("--part_config", "--part-config", type=str)
    parser.add_argument("--num_epochs", "--num-epochs", type=int, default=50)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--num_hidden", "--num-hidden", type=int, default=64)
    parser.add_argument("--fan_out", "--fan-out", type=str, default="10,25")
    parser.add_argument("--batch_size", "--batch-size", type=int, default=140)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--sparse_lr", "--sparse-lr", type=float, default=0.05)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--label_name", default="label")
    parser.add_argument("--log_every", "--log-every", type=int, default=10)
    parser.add_argument("--save_embedding", "--save-embedding", default="")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--local_rank", "--local-rank", type=int)
    parser.add_argument("--json", action="store_true")
    main(parser.parse_args())
