"""DGL-style scripts under examples/python that use DGL's graph objects and
message passing, standalone and under `tessera launch` as 2 machines x 2
trainers, with accuracy thresholds: the seeds' low-level loop
(sample_neighbors + to_block in a DistDataLoader collate, a SAGE layer
written with update_all) on Cora; R-GCN as DGL's distributed example writes
it (HeteroGraphConv + GraphConv(weight=False) + WeightBasis + local_var,
DistEmbeddings for featureless types) on a generated mag-shaped graph."""
import os
import subprocess

import pytest

from conftest import PYTHON, SOURCE, launch, make_mag, results

LOW_LEVEL = os.path.join(SOURCE, "examples", "python", "graphsage", "low_level_sampling.py")
RGCN = os.path.join(SOURCE, "examples", "python", "rgcn", "rgcn_hetero.py")
RGCN_FLAGS = ["--graph-name", "mag", "--n-epochs", "30", "--n-hidden", "64", "--use-self-loop",
              "--dropout", "0.5", "--sparse-lr", "0.5", "--n-bases", "2", "--seed", "1"]


def test_low_level_sampling_standalone(cora_parts):
    r = subprocess.run([PYTHON, LOW_LEVEL, "--graph_name", "cora", "--part_config",
                        cora_parts[1]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    (res,) = results(r.stdout)
    # GraphSAGE on Cora: ~0.78 here; DGL's published GraphSAGE is ~0.80.
    assert res["test_acc"] >= 0.72, r.stdout


def test_low_level_sampling_launched_two_by_two(cora_parts, tmp_path):
    code, out, _ = launch(tmp_path, cora_parts[2],
                          f"{PYTHON} {LOW_LEVEL} --graph_name cora --part_config "
                          f"{cora_parts[2]} --num_epochs 40")
    assert code == 0, out
    res = results(out)
    assert len(res) == 4, out
    assert len({r["test_acc"] for r in res}) == 1  # Summed over every trainer.
    assert res[0]["test_acc"] >= 0.70, out


@pytest.fixture(scope="module")
def mag(tmp_path_factory):
    return make_mag(tmp_path_factory.mktemp("dglrgcn"), "--num-nodes", "10000", "--feat-dim",
                    "16", "--num-classes", "8", "--train-frac", "0.3", "--val-frac", "0.1",
                    "--test-frac", "0.6")


def test_dgl_style_rgcn_standalone_and_launched(mag, tmp_path):
    _, parts = mag
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([PYTHON, RGCN, "--conf-path", parts[1], *RGCN_FLAGS],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout
    (res,) = results(r.stdout)
    # 0.81 here (seed 1); the RelGraphConv example gets 0.78-0.87 on this graph,
    # a features-only MLP 0.20-0.21 (test_rgcn_example.py).
    assert res["test_acc"] >= 0.72, r.stdout
    assert res["embedded_types"] == ["author", "field_of_study", "institution"], res
    code, out, _ = launch(tmp_path, parts[2], " ".join(
        [PYTHON, RGCN, "--conf-path", parts[2], *RGCN_FLAGS, "--batch-size", "64"]))
    assert code == 0, out
    res2 = results(out)
    assert len(res2) == 4 and len({x["test_acc"] for x in res2}) == 1, out
    assert res2[0]["test_acc"] >= 0.70, out


CHECK_PARTS = r'''
import sys, torch, numpy as np
import tessera.distributed as dist
config, folder = sys.argv[1], sys.argv[2]
want = torch.load(folder + "/want.pt")
orig = torch.from_numpy(np.load(config.rsplit("/", 1)[0] + "/orig_nids.npy"))
dist.initialize()
g = dist.DistGraph("toy", part_config=config)
assert sorted(g.ntypes) == ["item", "user"], g.ntypes
offset = {"item": 0, "user": want["num"]["item"]}  # heterograph orders types by name
for t in g.ntypes:
    ids = torch.arange(g.num_nodes(t))
    o = orig[g.map_to_homo_nid(ids, t)] - offset[t]
    assert torch.equal(o, want["orig_nids"][t]), t  # partition_graph's returned mapping
    for name, value in want["nodes"][t].items():
        assert torch.equal(g.nodes[t].data[name][ids], value[o]), (t, name)
buys = ("user", "buys", "item")
eids = torch.arange(g.num_edges(buys))
assert torch.equal(g.edges[buys].data["w"][eids], want["w"][want["orig_eids"][buys]])
src, dst = g.find_edges(eids, buys)
assert torch.equal(want["buys_u"][want["orig_eids"][buys]], want["orig_nids"]["user"][src])
assert torch.equal(want["buys_v"][want["orig_eids"][buys]], want["orig_nids"]["item"][dst])
seeds = {"user": dist.node_split(g.nodes["user"].data["train_mask"], g.get_partition_book(),
                                 ntype="user")}
loader = dist.DistNodeDataLoader(g, seeds, dist.NeighborSampler([-1]), batch_size=8)
n = sum(s["user"].numel() for _, s, _ in loader)
assert n == seeds["user"].numel(), n
print("CHECK typed_in_memory ok", flush=True)
'''


def test_partition_graph_takes_an_in_memory_heterograph(tmp_path):
    """DGL's partition_graph.py scripts build dgl.heterograph and set masks,
    labels and features per type; tessera partitions that object."""
    import torch
    import tessera
    gen = torch.Generator().manual_seed(0)
    num = {"user": 60, "item": 40}
    rels = {("user", "follows", "user"): (60, 60, 200), ("user", "buys", "item"): (60, 40, 150),
            ("item", "bought-by", "user"): (40, 60, 150)}
    g = tessera.heterograph({c: (torch.randint(0, ns, (e,), generator=gen),
                                 torch.randint(0, nd, (e,), generator=gen))
                             for c, (ns, nd, e) in rels.items()}, num_nodes_dict=num)
    g.nodes["user"].data["feat"] = torch.randn(60, 4, generator=gen)
    g.nodes["user"].data["train_mask"] = torch.rand(60, generator=gen) < 0.5
    g.nodes["user"].data["label"] = torch.randint(0, 3, (60,), generator=gen)
    g.nodes["item"].data["price"] = torch.rand(40, generator=gen)
    g.edges["buys"].data["w"] = torch.rand(150, generator=gen)
    script = tmp_path / "check.py"
    script.write_text(CHECK_PARTS)
    u, v = g.edges(etype="buys")
    for k in (1, 2):
        nids, eids = tessera.partition_graph(g, "toy", k, str(tmp_path / f"p{k}"),
                                             return_mapping=True)
        # DGL's typed mapping: per type, the original id of each new one.
        assert sorted(nids) == ["item", "user"] and len(eids) == 3
        for t in g.ntypes:
            assert torch.equal(torch.sort(nids[t]).values, torch.arange(num[t]))
        assert not [p for p in os.listdir(tmp_path / f"p{k}") if p.startswith(".input-")]
        torch.save({"num": num, "orig_nids": nids, "orig_eids": eids, "buys_u": u, "buys_v": v,
                    "w": g.edges["buys"].data["w"],
                    "nodes": {t: dict(g.nodes[t].data.items()) for t in g.ntypes}},
                   tmp_path / "want.pt")
        config = tmp_path / f"p{k}" / "toy.json"
        if k == 1:
            r = subprocess.run([PYTHON, str(script), str(config), str(tmp_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=300)
        else:
            (tmp_path / "job").mkdir()
            code, out, _ = launch(tmp_path / "job", str(config),
                                  f"{PYTHON} {script} {config} {tmp_path}", trainers=1)
            r = subprocess.CompletedProcess([], code, out)
        assert r.returncode == 0 and "CHECK typed_in_memory ok" in r.stdout, r.stdout
    with pytest.raises(tessera.TesseraError, match=r"balance_ntypes\['user'\] must be a 1-D "
                       r"integer or bool tensor of 60 entries"):
        tessera.partition_graph(g, "toy", 2, str(tmp_path / "bad"), balance_ntypes={"user": 0})
    with pytest.raises(tessera.TesseraError, match="balance_ntypes names node type 'shop'"):
        tessera.partition_graph(g, "toy", 2, str(tmp_path / "bad"),
                                balance_ntypes={"shop": torch.zeros(60, dtype=torch.int64)})


def test_partition_graph_balances_by_dgl_s_tensors(tmp_path):
    """DGL's R-GCN partition script passes balance_ntypes={"paper":
    train_mask} (a heterograph), its GraphSAGE one a tensor: METIS balances
    those values across parts, and the tensors are not written."""
    import json
    import torch
    import tessera
    gen = torch.Generator().manual_seed(0)
    rels = {("user", "follows", "user"): (600, 600, 3000),
            ("user", "buys", "item"): (600, 400, 2000),
            ("item", "bought-by", "user"): (400, 600, 2000)}
    g = tessera.heterograph({c: (torch.randint(0, ns, (e,), generator=gen),
                                 torch.randint(0, nd, (e,), generator=gen))
                             for c, (ns, nd, e) in rels.items()},
                            num_nodes_dict={"user": 600, "item": 400})
    g.nodes["user"].data["feat"] = torch.randn(600, 4, generator=gen)
    mask = torch.rand(600, generator=gen) < 0.2

    def per_part(out, nids, ntype, values):
        """Sum of `values` over each part's nodes of `ntype`."""
        config = json.loads((out / "toy.json").read_text())
        assert "__balance" not in json.dumps(config), config  # Neither listed nor written:
        assert not list(out.rglob("*balance*")), list(out.rglob("*balance*"))
        ranges = config["node_map"][ntype] if isinstance(config["node_map"], dict) else \
            config["node_map"]
        sums, at = [], 0
        for lo, hi in ranges:
            sums.append(int(values[nids[at:at + hi - lo]].sum()))
            at += hi - lo
        return sums

    nids, _ = tessera.partition_graph(g, "toy", 2, str(tmp_path / "typed"), return_mapping=True,
                                      balance_ntypes={"user": mask}, balance_edges=True)
    a, b = per_part(tmp_path / "typed", nids["user"], "user", mask)
    assert a + b == int(mask.sum()) and abs(a - b) <= 4, (a, b)  # 52 / 66 unbalanced.
    # A graph of one type and a tensor that is not one of its arrays.
    h = tessera.graph(g.edges(etype="follows"), num_nodes=600)
    nids, _ = tessera.partition_graph(h, "toy", 2, str(tmp_path / "homo"), return_mapping=True,
                                      balance_ntypes={"_N": mask})
    a, b = per_part(tmp_path / "homo", nids, "_N", mask)
    assert a + b == int(mask.sum()) and abs(a - b) <= 4, (a, b)
    # One named type (DGL: a tensor, or a one-entry dict whatever its key).
    one = tessera.heterograph({("user", "follows", "user"): g.edges(etype="follows")},
                              num_nodes_dict={"user": 600})
    for i, bal in enumerate((mask, {"anything": mask})):
        out = tmp_path / f"one{i}"
        nids, _ = tessera.partition_graph(one, "toy", 2, str(out), return_mapping=True,
                                          balance_ntypes=bal)
        a, b = per_part(out, nids, "user", mask)
        assert a + b == int(mask.sum()) and abs(a - b) <= 4, (a, b)
    # Several types and a plain tensor: which type's? (DGL ignores it.)
    with pytest.raises(tessera.TesseraError, match=r"balance_ntypes is the name of a node "
                       r"array or DGL's \{ntype: tensor\}"):
        tessera.partition_graph(g, "toy", 2, str(tmp_path / "bad"), balance_ntypes=mask)


LINK = os.path.join(SOURCE, "examples", "python", "graphsage", "link_prediction.py")


def test_link_prediction_with_u_dot_v_standalone_and_launched(cora_parts, tmp_path):
    """The pair graphs' scores are apply_edges(fn.u_dot_v(...)), as DGL's."""
    flags = ["--graph_name", "cora", "--num_epochs", "4", "--log_every", "0", "--json"]
    r = subprocess.run([PYTHON, LINK, "--part_config", cora_parts[1], *flags],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    runs = results(r.stdout)
    code, out, _ = launch(tmp_path, cora_parts[2],
                          " ".join([PYTHON, LINK, "--part_config", cora_parts[2], *flags]))
    assert code == 0, out
    runs += results(out)
    assert len(runs) == 5, (r.stdout, out)
    for res in runs:
        assert res["trained_auc"] >= max(0.85, res["untrained_auc"] + 0.15), runs


def test_dgl_style_rgcn_learns_a_featureless_predicted_type(tmp_path):
    """DGL's example gives every featureless type a DistEmbedding, the
    predicted one too: on the authors graph (no features at all) papers are
    classified from the authors they share."""
    from authors_graph import partition_authors_graph
    config = partition_authors_graph(tmp_path / "authors", with_feat=False)
    r = subprocess.run([PYTHON, RGCN, "--graph-name", "authors", "--conf-path", config,
                        "--sparse-lr", "0.5", "--seed", "1"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stdout
    (res,) = results(r.stdout)
    assert res["embedded_types"] == ["author", "paper"], res
    assert res["test_acc"] >= 0.8, res  # 0.90-0.91 measured; majority class 0.21
