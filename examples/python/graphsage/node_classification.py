"""Distributed GraphSAGE node classification: DGL's
examples/distributed/graphsage/node_classification.py on tessera, with only
the imports changed (dgl.distributed -> tessera.distributed, dgl.nn.pytorch ->
tessera.nn), plus optional flags for citation graphs (--row_normalize,
--input_dropout, --weight_decay), checkpoints (--checkpoint_dir,
--checkpoint_every: a restarted job continues from the newest one) and a
machine-readable summary (--json).

Standalone:  python3 node_classification.py --graph_name cora --part_config parts/cora.json
Launched:    tessera launch ... "python3 node_classification.py --graph_name cora ..."
"""
import argparse
import hashlib
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
import torch.optim as optim

import tessera
import tessera.distributed as dist
import tessera.nn as dglnn
from tessera.distributed import checkpoint

START = time.time()


class DistSAGE(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes, n_layers, activation, dropout,
                 input_dropout=0.0):
        super().__init__()
        self.n_layers, self.n_hidden, self.n_classes = n_layers, n_hidden, n_classes
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.SAGEConv(in_feats, n_hidden, "mean"))
        for _ in range(1, n_layers - 1):
            self.layers.append(dglnn.SAGEConv(n_hidden, n_hidden, "mean"))
        self.layers.append(dglnn.SAGEConv(n_hidden, n_classes, "mean"))
        self.dropout = nn.Dropout(dropout)
        self.input_dropout = nn.Dropout(input_dropout)
        self.activation = activation

    def forward(self, blocks, x):
        h = self.input_dropout(x)
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.activation(h)
                h = self.dropout(h)
        return h

    def inference(self, g, x, batch_size, device, transform=None):
        """Layer-wise inference over all in-neighbours; each trainer computes
        its node_split share of every layer into a DistTensor."""
        nodes = dist.node_split(th.ones(g.num_nodes(), dtype=th.bool), g.get_partition_book(),
                                force_even=True)
        for i, layer in enumerate(self.layers):
            if i == len(self.layers) - 1:
                out_dim, name = self.n_classes, "h_last"
            else:
                out_dim, name = self.n_hidden, "h"
            y = dist.DistTensor((g.num_nodes(), out_dim), th.float32, name, persistent=True)
            sampler = dist.NeighborSampler([-1])
            dataloader = dist.DistNodeDataLoader(g, nodes, sampler, batch_size=batch_size,
                                                 shuffle=False, drop_last=False)
            for input_nodes, output_nodes, blocks in dataloader:
                block = blocks[0].to(device)
                h = x[input_nodes].to(device)
                if i == 0 and transform is not None:
                    h = transform(h)
                h_dst = h[: block.number_of_dst_nodes()]
                h = layer(block, (h, h_dst))
                if i != len(self.layers) - 1:
                    h = self.activation(h)
                    h = self.dropout(h)
                y[output_nodes] = h.cpu()
            x = y
            g.barrier()
        return x


def all_sum(values):
    """Sums a list of numbers over all trainers (identity standalone)."""
    t = th.tensor(values, dtype=th.float64)
    if th.distributed.is_initialized():
        th.distributed.all_reduce(t)
    return t.tolist()


def evaluate(model, g, inputs, labels, val_nid, test_nid, batch_size, device, transform):
    """Accuracy over the val/test nodes of all trainers."""
    model.eval()
    with th.no_grad():
        pred = model.inference(g, inputs, batch_size, device, transform)
    model.train()
    counts = []
    for nid in (val_nid, test_nid):
        correct = (th.argmax(pred[nid], dim=1) == labels[nid].long()).sum().item()
        counts += [correct, len(nid)]
    vc, vn, tc, tn = all_sum(counts)
    return vc / max(vn, 1), tc / max(tn, 1)


