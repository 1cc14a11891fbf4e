"""partition_graph / load_partition (dgl.distributed), on tessera's partitioner
(the engine of ``tessera partition``)."""
import json
import os
import shutil
import tempfile

import numpy as np
import torch

from tessera import _C, EID, NID
from tessera._utils import INT32_MAX, INT64_MAX, as_int, as_seed, check_text
from tessera.heterograph import Graph, _Relation


# The name balance_ntypes given as tensors go under: they only balance and
# are not written (PartitionOptions.write_balance_array).
_BALANCE = "__balance_ntypes__"


def _balance_values(value, count, what):
    """A balance_ntypes tensor: one integer (or bool) per node."""
    t = torch.as_tensor(value)
    if t.dim() != 1 or t.numel() != count or t.is_floating_point() or t.is_complex():
        raise _C.TesseraError(f"partition_graph: balance_ntypes{what} must be a 1-D integer or "
                              f"bool tensor of {count} entries, got {t.dtype} of shape "
                              f"{tuple(t.shape)}")
    return t


def _only_entry(balance_ntypes):
    """DGL on a graph of one type: a dict's one value, whatever its key."""
    if not isinstance(balance_ntypes, dict):
        return balance_ntypes
    if len(balance_ntypes) != 1:
        raise _C.TesseraError("partition_graph: balance_ntypes as a dict on a graph of one node "
                              "type has one entry")
    return next(iter(balance_ntypes.values()))


def _typed_balance(g, balance_ntypes):
    """DGL's ``{ntype: tensor}`` on a heterograph: those types' nodes are
    balanced by their values, every other type as one class. A graph of one
    (named) type takes a tensor or a one-entry dict, whatever its key, as
    DGL's."""
    if g.is_homogeneous:
        balance_ntypes = {g.ntypes[0]: _only_entry(balance_ntypes)}
    if not isinstance(balance_ntypes, dict):
        raise _C.TesseraError("partition_graph: with a typed graph, balance_ntypes is the name "
                              "of a node array or DGL's {ntype: tensor}")
    out = {}
    for t, value in balance_ntypes.items():
        if t not in g.ntypes:
            raise _C.TesseraError(f"partition_graph: balance_ntypes names node type {t!r}; the "
                                  f"graph has {g.ntypes}")
        out[t] = _balance_values(value, g.num_nodes(t), f"[{t!r}]")
    return out


def _write_typed_folder(g, folder, balance=None):
    """``g`` (a typed tessera graph) as a typed npy folder
    (docs/hetero-input.md), which the partitioner reads; ``balance``
    ({ntype: tensor}) as node arrays named _BALANCE."""
    for t in g.ntypes:
        if "/" in t or ":" in t or t in (".", ".."):
            raise _C.TesseraError(f"partition_graph: node type {t!r} is not a safe name")
    meta = {"ntypes": {t: g.num_nodes(t) for t in g.ntypes},
            "etypes": [":".join(c) for c in g.canonical_etypes]}
    with open(os.path.join(folder, "meta.json"), "w") as f:
        json.dump(meta, f)

    def save(sub, name, value):
        if "/" in name or "\0" in name or name in ("", ".", ".."):  # The rest: C++'s check.
            raise _C.TesseraError(f"partition_graph: array name {name!r} is not a safe file "
                                  f"name")
        os.makedirs(sub, exist_ok=True)
        np.save(os.path.join(sub, f"{name}.npy"), torch.as_tensor(value).numpy())

    for t in g.ntypes:
        arrays = dict(g.nodes[t].data, **({_BALANCE: balance[t]} if t in (balance or {}) else {}))
        for name, value in arrays.items():
            if name != NID:
                save(os.path.join(folder, "nodes", t), name, value)
    for c in g.canonical_etypes:
        sub = os.path.join(folder, "edges", "__".join(c))
        src, dst = g.edges(etype=c)
        save(sub, "src", src)
        save(sub, "dst", dst)
        for name, value in g.edges[c].data.items():
            if name != EID:
                save(sub, name, value)


