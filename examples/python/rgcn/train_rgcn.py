"""Distributed R-GCN entity classification on a heterogeneous graph: DGL's
examples/distributed/rgcn/node_classification.py ported to tessera (imports
tessera.distributed and tessera.nn only). As DGL's example did before it
moved to hetero blocks, it samples homogeneous blocks over the typed graph
and gives RelGraphConv each block edge's relation (``map_to_per_etype`` of
its id, tessera.nn.block_etypes) and an edge norm; node types with a feature
array enter through a linear projection, featureless types through a learned
DistEmbedding per type (the predicted type's too when it has no features)
trained with SparseAdam, as DGL's DistEmbedLayer (SparseAdagrad with
``--sparse-optimizer adagrad``).
``--model mlp`` trains a features-only baseline on the same seeds. The data
flow and the extra flags are the C++ example's, examples/rgcn/train_rgcn.cpp;
differences from DGL's flags are in docs/python.md.

Standalone:  python3 train_rgcn.py --graph-name mag --part-config parts/mag.json
Launched:    tessera launch ... "python3 train_rgcn.py --graph-name mag ..."
"""
import argparse
import json
import os
import resource
import socket
import time

import numpy as np
import torch as th
import torch.distributed
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import tessera.distributed as dist
import tessera.nn as dglnn
from tessera.distributed import checkpoint

START = time.time()


class DistEmbedLayer(nn.Module):
    """Input rows of homogeneous nodes: types with ``feat_name`` through a
    Linear projection (dense, synchronised by DDP), the other types through
    a DistEmbedding each (sparse, updated where the rows live). The
    embeddings are created only when ``embeddings`` is set (the MLP reads
    the predicted type's features only)."""

    def __init__(self, g, embed_size, feat_name="feat", embed_name="node_emb", embeddings=True,
                 seed=0):
        super().__init__()
        self.g, self.embed_size, self.feat_name = g, embed_size, feat_name
        self.ntype_id_map = {g.get_ntype_id(ntype): ntype for ntype in g.ntypes}
        self.node_projs = nn.ModuleDict()
        for ntype in g.ntypes:
            if feat_name in g.nodes[ntype].data:
                self.node_projs[ntype] = nn.Linear(g.nodes[ntype].data[feat_name].shape[1],
                                                   embed_size)
                nn.init.xavier_uniform_(self.node_projs[ntype].weight)
                print(f"node {ntype} has data {feat_name}", flush=True)
        # Not nn.Modules (as in DGL): their rows are trained by the sparse
        # optimizer, not by Adam and DDP.
        self.node_embeds = {}
        if embeddings:
            for ntype in g.ntypes:
                if feat_name not in g.nodes[ntype].data:
                    self.node_embeds[ntype] = dist.DistEmbedding(
                        g.num_nodes(ntype), embed_size, f"{embed_name}_{ntype}",
                        dist.init.uniform(-1.0, 1.0, seed),
                        g.get_node_partition_policy(ntype))

    def train(self, mode=True):
        super().train(mode)
        for emb in self.node_embeds.values():
            emb.train(mode)
        return self

    def forward(self, node_ids, ntype_ids):
        """node_ids: per-type ids; ntype_ids: their node types. Each type's
        rows are computed together, then put in the nodes' order by one
        gather (one scatter in the backward)."""
        n = node_ids.shape[0]
        parts, places = [], []
        for ntype_id, ntype in self.ntype_id_map.items():
            loc = th.nonzero(ntype_ids == ntype_id).reshape(-1)
            ids = node_ids[loc]
            if ntype in self.node_projs:
                # Also without rows: DDP expects every projection to be used.
                rows = self.node_projs[ntype](
                    self.g.nodes[ntype].data[self.feat_name][ids].float())
            elif ntype in self.node_embeds and len(ids):
                rows = self.node_embeds[ntype](ids)
            else:
                continue  # the MLP reads no other type
            parts.append(rows)
            places.append(loc)
        placed = sum(len(loc) for loc in places)
        if placed < n:  # types read by neither (the MLP's): zero rows
            unread = th.ones(n, dtype=th.bool)
            for loc in places:
                unread[loc] = False
            places.append(th.nonzero(unread).reshape(-1))
            parts.append(th.zeros(n - placed, self.embed_size))
        if not parts:
            return th.zeros(0, self.embed_size)
        inverse = th.empty(n, dtype=th.int64)  # node i's row in the parts
        inverse[th.cat(places)] = th.arange(n)
        return th.cat(parts).index_select(0, inverse)


