"""R-GCN entity classification written as DGL's distributed example writes it
(examples/distributed/rgcn/node_classification.py): each layer a
``HeteroGraphConv`` of ``GraphConv(norm="right", weight=False, bias=False)``
per relation, the relations' weights from a ``WeightBasis`` passed through
``mod_kwargs``, ``block.local_var()``, typed loaders (``{"paper": ids}``),
and a learned ``DistEmbedding`` for every node type without features (the
predicted type too, if it has none). ``import tessera as dgl`` and
``from tessera import nn as dglnn`` are the only changes a DGL script needs.

Standalone:  python3 rgcn_hetero.py --graph-name mag --conf-path parts/mag.json
Launched:    tessera launch ... "python3 rgcn_hetero.py --graph-name mag ..."
"""
import argparse
import json
import os
import time

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import tessera as dgl  # was: import dgl
from tessera import nn as dglnn  # was: from dgl import nn as dglnn


class RelGraphConvLayer(nn.Module):
    def __init__(self, in_feat, out_feat, rel_names, num_bases, *, bias=True,
                 activation=None, self_loop=False, dropout=0.0):
        super().__init__()
        self.rel_names, self.activation, self.self_loop = rel_names, activation, self_loop
        self.conv = dglnn.HeteroGraphConv({
            rel: dglnn.GraphConv(in_feat, out_feat, norm="right", weight=False, bias=False)
            for rel in rel_names})
        self.use_basis = num_bases < len(rel_names)
        if self.use_basis:
            self.basis = dglnn.WeightBasis((in_feat, out_feat), num_bases, len(rel_names))
        else:
            self.weight = nn.Parameter(th.Tensor(len(rel_names), in_feat, out_feat))
            nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        self.h_bias = nn.Parameter(th.zeros(out_feat)) if bias else None
        if self_loop:
            self.loop_weight = nn.Parameter(th.Tensor(in_feat, out_feat))
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, inputs):
        g = g.local_var()
        weight = self.basis() if self.use_basis else self.weight
        wdict = {self.rel_names[i]: {"weight": w.squeeze(0)}
                 for i, w in enumerate(th.split(weight, 1, dim=0))}
        inputs_dst = {k: v[:g.number_of_dst_nodes(k)] for k, v in inputs.items()}
        hs = self.conv(g, inputs, mod_kwargs=wdict)

        def _apply(ntype, h):
            if self.self_loop:
                h = h + th.matmul(inputs_dst[ntype], self.loop_weight)
            if self.h_bias is not None:
                h = h + self.h_bias
            if self.activation:
                h = self.activation(h)
            return self.dropout(h)
        return {ntype: _apply(ntype, h) for ntype, h in hs.items()}


class EntityClassify(nn.Module):
    def __init__(self, h_dim, out_dim, rel_names, num_bases, num_hidden_layers, dropout,
                 use_self_loop):
        super().__init__()
        num_bases = len(rel_names) if num_bases < 0 else num_bases
        hidden = dict(activation=F.relu, self_loop=use_self_loop, dropout=dropout)
        self.layers = nn.ModuleList(
            [RelGraphConvLayer(h_dim, h_dim, rel_names, num_bases, **hidden)
             for _ in range(1 + num_hidden_layers)])
        self.layers.append(RelGraphConvLayer(h_dim, out_dim, rel_names, num_bases,
                                             self_loop=use_self_loop))

    def forward(self, blocks, feats):
        h = feats
        for layer, block in zip(self.layers, blocks):
            h = layer(block, h)
        return h


def init_emb(shape, dtype):
    arr = th.zeros(shape, dtype=dtype)
    nn.init.uniform_(arr, -1.0, 1.0)
    return arr


class DistEmbedLayer(nn.Module):
    """Input rows per node type: a projection of ``feat_name`` where the
    type has it, else a learned DistEmbedding (sparse, updated where the
    rows live)."""

    def __init__(self, g, embed_size, feat_name="feat"):
        super().__init__()
        self.g, self.feat_name = g, feat_name
        self.node_projs = nn.ModuleDict()
        self.node_embeds = {}
        for ntype in g.ntypes:
            if feat_name in g.nodes[ntype].data:
                self.node_projs[ntype] = nn.Linear(g.nodes[ntype].data[feat_name].shape[1],
                                                   embed_size)
                nn.init.xavier_uniform_(self.node_projs[ntype].weight)
            else:
                self.node_embeds[ntype] = dgl.distributed.DistEmbedding(
                    g.num_nodes(ntype), embed_size, "node_emb_" + ntype, init_emb,
                    g.get_node_partition_policy(ntype))

    def forward(self, node_ids):
        return {ntype: (self.node_projs[ntype](self.g.nodes[ntype].data[self.feat_name][ids])
                        if ntype in self.node_projs else self.node_embeds[ntype](ids))
                for ntype, ids in node_ids.items()}