def _endpoints(src, dst):
    """The edges' (src, dst) as tensors of an integer dtype (as tessera.graph
    takes them: float ids are refused, never cut to integers)."""
    out = []
    for name, ids in (("src", src), ("dst", dst)):
        t = torch.as_tensor(ids)
        if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
            raise TypeError(f"partition_graph: edge {name} ids must have an integer dtype, "
                            f"got {t.dtype}")
        out.append(t)
    return out


def _graph_arrays(g):
    """(num_nodes, src, dst, ndata, edata) from a DGLGraph-like object or a dict."""
    if isinstance(g, dict):
        src, dst = g["edges"]
        return (as_int(g["num_nodes"], "partition_graph: num_nodes", 0, INT64_MAX),
                *_endpoints(src, dst), dict(g.get("ndata", {})), dict(g.get("edata", {})))
    if hasattr(g, "edges") and hasattr(g, "num_nodes"):
        src, dst = g.edges()
        return (as_int(g.num_nodes(), "partition_graph: num_nodes", 0, INT64_MAX),
                *_endpoints(src, dst), dict(getattr(g, "ndata", {})),
                dict(getattr(g, "edata", {})))
    raise TypeError("partition_graph: g must be a graph folder path, a dict with 'edges' and "
                    "'num_nodes', or a DGLGraph-like object with edges() and num_nodes()")


def _options(args, balance_ntypes):
    options = _C.PartitionOptions()
    for name, value in dict(args, balance_ntypes=balance_ntypes).items():
        setattr(options, name, value)
    return options