class MLP(nn.Module):
    """The features-only baseline (no graph): the seeds' projected features."""

    def __init__(self, h_dim, out_dim, dropout):
        super().__init__()
        self.net = nn.Sequential(nn.ReLU(), nn.Dropout(dropout), nn.Linear(h_dim, h_dim),
                                 nn.ReLU(), nn.Dropout(dropout), nn.Linear(h_dim, out_dim))

    def forward(self, x):
        return self.net(x)


def all_sum(values):
    """Sums a list of numbers over all trainers (identity standalone)."""
    t = th.tensor(values, dtype=th.float64)
    if th.distributed.is_initialized():
        th.distributed.all_reduce(t)
    return t.tolist()


class Runner:
    """One forward pass of a batch, shared by training and evaluation."""

    def __init__(self, args, g, model, embed_layer, labels):
        self.args, self.g, self.model, self.embed_layer = args, g, model, embed_layer
        self.labels = labels
        self.norm = {"rel": dglnn.rel_norm,
                     "dst": lambda b, e: dglnn.norm_by_dst(b).unsqueeze(1),
                     "none": lambda b, e: None}[args.norm]

    def __call__(self, input_nodes, seeds, blocks):
        g = self.g
        if self.args.model == "mlp":
            ntype_ids, type_ids = g.map_to_per_ntype(seeds)
            logits = self.model(self.embed_layer(type_ids, ntype_ids))
        else:
            etypes = [dglnn.block_etypes(g, block) for block in blocks]
            norms = [self.norm(block, e) for block, e in zip(blocks, etypes)]
            ntype_ids, type_ids = g.map_to_per_ntype(input_nodes)
            feats = self.embed_layer(type_ids, ntype_ids)
            logits = self.model(blocks, feats, etypes, norms)
        return logits, self.labels[g.map_to_per_ntype(seeds)[1]]


def evaluate(runner, loader):
    """Accuracy over the seeds of every trainer."""
    runner.model.eval()
    runner.embed_layer.eval()
    correct = total = 0
    with th.no_grad():
        for input_nodes, seeds, blocks in loader:
            logits, labels = runner(input_nodes, seeds, blocks)
            correct += (logits.argmax(1) == labels).sum().item()
            total += len(seeds)
    runner.model.train()
    runner.embed_layer.train()
    correct, total = all_sum([correct, total])
    return correct / max(total, 1)