def run(args, device, data):
    train_nid, val_nid, test_nid, in_feats, n_classes, g = data
    transform = (lambda x: x / x.sum(1, keepdim=True).clamp(min=1e-12)) \
        if args.row_normalize else None
    sampler = dist.NeighborSampler([int(fanout) for fanout in args.fan_out.split(",")])
    dataloader = dist.DistNodeDataLoader(g, train_nid, sampler, batch_size=args.batch_size,
                                         shuffle=True, drop_last=False,
                                         num_workers=args.num_workers)
    model = DistSAGE(in_feats, args.num_hidden, n_classes, args.num_layers, F.relu,
                     args.dropout, args.input_dropout).to(device)
    if th.distributed.is_initialized():
        model = th.nn.parallel.DistributedDataParallel(model)
    module = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
    loss_fcn = nn.CrossEntropyLoss().to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    epoch_time, test_acc, val_acc, inference_s = [], 0.0, 0.0, 0.0
    splits, batches, global_step, first_epoch = [], 0, 0, 1
    schedule = checkpoint.Schedule(args.checkpoint_every)
    if args.checkpoint_dir and checkpoint.latest(args.checkpoint_dir):
        path = checkpoint.latest(args.checkpoint_dir)
        extra = checkpoint.restore(path, model=model, optimizer=optimizer,
                                   loaders=[dataloader])
        global_step = extra["step"]
        first_epoch = dataloader.state_dict()["epoch"] + 1
        print(f"Part {g.rank()}, resumed from step {global_step} (epoch {first_epoch}) of "
              f"{path}", flush=True)
    for epoch in range(first_epoch, args.num_epochs + 1):
        tic = time.time()
        sample_time = pull_time = forward_time = backward_time = update_time = 0.0
        num_seeds = num_inputs = 0
        loss_sum = correct = seen = 0.0
        start = time.time()
        for step, (input_nodes, seeds, blocks) in enumerate(dataloader):
            tic_step = time.time()
            sample_time += tic_step - start
            batch_inputs = g.ndata[args.feat_name][input_nodes]
            if transform is not None:
                batch_inputs = transform(batch_inputs)
            batch_labels = g.ndata[args.label_name][seeds].long()
            num_seeds += len(blocks[-1].dstdata[tessera.NID])
            num_inputs += len(blocks[0].srcdata[tessera.NID])
            t_pull = time.time()
            pull_time += t_pull - tic_step
            batch_pred = model(blocks, batch_inputs)
            loss = loss_fcn(batch_pred, batch_labels)
            forward_end = time.time()
            optimizer.zero_grad()
            loss.backward()
            compute_end = time.time()
            forward_time += forward_end - t_pull
            backward_time += compute_end - forward_end
            optimizer.step()
            update_time += time.time() - compute_end
            global_step += 1
            if args.checkpoint_dir and schedule.due(global_step):
                checkpoint.save(os.path.join(args.checkpoint_dir, f"step-{global_step}"),
                                model=model, optimizer=optimizer, loaders=[dataloader],
                                extra={"step": global_step}, keep=args.keep)
            loss_sum += loss.item() * len(seeds)
            correct += (batch_pred.argmax(1) == batch_labels).sum().item()
            seen += len(seeds)
            if args.log_every and (step + 1) % args.log_every == 0:
                print(f"Part {g.rank()} | Epoch {epoch:05d} | Step {step:05d} | "
                      f"Loss {loss.item():.4f}", flush=True)
            start = time.time()
        toc = time.time()
        loss_all, correct_all, seen_all = all_sum([loss_sum, correct, seen])
        print(f"Part {g.rank()}, Epoch {epoch} Time(s): {toc - tic:.4f}, sample: "
              f"{sample_time:.4f}, pull: {pull_time:.4f}, forward: {forward_time:.4f}, "
              f"backward: {backward_time:.4f}, update: {update_time:.4f}, #seeds: {num_seeds}, "
              f"#inputs: {num_inputs}, loss {loss_all / max(seen_all, 1):.4f}, "
              f"train acc {correct_all / max(seen_all, 1):.4f}", flush=True)
        epoch_time.append(toc - tic)
        batches = step + 1
        # The bench's keys (tools/cmd_bench_train.cc); PyTorch's DDP averages
        # gradients inside backward, so its sync time is part of backward.
        splits.append({"epoch": epoch - 1, "time_s": toc - tic, "sample_s": sample_time,
                       "pull_s": pull_time,
                       "forward_backward_s": forward_time + backward_time + update_time,
                       "sync_s": 0.0, "loss": loss_all / max(seen_all, 1),
                       "train_acc": correct_all / max(seen_all, 1)})
        if args.eval_every and (epoch % args.eval_every == 0 or epoch == args.num_epochs):
            start = time.time()
            inference_tic = time.time()
            val_acc, test_acc = evaluate(module, g, g.ndata[args.feat_name],
                                         g.ndata[args.label_name], val_nid, test_nid,
                                         args.batch_size_eval, device, transform)
            inference_s = time.time() - inference_tic
            print(f"Part {g.rank()}, Val Acc {val_acc:.4f}, Test Acc {test_acc:.4f}, "
                  f"time: {time.time() - start:.4f}", flush=True)
    tail = epoch_time[-max(1, int(args.num_epochs * 0.8)):]
    checksum = sum(float(p.detach().double().sum()) for p in module.parameters())
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes()
                                     for p in module.parameters())).hexdigest()
    print(f"Part {g.rank()}, Params checksum {checksum:.10e}, sha256 {digest}", flush=True)
    return dict(tail_mean=float(np.mean(tail or [0.0])), val_acc=val_acc, test_acc=test_acc,
                checksum=checksum, params_sha256=digest, epochs=splits, inference_s=inference_s,
                epoch_time_mean_s=float(np.mean(epoch_time or [0.0])),
                batches_per_epoch=batches)