def partition_graph(g, graph_name, num_parts, out_path, num_hops=1, part_method="metis",
                    balance_ntypes=None, balance_edges=False, return_mapping=False,
                    num_trainers_per_machine=1, objtype="cut", graph_formats=None,
                    seed=0, coarsening=1, coarsen_min_arcs=1 << 20):
    """Partitions ``g`` into ``num_parts`` parts under ``out_path``
    (``<graph_name>.json`` + ``part<i>/``), like ``tessera partition``.

    ``g`` is a graph folder (npy, CSV or OGB layout, as ``tessera partition
    --input`` reads), a graph of ``tessera.graph`` / ``tessera.heterograph``
    with its ``ndata`` / ``nodes[ntype].data`` / ``edges[etype].data``, another
    DGLGraph-like object (``edges()``, ``num_nodes()``, ``ndata``, ``edata``) or ``{"edges": (src, dst), "num_nodes": n,
    "ndata": {...}, "edata": {...}}``. ``balance_ntypes`` is the name of an
    integer node array, or DGL's tensor of one integer per node (``{ntype:
    tensor}`` on a heterograph); a tensor that is not one of the graph's
    arrays is not written. With ``return_mapping`` it returns ``(orig_nids,
    orig_eids)``: the original id of each new id.

    ``coarsening`` and ``coarsen_min_arcs`` are tessera's (``tessera
    partition --coarsening``): above 1, METIS partitions the graph contracted
    that many times, in a fraction of METIS's memory, and the parts are
    refined back; another output than METIS on the whole graph.
    """
    if not isinstance(graph_name, str) or not graph_name:
        raise TypeError("partition_graph: graph_name must be a non-empty string")
    check_text(graph_name, "partition_graph: graph_name")
    out_path = check_text(str(out_path), "partition_graph: out_path")
    num_parts = as_int(num_parts, "partition_graph: num_parts", 1, INT32_MAX)
    args = dict(num_hops=as_int(num_hops, "partition_graph: num_hops", 0, INT32_MAX),
                part_method=str(part_method),
                balance_edges=bool(balance_edges), return_mapping=bool(return_mapping),
                num_trainers_per_machine=as_int(num_trainers_per_machine,
                                                "partition_graph: num_trainers_per_machine",
                                                1, INT32_MAX),
                objtype=str(objtype), seed=as_seed(seed, "partition_graph: seed"),
                coarsening=float(coarsening),
                coarsen_min_arcs=as_int(coarsen_min_arcs, "partition_graph: coarsen_min_arcs",
                                        0, INT64_MAX))
    typed = isinstance(g, Graph) and (not g.is_homogeneous or g.ntypes != ["_N"]
                                      or g.canonical_etypes != [("_N", "_E", "_N")])
    if not typed:
        balance_ntypes = _only_entry(balance_ntypes)
    options = _options(args, balance_ntypes if isinstance(balance_ntypes, str) else "")
    if typed:
        # A typed in-memory graph (tessera.heterograph, also of one named
        # type): through a typed npy folder beside the output, removed after.
        balance = None
        if balance_ntypes is not None and not isinstance(balance_ntypes, str):
            balance = _typed_balance(g, balance_ntypes)
            options.balance_ntypes, options.write_balance_array = _BALANCE, False
        os.makedirs(out_path, exist_ok=True)
        folder = tempfile.mkdtemp(prefix=".input-", dir=out_path)
        try:
            _write_typed_folder(g, folder, balance)
            _C.partition_graph_path(folder, graph_name, num_parts, out_path, options)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    elif isinstance(g, (str, os.PathLike)):
        check_text(str(g), "partition_graph: g (a graph folder)")
        if balance_ntypes is not None and not isinstance(balance_ntypes, str):
            raise TypeError("partition_graph: with a graph folder, balance_ntypes is the name "
                            "of a node array")
        _C.partition_graph_path(str(g), graph_name, num_parts, out_path, options)
    else:
        num_nodes, src, dst, ndata, edata = _graph_arrays(g)
        ndata = {k: torch.as_tensor(v) for k, v in ndata.items() if k not in (NID,)}
        edata = {k: torch.as_tensor(v) for k, v in edata.items() if k not in (EID,)}
        if balance_ntypes is not None and not isinstance(balance_ntypes, str):
            # DGL's tensor (g.ndata['train_mask'], say): balanced by, and
            # written only if it is one of the graph's arrays.
            bt = _balance_values(balance_ntypes, num_nodes, "")
            for name, arr in ndata.items():
                if arr is balance_ntypes or (arr.shape == bt.shape and torch.equal(arr, bt)):
                    options.balance_ntypes = name
                    break
            else:
                ndata[_BALANCE] = bt
                options.balance_ntypes, options.write_balance_array = _BALANCE, False
        _C.partition_graph_arrays(num_nodes, src, dst, ndata, edata, graph_name,
                                  num_parts, out_path, options)
    if not return_mapping:
        return None
    nids = torch.from_numpy(np.load(os.path.join(out_path, "orig_nids.npy")))
    eids = torch.from_numpy(np.load(os.path.join(out_path, "orig_eids.npy")))
    if not typed or g.is_homogeneous:  # One type: DGL's tensors.
        return nids, eids
    return _typed_mapping(g, os.path.join(out_path, f"{graph_name}.json"), nids, eids)


def _typed_mapping(g, config, orig_nids, orig_eids):
    """DGL's mapping of a typed graph: ``({ntype: original per-type id of
    each new per-type id}, {canonical etype: the same for edges})``, from
    the homogeneous mapping and the config's type ranges. The input's
    homogeneous ids are ``g``'s types (relations) in order."""
    with open(config) as f:
        meta = json.load(f)

    def per_type(orig, ranges, types, count):
        out, offset = {}, 0
        for key, name in types:
            new = torch.cat([torch.arange(a, b, dtype=torch.int64) for a, b in ranges[name]]
                            or [torch.empty(0, dtype=torch.int64)])
            out[key] = orig[new] - offset
            offset += count(key)
        return out

    nids = per_type(orig_nids, meta["node_map"], [(t, t) for t in g.ntypes], g.num_nodes)
    eids = per_type(orig_eids, meta["edge_map"], [(c, ":".join(c)) for c in g.canonical_etypes],
                    g.num_edges)
    return nids, eids


def _config_path(part_config, what):
    """A partition config's path as a str (never ``str(None)``)."""
    if not isinstance(part_config, (str, os.PathLike)):
        raise TypeError(f"{what}: part_config must be a path, got {type(part_config).__name__}")
    return check_text(os.fspath(part_config), f"{what}: part_config")