def run(args, g, data):
    train_nid, val_nid, test_nid, labels, num_classes, majority_acc = data
    fanouts = [int(f) for f in args.fanout.split(",")]
    val_fanouts = [int(f) for f in args.validation_fanout.split(",")]
    # Seeds are the papers' homogeneous ids: the blocks are homogeneous and
    # their edges' ids give the relations.
    sampler = dist.NeighborSampler(fanouts)
    dataloader = dist.DistNodeDataLoader(g, train_nid, sampler, batch_size=args.batch_size,
                                         shuffle=True, drop_last=False,
                                         num_workers=args.num_workers)
    # Construction is collective: every trainer builds the loaders in this order.
    valid_dataloader = dist.DistNodeDataLoader(g, val_nid, dist.NeighborSampler(val_fanouts),
                                               batch_size=args.eval_batch_size, shuffle=False,
                                               drop_last=False, num_workers=args.num_workers)
    test_dataloader = dist.DistNodeDataLoader(g, test_nid, dist.NeighborSampler(val_fanouts),
                                              batch_size=args.eval_batch_size, shuffle=False,
                                              drop_last=False, num_workers=args.num_workers)

    embed_layer = DistEmbedLayer(g, args.n_hidden, feat_name=args.feat,
                                 embeddings=args.model == "rgcn", seed=args.seed)
    # A featureless predicted type learns an embedding like every other
    # featureless type (as DGL's example); only the baseline needs features.
    if args.model == "mlp" and args.predict_ntype not in embed_layer.node_projs:
        raise SystemExit(f"--model mlp: node type {args.predict_ntype!r} has no array "
                         f"{args.feat!r} (the baseline reads the seeds' features only)")
    if args.use_self_loop is None:
        # The self loop carries a node's own input: the predicted type's
        # features are the strongest signal (mag 10k: 0.82-0.87 with, 0.67-0.73
        # without), but a featureless type's own embedding is untrained noise
        # for most test nodes (authors graph: 0.90-0.91 without, 0.88 with).
        args.use_self_loop = args.predict_ntype in embed_layer.node_projs
    if args.model == "rgcn":
        model = dglnn.RGCN(args.n_hidden, num_classes, len(g.canonical_etypes),
                           num_bases=args.n_bases, num_hidden_layers=len(fanouts) - 2,
                           dropout=args.dropout, use_self_loop=args.use_self_loop,
                           layer_norm=args.layer_norm, regularizer=args.regularizer)
    else:
        model = MLP(args.n_hidden, num_classes, args.dropout)
    dense_params = list(model.parameters()) + list(embed_layer.node_projs.parameters())
    runner = Runner(args, g, model, embed_layer, labels)
    if th.distributed.is_initialized():
        runner.model = DistributedDataParallel(model)
        if len(embed_layer.node_projs):  # DDP refuses a module without parameters.
            runner.embed_layer = DistributedDataParallel(embed_layer)
    optimizer = th.optim.Adam(dense_params, lr=args.lr, weight_decay=args.l2norm)
    embeds = list(embed_layer.node_embeds.values())
    emb_optimizer = None
    if embeds:
        sparse = {"adagrad": dist.optim.SparseAdagrad, "adam": dist.optim.SparseAdam}
        emb_optimizer = sparse[args.sparse_optimizer](embeds, lr=args.sparse_lr)
        print(f"optimize DGL sparse embedding: {list(embed_layer.node_embeds)}", flush=True)

    # Checkpoints hold the dense modules (model and projections) and, since
    # they are persistent, every DistEmbedding and its sparse optimizer state.
    dense_modules = nn.ModuleList([model, embed_layer.node_projs])
    schedule = checkpoint.Schedule(args.checkpoint_every)
    global_step, first_epoch = 0, 0
    if args.checkpoint_dir and checkpoint.latest(args.checkpoint_dir):
        path = checkpoint.latest(args.checkpoint_dir)
        extra = checkpoint.restore(path, model=dense_modules, optimizer=optimizer,
                                   loaders=[dataloader])
        global_step = extra["step"]
        first_epoch = dataloader.state_dict()["epoch"]
        print(f"[{g.rank()}] resumed from step {global_step} (epoch {first_epoch}) of {path}",
              flush=True)

    print("start training...", flush=True)
    epochs, val_acc, test_acc = [], 0.0, 0.0
    for epoch in range(first_epoch, args.n_epochs):
        tic = time.time()
        sample_time = forward_time = backward_time = update_time = 0.0
        number_train = number_input = 0
        loss_sum = correct = 0.0
        start = time.time()
        for step, (input_nodes, seeds, blocks) in enumerate(dataloader):
            tic_step = time.time()
            sample_time += tic_step - start
            number_train += len(seeds)
            number_input += len(input_nodes)
            logits, label = runner(input_nodes, seeds, blocks)
            loss = F.cross_entropy(logits, label)
            forward_end = time.time()
            optimizer.zero_grad()
            if emb_optimizer is not None:
                emb_optimizer.zero_grad()
            loss.backward()
            compute_end = time.time()
            optimizer.step()
            if emb_optimizer is not None:
                emb_optimizer.step()
            update_time += time.time() - compute_end
            global_step += 1
            if args.checkpoint_dir and schedule.due(global_step):
                checkpoint.save(os.path.join(args.checkpoint_dir, f"step-{global_step}"),
                                model=dense_modules, optimizer=optimizer, loaders=[dataloader],
                                extra={"step": global_step}, keep=args.keep)
            forward_time += forward_end - tic_step
            backward_time += compute_end - forward_end
            loss_sum += loss.item() * len(seeds)
            correct += (logits.argmax(1) == label).sum().item()
            if args.log_every and step % args.log_every == 0:
                print(f"[{g.rank()}] Epoch {epoch:05d} | Step {step:05d} | Train acc "
                      f"{(logits.argmax(1) == label).float().mean().item():.4f} | Loss "
                      f"{loss.item():.4f}", flush=True)
            start = time.time()
        seconds = time.time() - tic
        loss_all, correct_all, seen_all = all_sum([loss_sum, correct, number_train])
        print(f"[{g.rank()}]Epoch Time(s): {seconds:.4f}, sample: {sample_time:.4f}, forward: "
              f"{forward_time:.4f}, backward: {backward_time:.4f}, update: {update_time:.4f}, "
              f"#train: {number_train}, #input: {number_input}", flush=True)
        record = {"epoch": epoch, "time_s": seconds, "loss": loss_all / max(seen_all, 1),
                  "train_acc": correct_all / max(seen_all, 1)}
        last = epoch == args.n_epochs - 1
        if last or (args.eval_every and (epoch + 1) % args.eval_every == 0):
            start = time.time()
            val_acc = evaluate(runner, valid_dataloader)
            test_acc = evaluate(runner, test_dataloader)
            record.update(val_acc=val_acc, test_acc=test_acc)
            if g.rank() == 0:
                print(f"Val Acc {val_acc:.4f}, Test Acc {test_acc:.4f}, time: "
                      f"{time.time() - start:.4f}", flush=True)
        epochs.append(record)
    checksum = sum(float(p.detach().double().sum()) for p in dense_params)
    return dict(epochs=epochs, val_acc=val_acc, test_acc=test_acc, majority_acc=majority_acc,
                checksum=checksum,
                epoch_time_mean_s=float(np.mean([e["time_s"] for e in epochs] or [0.0])))


