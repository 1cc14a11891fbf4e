"""Unsupervised GraphSAGE (link prediction) on tessera, after DGL's distributed
GraphSAGE link-prediction example: edges are positives, uniform random
destinations negatives, the score of a pair is the dot product of its
nodes' embeddings (``pair_graph.apply_edges(fn.u_dot_v(...))``, as DGL). The
batch's own edges are excluded from sampling.

Evaluation: AUC of the dot-product score of the graph's edges against
random node pairs, computed from full-neighbour embeddings of every node
(layer-wise inference), printed before training (untrained model) and after.

Standalone:  python3 link_prediction.py --graph_name cora --part_config parts/cora.json
Launched:    tessera launch ... "python3 link_prediction.py --graph_name cora ..."
"""
import argparse
import json
import os
import time

import torch as th
import torch.distributed
import torch.nn as nn
import torch.nn.functional as F

import tessera.dataloading as dataloading
import tessera.distributed as dist
import tessera.function as fn
import tessera.nn as dglnn


class DistSAGE(nn.Module):
    def __init__(self, in_feats, n_hidden, n_layers, dropout):
        super().__init__()
        self.n_hidden = n_hidden
        self.layers = nn.ModuleList(
            [dglnn.SAGEConv(in_feats if i == 0 else n_hidden, n_hidden, "mean")
             for i in range(n_layers)])
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.dropout(F.relu(h))
        return h

    def inference(self, g, x, batch_size):
        nodes = dist.node_split(th.ones(g.num_nodes(), dtype=th.bool), g.get_partition_book())
        for i, layer in enumerate(self.layers):
            y = dist.DistTensor((g.num_nodes(), self.n_hidden), th.float32,
                                f"lp_h{i}", persistent=True)
            loader = dist.DistNodeDataLoader(g, nodes, dist.NeighborSampler([-1]),
                                             batch_size=batch_size)
            for input_nodes, output_nodes, blocks in loader:
                h = x[input_nodes]
                h = layer(blocks[0], (h, h[: blocks[0].num_dst_nodes()]))
                if i != len(self.layers) - 1:
                    h = F.relu(h)
                y[output_nodes] = h
            x = y
            g.barrier()
        return x


def score(pair_graph, h):
    """Each pair's dot product, as DGL's unsupervised GraphSAGE scores it."""
    with pair_graph.local_scope():
        pair_graph.ndata["h"] = h
        pair_graph.apply_edges(fn.u_dot_v("h", "h", "score"))
        return pair_graph.edata["score"].squeeze(1)


def evaluate_auc(model, g, feats, batch_size, num_pairs, seed):
    """AUC of edges against random node pairs, from every node's embedding."""
    model.eval()
    with th.no_grad():
        emb = model.inference(g, feats, batch_size)
    model.train()
    gen = th.Generator().manual_seed(seed)
    eids = th.randint(0, g.num_edges(), (num_pairs,), generator=gen)
    src, dst = g.find_edges(eids)
    rs = th.randint(0, g.num_nodes(), (num_pairs,), generator=gen)
    rd = th.randint(0, g.num_nodes(), (num_pairs,), generator=gen)
    pos = (emb[src] * emb[dst]).sum(1)
    neg = (emb[rs] * emb[rd]).sum(1)
    # AUC = P(pos > neg) over all pairs, by ranks.
    scores = th.cat([pos, neg])
    ranks = th.empty_like(scores)
    ranks[scores.argsort()] = th.arange(1, len(scores) + 1, dtype=scores.dtype)
    n = float(num_pairs)
    return float((ranks[:num_pairs].sum() - n * (n + 1) / 2) / (n * n))


def main(args):
    th.manual_seed(args.seed)
    dist.initialize(args.ip_config)
    if "WORLD_SIZE" in os.environ:
        th.distributed.init_process_group(backend="gloo")
    g = dist.DistGraph(args.graph_name, part_config=args.part_config)
    feats = g.ndata[args.feat_name]
    train_eids = dist.edge_split(th.ones(g.num_edges(), dtype=th.bool), g.get_partition_book(),
                                 force_even=True)
    sampler = dataloading.NeighborSampler([int(f) for f in args.fan_out.split(",")])
    loader = dataloading.DistEdgeDataLoader(
        g, train_eids, sampler, exclude="self",
        negative_sampler=dataloading.negative_sampler.Uniform(args.num_negs),
        batch_size=args.batch_size, shuffle=True, drop_last=False)
    model = DistSAGE(feats.shape[1], args.num_hidden, args.num_layers, args.dropout)
    train_model = (th.nn.parallel.DistributedDataParallel(model)
                   if th.distributed.is_initialized() else model)
    opt = th.optim.Adam(train_model.parameters(), lr=args.lr)

    untrained = evaluate_auc(model, g, feats, args.batch_size_eval, args.eval_pairs, 1)
    print(f"Part {g.rank()}, untrained AUC {untrained:.4f}", flush=True)
    for epoch in range(1, args.num_epochs + 1):
        tic, total, steps = time.time(), 0.0, 0
        for step, (input_nodes, pos_graph, neg_graph, blocks) in enumerate(loader):
            h = train_model(blocks, feats[input_nodes])
            pos, neg = score(pos_graph, h), score(neg_graph, h)
            logits = th.cat([pos, neg])
            labels = th.cat([th.ones_like(pos), th.zeros_like(neg)])
            loss = F.binary_cross_entropy_with_logits(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, steps = total + loss.item(), steps + 1
            if args.log_every and (step + 1) % args.log_every == 0:
                print(f"Part {g.rank()} | Epoch {epoch:05d} | Step {step:05d} | "
                      f"Loss {loss.item():.4f}", flush=True)
        print(f"Part {g.rank()}, Epoch {epoch} Time(s): {time.time() - tic:.4f}, "
              f"loss {total / max(steps, 1):.4f}", flush=True)
    trained = evaluate_auc(model, g, feats, args.batch_size_eval, args.eval_pairs, 1)
    print(f"Part {g.rank()}, trained AUC {trained:.4f} (untrained {untrained:.4f})", flush=True)
    if args.json:
        print("RESULT " + json.dumps({"rank": g.rank(), "untrained_auc": untrained,
                                      "trained_auc": trained}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Distributed unsupervised GraphSAGE")
    parser.add_argument("--graph_name", "--graph-name", type=str)
    parser.add_argument("--ip_config", "--ip-config", type=str, default=None)
    parser.add_argument("--part_config", "--part-config", type=str)
    parser.add_argument("--num_epochs", "--num-epochs", type=int, default=5)
    parser.add_argument("--num_hidden", "--num-hidden", type=int, default=64)
    parser.add_argument("--num_layers", "--num-layers", type=int, default=2)
    parser.add_argument("--fan_out", "--fan-out", type=str, default="10,25")
    parser.add_argument("--batch_size", "--batch-size", type=int, default=256)
    parser.add_argument("--batch_size_eval", "--batch-size-eval", type=int, default=10000)
    parser.add_argument("--num_negs", "--num-negs", type=int, default=1)
    parser.add_argument("--log_every", "--log-every", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--feat_name", default="feat")
    parser.add_argument("--eval_pairs", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--local_rank", "--local-rank", type=int)
    parser.add_argument("--json", action="store_true")
    main(parser.parse_args())