def _local_graph(d, gpb):
    """One part's local graph as DGL's: one node type and one relation over
    the local nodes (inner nodes first, then HALO nodes), the in-edges of
    the inner nodes and more in CSC order; ``ndata[NID]`` / ``edata[EID]``
    global ids, ``inner_node`` / ``inner_edge`` what the part owns,
    ``_TYPE`` the types on a typed partition, ``part_id`` each node's part
    when there are several."""
    n = d["nid"].numel()
    g = Graph({"_N": n}, [("_N", "_E", "_N")],
              [_Relation(n, n, d["indices"], indptr=d["indptr"])])
    g.ndata.update({NID: d["nid"], "inner_node": d["inner_node"]})
    g.edata.update({EID: d["eid"], "inner_edge": d["inner_edge"]})
    if "ntype" in d:
        g.ndata["_TYPE"] = d["ntype"].to(torch.int32)  # DGL's dtype
        g.edata["_TYPE"] = d["etype"].to(torch.int32)
    if gpb.num_partitions() > 1:
        g.ndata["part_id"] = gpb.nid2partid(d["nid"])
    return g


def load_partition(part_config, part_id, load_feats=True, use_graphbolt=False):
    """DGL's load_partition: ``(graph, node_feats, edge_feats, gpb, graph_name,
    ntypes_list, etypes_list)``. Feature keys are DGL's ``"<ntype>/<name>"``
    and ``"<src>:<rel>:<dst>/<name>"`` (``"_N/feat"`` on a homogeneous
    graph); ``gpb`` is the typed partition book of a typed partition."""
    if use_graphbolt:
        raise ValueError("load_partition: use_graphbolt=True is not supported")
    d, gpb, node_feats, edge_feats = _load("load_partition", part_config, part_id,
                                           bool(load_feats), bool(load_feats), True)
    return (_local_graph(d, gpb), node_feats, edge_feats, gpb, d["graph_name"], gpb.ntypes,
            gpb.canonical_etypes)


def _load(what, part_config, part_id, nodes, edges, graph):
    """The C++ loader's dict, the partition book and the node / edge arrays
    under DGL's keys."""
    from tessera.distributed.partition_book import GraphPartitionBook
    d = _C.load_partition(_config_path(part_config, what),
                          as_int(part_id, f"{what}: part_id", 0, INT32_MAX), nodes, edges, graph)
    gpb = GraphPartitionBook(d["book"])
    node_feats, edge_feats = d["node_feats"], d["edge_feats"]
    if not d["typed"]:  # One type: the config names it ("_N", or a graph's own name).
        node_feats = {f"{gpb.ntypes[0]}/{k}": v for k, v in node_feats.items()}
        edge_feats = {f"{':'.join(gpb.canonical_etypes[0])}/{k}": v
                      for k, v in edge_feats.items()}
    return d, gpb, node_feats, edge_feats


def load_partition_feats(part_config, part_id, load_nodes=True, load_edges=True):
    """DGL's load_partition_feats: ``(node_feats, edge_feats)`` of part
    ``part_id``, keyed as :func:`load_partition`'s, each ``None`` when not
    asked for. Only the arrays asked for are read, not the part's graph."""
    _, _, node_feats, edge_feats = _load("load_partition_feats", part_config, part_id,
                                         bool(load_nodes), bool(load_edges), False)
    return (node_feats if load_nodes else None), (edge_feats if load_edges else None)


def load_partition_book(part_config, part_id):
    """DGL's load_partition_book: ``(gpb, graph_name, {ntype: id},
    {canonical etype: id})``."""
    from tessera.distributed.partition_book import GraphPartitionBook
    book, name = _C.load_partition_book(
        _config_path(part_config, "load_partition_book"),
        as_int(part_id, "load_partition_book: part_id", 0, INT32_MAX))
    gpb = GraphPartitionBook(book)
    return (gpb, name, {t: i for i, t in enumerate(gpb.ntypes)},
            {c: i for i, c in enumerate(gpb.canonical_etypes)})