def main(args):
    print(f"{socket.gethostname()}: Initializing tessera.", flush=True)
    th.manual_seed(args.seed)
    dist.initialize(args.ip_config)
    if "WORLD_SIZE" in os.environ:
        th.distributed.init_process_group(backend="gloo")
    g = dist.DistGraph(args.graph_name, part_config=args.conf_path)
    print("rank:", g.rank(), flush=True)
    if args.predict_ntype not in g.ntypes:
        raise SystemExit(f"--predict-ntype {args.predict_ntype!r}: the graph's node types are "
                         f"{g.ntypes}")

    pb = g.get_partition_book()
    paper = g.nodes[args.predict_ntype].data
    splits = {}
    for name in ("train_mask", "val_mask", "test_mask"):
        mine = dist.node_split(paper[name], pb, ntype=args.predict_ntype, force_even=True)
        # The loaders take homogeneous ids (the blocks are homogeneous).
        splits[name] = pb.map_to_homo_nid(mine, args.predict_ntype)
    train_nid, val_nid, test_nid = splits["train_mask"], splits["val_mask"], splits["test_mask"]
    local_nid = pb.partid2nids(pb.partid, args.predict_ntype).numpy()
    train_per_type = pb.map_to_per_ntype(train_nid)[1].numpy()
    print(f"part {g.rank()}, train: {len(train_nid)} (local: "
          f"{len(np.intersect1d(train_per_type, local_nid))}), val: {len(val_nid)}, test: "
          f"{len(test_nid)}", flush=True)
    labels = paper[args.label][th.arange(g.num_nodes(args.predict_ntype))].long()
    num_classes = int(labels.max().item()) + 1
    print("#classes:", num_classes, flush=True)
    # The majority-class baseline: the most frequent training label, on the test papers.
    hist = th.bincount(labels[pb.map_to_per_ntype(train_nid)[1]], minlength=num_classes)
    hist = th.tensor(all_sum(hist.tolist()))
    test_labels = labels[pb.map_to_per_ntype(test_nid)[1]]
    hits, count = all_sum([(test_labels == int(hist.argmax())).sum().item(), len(test_labels)])
    majority_acc = hits / max(count, 1)

    r = run(args, g, (train_nid, val_nid, test_nid, labels, num_classes, majority_acc))
    if g.rank() == 0:
        print(f"done ({args.model}): test accuracy {r['test_acc']:.4f} (val {r['val_acc']:.4f}; "
              f"majority class {majority_acc:.4f}), mean epoch {r['epoch_time_mean_s']:.2f} s",
              flush=True)
    if args.json:
        info = dist.context.info()
        r.update(rank=g.rank(), world_size=info["world_size"], model=args.model,
                 mode="standalone" if info["standalone"] else "distributed",
                 peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                 total_s=time.time() - START)
        print("RESULT " + json.dumps(r), flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="RGCN")
    # DGL's flags (both spellings), with the C++ example's names as aliases.
    parser.add_argument("--graph-name", "--graph_name", type=str, required=True)
    parser.add_argument("--ip-config", "--ip_config", type=str, default=None)
    parser.add_argument("--conf-path", "--conf_path", "--part-config", "--part_config",
                        dest="conf_path", type=str, help="partition config (standalone)")
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--n-hidden", "--num-hidden", "--num_hidden", dest="n_hidden", type=int,
                        default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--sparse-lr", "--sparse_lr", dest="sparse_lr", type=float,
                        default=0.06)
    parser.add_argument("--n-bases", "--num-bases", "--num_bases", dest="n_bases", type=int,
                        default=2, help="basis weights (-1: one per relation)")
    parser.add_argument("--n-layers", "--n_layers", dest="n_layers", type=int, default=None,
                        help="number of RelGraphConv layers (default: one per fanout)")
    parser.add_argument("-e", "--n-epochs", "--num-epochs", "--num_epochs", dest="n_epochs",
                        type=int, default=10)
    parser.add_argument("-d", "--dataset", type=str, default=None, help="ignored (DGL's flag)")
    parser.add_argument("--l2norm", type=float, default=0.0)
    parser.add_argument("--fanout", "--fan-out", "--fan_out", dest="fanout", type=str,
                        default="10,10", help="fanout per layer, input layer first")
    parser.add_argument("--validation-fanout", "--validation_fanout", dest="validation_fanout",
                        type=str, default=None, help="default: --fanout")
    parser.add_argument("--use-self-loop", "--use_self_loop", dest="use_self_loop",
                        action="store_true", default=None,
                        help="self-loop weight W_0 (default: on when the predicted type has "
                             "features, off without, as DGL's; docs/python.md)")
    parser.add_argument("--no-self-loop", dest="use_self_loop", action="store_false")
    parser.add_argument("--batch-size", "--batch_size", dest="batch_size", type=int,
                        default=1024)
    parser.add_argument("--eval-batch-size", "--eval_batch_size", "--batch-size-eval",
                        dest="eval_batch_size", type=int, default=4096)
    parser.add_argument("--log-every", "--log_every", dest="log_every", type=int, default=20)
    parser.add_argument("--eval-every", "--eval_every", dest="eval_every", type=int, default=1,
                        help="evaluate every N epochs (0: after the last only)")
    parser.add_argument("--layer-norm", "--layer_norm", dest="layer_norm", action="store_true")
    parser.add_argument("--low-mem", "--sparse-embedding", "--dgl-sparse", "--standalone",
                        dest="ignored", action="store_true",
                        help="accepted for DGL's command lines: featureless types always use "
                             "DistEmbedding; standalone is detected")
    parser.add_argument("--num_gpus", "--num-gpus", type=int, default=-1)
    parser.add_argument("--local_rank", "--local-rank", type=int)
    # tessera additions (the C++ example's flags).
    parser.add_argument("--predict-ntype", "--predict_ntype", dest="predict_ntype",
                        default="paper")
    parser.add_argument("--feat", default="feat",
                        help="node feature array (types without it learn embeddings)")
    parser.add_argument("--label", default="label", help="label array (DGL's mag: 'labels')")
    parser.add_argument("--model", choices=["rgcn", "mlp"], default="rgcn",
                        help="rgcn, or mlp (the seeds' own features only)")
    parser.add_argument("--regularizer", choices=["basis", "bdd"], default="basis")
    parser.add_argument("--norm", choices=["rel", "dst", "none"], default="rel",
                        help="edge norm: 1/in-degree per relation (rel), over all relations "
                             "(dst, DGL's distributed example), or none")
    parser.add_argument("--sparse-optimizer", "--sparse_optimizer", dest="sparse_optimizer",
                        choices=["adagrad", "adam"], default="adam",
                        help="DGL's example uses SparseAdam; at the default --sparse-lr it "
                             "reached 2-5 points more test accuracy than SparseAdagrad on the "
                             "generated mag graph and on an authors-papers graph (docs/python.md)")
    parser.add_argument("--num-workers", "--num_workers", dest="num_workers", type=int,
                        default=None, help="sampler threads (default: the launcher's)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", action="store_true", help="print a RESULT json line")
    parser.add_argument("--checkpoint-dir", "--checkpoint_dir", dest="checkpoint_dir",
                        default=os.environ.get("TESSERA_CHECKPOINT_DIR"),
                        help="checkpoints go here, and a run continues from the newest one "
                             "(default: the launcher's --checkpoint-dir)")
    parser.add_argument("--checkpoint-every", "--checkpoint_every", dest="checkpoint_every",
                        default="", help="save every N steps (\"100\") or seconds (\"5min\")")
    parser.add_argument("--keep", type=int, default=3, help="checkpoints kept")
    args = parser.parse_args(argv)
    if args.num_gpus not in (-1, 0):
        parser.error("--num_gpus: tessera trains on the CPU")
    fanouts = args.fanout.split(",")
    if args.n_layers is not None and args.n_layers != len(fanouts):
        parser.error(f"--n-layers {args.n_layers} needs as many fanouts, got {args.fanout!r}")
    if len(fanouts) < 2 and args.model == "rgcn":
        parser.error("--fanout: the R-GCN has at least 2 layers (an input and an output one)")
    if args.validation_fanout is None:
        args.validation_fanout = args.fanout
    if len(args.validation_fanout.split(",")) != len(fanouts):
        parser.error("--validation-fanout needs one fanout per layer, as --fanout")
    return args


if __name__ == "__main__":
    args = parse_args()
    print(args, flush=True)
    main(args)