def evaluate(model, embed_layer, loader, labels, predict):
    """Correct predictions and their count over the loader's seeds."""
    model.eval()
    correct = total = 0
    with th.no_grad():
        for input_nodes, seeds, blocks in loader:
            logits = model(blocks, embed_layer(input_nodes))[predict]
            correct += (logits.argmax(1) == labels[seeds[predict]]).sum().item()
            total += len(seeds[predict])
    model.train()
    return correct, total


def all_sum(values):
    t = th.tensor(values, dtype=th.float64)
    if th.distributed.is_initialized():
        th.distributed.all_reduce(t)
    return t.tolist()


def main(args):
    th.manual_seed(args.seed)
    dgl.distributed.initialize(args.ip_config, use_graphbolt=False)
    if "WORLD_SIZE" in os.environ:
        th.distributed.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.conf_path)
    pb, predict = g.get_partition_book(), args.predict_ntype
    data = g.nodes[predict].data
    train_nid = dgl.distributed.node_split(data["train_mask"], pb, ntype=predict, force_even=True)
    test_nid = dgl.distributed.node_split(data["test_mask"], pb, ntype=predict, force_even=True)
    labels = data[args.label][np.arange(g.num_nodes(predict))].long()
    n_classes = len(th.unique(labels[labels >= 0]))
    fanouts = [int(f) for f in args.fanout.split(",")]
    sampler = dgl.dataloading.MultiLayerNeighborSampler(fanouts)
    loader = dgl.distributed.DistNodeDataLoader(g, {predict: train_nid}, sampler,
                                                batch_size=args.batch_size, shuffle=True)
    test_loader = dgl.distributed.DistNodeDataLoader(
        g, {predict: test_nid}, dgl.dataloading.MultiLayerNeighborSampler(
            [int(f) for f in args.validation_fanout.split(",")]),
        batch_size=args.eval_batch_size, shuffle=False)
    embed_layer = DistEmbedLayer(g, args.n_hidden)
    model = EntityClassify(args.n_hidden, n_classes, g.etypes, args.n_bases, len(fanouts) - 2,
                           args.dropout, args.use_self_loop)
    dense = list(model.parameters()) + list(embed_layer.node_projs.parameters())
    embeds = embed_layer.node_embeds
    emb_optimizer = (dgl.distributed.optim.SparseAdam(list(embeds.values()), lr=args.sparse_lr)
                     if embeds else None)
    if th.distributed.is_initialized():
        model = DistributedDataParallel(model)
        if len(embed_layer.node_projs):
            embed_layer = DistributedDataParallel(embed_layer)
    optimizer = th.optim.Adam(dense, lr=args.lr, weight_decay=args.l2norm)
    for epoch in range(args.n_epochs):
        tic, loss_sum, seen = time.time(), 0.0, 0
        for input_nodes, seeds, blocks in loader:
            logits = model(blocks, embed_layer(input_nodes))[predict]
            loss = F.cross_entropy(logits, labels[seeds[predict]])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if emb_optimizer is not None:
                emb_optimizer.step()
            loss_sum, seen = loss_sum + loss.item() * len(seeds[predict]), seen + len(
                seeds[predict])
        loss_all, seen_all = all_sum([loss_sum, seen])
        print(f"[{g.rank()}] Epoch {epoch} Time(s): {time.time() - tic:.4f}, loss "
              f"{loss_all / max(seen_all, 1):.4f}", flush=True)
    correct, total = all_sum(list(evaluate(model, embed_layer, test_loader, labels, predict)))
    test_acc = correct / max(total, 1)
    print(f"[{g.rank()}] Test Acc {test_acc:.4f}", flush=True)
    print("RESULT " + json.dumps({"rank": g.rank(), "test_acc": test_acc,
                                  "embedded_types": sorted(embeds)}), flush=True)
    dgl.distributed.exit_client()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="R-GCN, DGL's way")
    parser.add_argument("--graph-name", type=str, required=True)
    parser.add_argument("--ip-config", type=str, default=None)
    parser.add_argument("--conf-path", "--part-config", type=str)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--n-hidden", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--sparse-lr", type=float, default=1e-2)
    parser.add_argument("--n-bases", type=int, default=-1)
    parser.add_argument("--n-epochs", type=int, default=20)
    parser.add_argument("--l2norm", type=float, default=0.0)
    parser.add_argument("--fanout", type=str, default="10,10")
    parser.add_argument("--validation-fanout", type=str, default="20,20")
    parser.add_argument("--use-self-loop", default=False, action="store_true")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--eval-batch-size", type=int, default=256)
    parser.add_argument("--predict-ntype", default="paper")
    parser.add_argument("--label", default="label", help="DGL's ogbn-mag: 'labels'")
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args())