def main(args):
    host_name = socket.gethostname()
    print(f"{host_name}: Initializing tessera.", flush=True)
    th.manual_seed(args.seed)
    dist.initialize(args.ip_config)
    if "WORLD_SIZE" in os.environ:
        print(f"{host_name}: Initializing PyTorch process group.", flush=True)
        th.distributed.init_process_group(backend=args.backend)
    g = dist.DistGraph(args.graph_name, part_config=args.part_config)
    print(f"Rank of {host_name}: {g.rank()}", flush=True)

    pb = g.get_partition_book()
    trainer_ids = g.ndata["trainer_id"] if "trainer_id" in g.ndata else None
    train_nid = dist.node_split(g.ndata["train_mask"], pb, force_even=True,
                                node_trainer_ids=trainer_ids)
    val_nid = dist.node_split(g.ndata["val_mask"], pb, force_even=True,
                              node_trainer_ids=trainer_ids)
    test_nid = dist.node_split(g.ndata["test_mask"], pb, force_even=True,
                               node_trainer_ids=trainer_ids)
    local_nid = pb.partid2nids(pb.partid).numpy()
    print(f"part {g.rank()}, train: {len(train_nid)} (local: "
          f"{len(np.intersect1d(train_nid.numpy(), local_nid))}), val: {len(val_nid)}, "
          f"test: {len(test_nid)}", flush=True)
    device = th.device("cpu")
    n_classes = args.n_classes
    if n_classes == 0:
        labels = g.ndata[args.label_name][np.arange(g.num_nodes())]
        n_classes = int(labels.max().item()) + 1
        del labels
    print(f"Number of classes: {n_classes}", flush=True)
    in_feats = g.ndata[args.feat_name].shape[1]
    data = train_nid, val_nid, test_nid, in_feats, n_classes, g
    r = run(args, device, data)
    print(f"Summary of node classification(GraphSAGE): GraphName {args.graph_name} | "
          f"TrainEpochTime(mean) {r['tail_mean']:.4f} | TestAccuracy {r['test_acc']:.4f}",
          flush=True)
    if args.json:
        info = dist.context.info()
        r.update(rank=g.rank(), world_size=info["world_size"],
                 peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                 total_s=time.time() - START)
        print("RESULT " + json.dumps(r), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Distributed GraphSAGE.")
    parser.add_argument("--graph_name", "--graph-name", type=str, help="graph name")
    parser.add_argument("--ip_config", "--ip-config", type=str, default=None)
    parser.add_argument("--part_config", "--part-config", type=str)
    parser.add_argument("--n_classes", "--n-classes", type=int, default=0)
    parser.add_argument("--backend", type=str, default="gloo")
    parser.add_argument("--num_gpus", "--num-gpus", type=int, default=0)
    parser.add_argument("--num_epochs", "--num-epochs", type=int, default=20)
    parser.add_argument("--num_hidden", "--num-hidden", type=int, default=16)
    parser.add_argument("--num_layers", "--num-layers", type=int, default=2)
    parser.add_argument("--fan_out", "--fan-out", type=str, default="10,25")
    parser.add_argument("--batch_size", "--batch-size", type=int, default=1000)
    parser.add_argument("--batch_size_eval", "--batch-size-eval", type=int, default=100000)
    parser.add_argument("--log_every", "--log-every", type=int, default=20)
    parser.add_argument("--eval_every", "--eval-every", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--local_rank", "--local-rank", type=int)
    parser.add_argument("--pad-data", default=False, action="store_true",
                        help="ignored: tessera's loaders always give every trainer the same "
                             "number of batches")
    # tessera additions.
    parser.add_argument("--input_dropout", "--input-dropout", type=float, default=0.0)
    parser.add_argument("--weight_decay", "--weight-decay", type=float, default=0.0)
    parser.add_argument("--row_normalize", "--row-normalize", action="store_true")
    parser.add_argument("--feat_name", default="feat",
                        help="node feature tensor (DGL's example uses 'features')")
    parser.add_argument("--label_name", default="label")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num_workers", "--num-workers", type=int, default=None,
                        help="sampler threads (default: the launcher's --num-samplers)")
    parser.add_argument("--json", action="store_true", help="print a RESULT json line")
    parser.add_argument("--checkpoint_dir", "--checkpoint-dir",
                        default=os.environ.get("TESSERA_CHECKPOINT_DIR"),
                        help="checkpoints go here, and a run continues from the newest one "
                             "(default: the launcher's --checkpoint-dir)")
    parser.add_argument("--checkpoint_every", "--checkpoint-every", default="",
                        help="save every N steps (\"100\") or seconds (\"300s\", \"5min\")")
    parser.add_argument("--keep", type=int, default=3, help="checkpoints kept")
    args = parser.parse_args()
    if args.num_gpus:
        parser.error("--num_gpus: tessera trains on the CPU")
    print(f"Arguments: {args}", flush=True)
    main(args)
