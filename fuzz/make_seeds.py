#!/usr/bin/python3
"""Writes the seed corpora in fuzz/corpus/<target>/ (committed; rerun after
changing this script). Small, real-looking inputs: .npy files of several
dtypes and format versions, encoded RPC messages, DGL/tessera partition
configs, ip_config files, CSV/TSV edge lists and OGB layouts. Standard
library only (no numpy, no protobuf). Other files there (crash-*) are inputs
that once crashed a target, kept as regression seeds: this script leaves them."""
import gzip
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


# --- npy ------------------------------------------------------------------
def npy(descr, shape, data, version=1, fortran=False, quote="'"):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    q = quote
    d = "{%sdescr%s: %s%s%s, %sfortran_order%s: %s, %sshape%s: %s, }" % (
        q, q, q, descr, q, q, q, "True" if fortran else "False", q, q, shape_text)
    prefix = 10 if version == 1 else 12
    total = (prefix + len(d) + 1 + 63) // 64 * 64
    d = d + " " * (total - prefix - len(d) - 1) + "\n"
    head = b"\x93NUMPY" + bytes([version, 0])
    head += struct.pack("<H" if version == 1 else "<I", len(d))
    return head + d.encode("latin1") + data


def npy_seeds():
    write("npy", "int64_ids.npy", npy("<i8", [5], struct.pack("<5q", 0, 3, 1, 4, 2)))
    write("npy", "int32_ids.npy", npy("<i4", [4], struct.pack("<4i", 2, 0, 1, 3)))
    write("npy", "bool_mask.npy", npy("|b1", [6], bytes([1, 0, 0, 1, 1, 0])))
    write("npy", "float32_feat.npy", npy("<f4", [3, 2], struct.pack("<6f", 0.5, -1, 2, 3.25, 0, 1e-3)))
    write("npy", "float64_v2.npy", npy("<f8", [2, 2], struct.pack("<4d", 1, 2, 3, 4), version=2))
    write("npy", "uint8_v3.npy", npy("|u1", [2, 3], bytes(range(6)), version=3))
    write("npy", "int16_dq.npy", npy("<i2", [3], struct.pack("<3h", -1, 0, 7), quote='"'))
    write("npy", "int8_scalar.npy", npy("|i1", [], bytes([5])))
    write("npy", "empty.npy", npy("<i8", [0], b""))
    write("npy", "fortran_1d.npy", npy("<f4", [2], struct.pack("<2f", 1, 2), fortran=True))


# --- wire (protobuf encoded by hand) ---------------------------------------
TOKEN = b"fuzz-job-token"  # fuzz/wire_fuzz.cc's kToken


def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, data):
    return varint((num << 3) | 2) + varint(len(data)) + data


def field_double(num, value):
    return varint((num << 3) | 1) + struct.pack("<d", value)


def array_meta(dtype, shape):
    packed = b"".join(varint(d) for d in shape)
    return field_varint(1, dtype) + (field_bytes(2, packed) if shape else b"")


def header(method, arrays=(), token=TOKEN, response=False, extra=b"", request_id=7):
    h = field_varint(1, 3)  # kWireVersion
    if token:
        h += field_bytes(2, token)
    h += field_varint(3, request_id) + field_varint(4, 5000) + field_varint(5, 1)
    h += field_varint(6, method)
    if response:
        h += field_varint(7, 1)
    for dtype, shape in arrays:
        h += field_bytes(10, array_meta(dtype, shape))
    return h + extra


def frames(*parts):
    return b"".join(struct.pack("<I", len(p)) + p for p in parts)


INT64, INT32, FLOAT32, BOOL = 5, 4, 6, 0
HELLO, PULL, PUSH, INIT_DATA, LIST_DATA, BARRIER, SAMPLE, FIND_EDGES, SPARSE_UPDATE = (
    1, 4, 5, 6, 8, 9, 10, 13, 14)


def wire_seeds():
    ids = struct.pack("<3q", 4, 0, 9)
    write("wire", "pull_request", frames(
        header(PULL, [(INT64, [3])], extra=field_bytes(11, b"node/feat")), ids))
    rows = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    write("wire", "pull_response", frames(
        header(PULL, [(FLOAT32, [3, 2])], token=b"", response=True), rows))
    write("wire", "push_request", frames(
        header(PUSH, [(INT64, [3]), (FLOAT32, [3, 2])],
               extra=field_bytes(11, b"node/emb") + field_varint(12, 1)), ids, rows))
    sample = field_varint(1, 10) + field_varint(3, 1) + field_varint(5, 42)
    write("wire", "sample_request", frames(
        header(SAMPLE, [(INT64, [3]), (INT64, [0])], extra=field_bytes(18, sample)), ids, b""))
    write("wire", "sample_response", frames(
        header(SAMPLE, [(INT32, [2]), (INT32, [2]), (INT64, [2])], token=b"", response=True),
        struct.pack("<2i", 3, 5), struct.pack("<2i", 10, 11), struct.pack("<2q", 1, 1)))
    info = (field_varint(1, 1) + field_varint(2, 0) + field_varint(3, 2) + field_bytes(4, b"cora")
            + field_bytes(5, varint(0) + varint(1354) + varint(2708))
            + field_bytes(6, varint(0) + varint(5000) + varint(10556))
            + field_bytes(7, b"job-1") + field_varint(8, 1))
    write("wire", "hello_response", frames(header(HELLO, token=b"", response=True,
                                                  extra=field_bytes(13, info))))
    write("wire", "hello_request", frames(header(HELLO)))
    init = (field_bytes(1, b"node/emb") + field_varint(2, FLOAT32) + field_bytes(3, varint(2708) + varint(16))
            + field_varint(4, 0) + field_varint(5, 1) + field_double(6, -0.1) + field_double(7, 0.1)
            + field_varint(8, 3))
    write("wire", "init_data_request", frames(header(INIT_DATA, extra=field_bytes(14, init))))
    barrier = field_varint(1, 2) + field_varint(2, 4) + field_varint(3, 17)
    write("wire", "barrier_request", frames(header(BARRIER, extra=field_bytes(16, barrier))))
    opt = field_varint(1, 2) + field_double(2, 0.01) + field_double(3, 1e-8) + field_double(4, 0.9)
    write("wire", "sparse_update_request", frames(
        header(SPARSE_UPDATE, [(INT64, [2]), (FLOAT32, [2, 1])],
               extra=field_bytes(11, b"emb") + field_bytes(19, opt)),
        struct.pack("<2q", 1, 2), struct.pack("<2f", 0.5, -0.5)))
    write("wire", "error_response", frames(header(
        FIND_EDGES, token=b"", response=True,
        extra=field_varint(8, 5) + field_bytes(9, b"no such array 'node/x'"))))
    write("wire", "wrong_token", frames(header(LIST_DATA, token=b"guess")))
    write("wire", "bool_array", frames(header(PULL, [(BOOL, [4])]), bytes([1, 0, 1, 1])))


# --- partition config -------------------------------------------------------
def partition_seeds():
    two = {
        "graph_name": "cora", "num_nodes": 2708, "num_edges": 10556, "part_method": "metis",
        "num_parts": 2, "halo_hops": 1,
        "node_map": {"_N": [[0, 1354], [1354, 2708]]},
        "edge_map": {"_N:_E:_N": [[0, 5230], [5230, 10556]]},
        "ntypes": {"_N": 0}, "etypes": {"_N:_E:_N": 0},
        "node_map_dtype": "int64", "edge_map_dtype": "int64",
        "part-0": {"part_graph": "part0/graph", "node_feats": "part0/node_feat",
                   "edge_feats": "part0/edge_feat"},
        "part-1": {"part_graph": "part1/graph", "node_feats": "part1/node_feat",
                   "edge_feats": "part1/edge_feat"},
        "tessera": {"format_version": 1, "num_trainers_per_machine": 2,
                    "node_feats": ["feat", "label", "train_mask"], "edge_feats": [],
                    "balance_ntypes": "train_mask", "balance_edges": True, "seed": 42},
    }
    write("partition_config", "tessera_two_parts.json", json.dumps(two, indent=2) + "\n")
    dgl = {  # As DGL's partition_graph writes it (no "tessera" object).
        "graph_name": "ogbn-arxiv", "num_nodes": 169343, "num_edges": 1166243,
        "part_method": "metis", "num_parts": 4, "halo_hops": 1,
        "node_map": {"_N": [[0, 42000], [42000, 84500], [84500, 127000], [127000, 169343]]},
        "edge_map": {"_N:_E:_N": [[0, 290000], [290000, 580000], [580000, 880000],
                                  [880000, 1166243]]},
        "ntypes": {"_N": 0}, "etypes": {"_N:_E:_N": 0},
    }
    for p in range(4):
        dgl["part-%d" % p] = {"node_feats": "part%d/node_feat.dgl" % p,
                              "edge_feats": "part%d/edge_feat.dgl" % p,
                              "part_graph": "part%d/graph.dgl" % p}
    write("partition_config", "dgl_four_parts.json", json.dumps(dgl, indent=4))
    legacy = {  # Old DGL: node_map/edge_map as lists of range ends.
        "graph_name": "g", "num_nodes": 10, "num_edges": 20, "part_method": "random",
        "num_parts": 3, "node_map": [4, 7, 10], "edge_map": [8, 14, 20],
        "part-0": {"part_graph": "p0/g", "node_feats": "p0/n", "edge_feats": "p0/e"},
        "part-1": {"part_graph": "p1/g", "node_feats": "p1/n", "edge_feats": "p1/e"},
        "part-2": {"part_graph": "p2/g", "node_feats": "p2/n", "edge_feats": "p2/e"},
    }
    write("partition_config", "legacy_maps.json", json.dumps(legacy))
    one = {"graph_name": "tiny", "num_nodes": 5, "num_edges": 6, "num_parts": 1,
           "node_map": {"_N": [[0, 5]]}, "edge_map": {"_N:_E:_N": [[0, 6]]},
           "part-0": {"part_graph": "part0/graph", "node_feats": "part0/node_feat",
                      "edge_feats": "part0/edge_feat"},
           "tessera": {"num_trainers_per_machine": 1, "node_feats": ["feat"], "seed": 0}}
    write("partition_config", "one_part.json", json.dumps(one))


# --- ip_config --------------------------------------------------------------
def ip_config_seeds():
    write("ip_config", "two_local", "127.0.0.1 30050\n127.0.0.1 30060\n")
    write("ip_config", "cluster", "# four machines\n10.0.0.1\n10.0.0.2 30050\n\n"
                                  "10.0.0.3   40000\n  10.0.0.4 31000  \n")
    write("ip_config", "single", "192.168.1.20")
    write("ip_config", "crlf", "172.16.0.1 5000\r\n172.16.0.2 5000\r\n")


# --- CSV / OGB --------------------------------------------------------------
SEP = "\n|||\n"  # fuzz/text_readers_fuzz.cc's kSeparator


def text_seeds():
    write("text_readers", "csv_header", "\x00src,dst\n0,1\n1,2\n2,0\n3,1\n")
    write("text_readers", "tsv_weights", "\x00# weighted\n0\t1\t0.5\n1\t2\t1.5\n2\t3\t-2\n")
    write("text_readers", "space_options", "\x0e0 1\n1 1\n1 2\n1 2\n4 0\n")
    write("text_readers", "num_nodes_crlf", "\x10" + "0,5\r\n5,9\r\n9,0\r\n")
    write("text_readers", "gzip_edges", b"\x00" + gzip.compress(b"0 1\n1 2\n2 3\n3 0\n", mtime=0))
    ogb = ["5\n", "0,1\n1,2\n2,3\n3,4\n4,0\n",
           "0.1,0.2\n0.3,0.4\n0.5,0.6\n0.7,0.8\n0.9,1.0\n", "0\n1\nnan\n1\n3.0\n",
           "1.0\n2.0\n3.0\n4.0\n5.0\n", "0\n1\n", "2\n", "3\n4\n"]
    write("text_readers", "ogb_full", "\x01" + SEP.join(ogb))
    minimal = ["3\n", "0,1\n1,2\n", "-", "-", "-", "0\n", "1\n", "2\n"]
    write("text_readers", "ogb_minimal", "\x07" + SEP.join(minimal))
    gz = [s.encode() if s == "-" else gzip.compress(s.encode(), mtime=0) for s in [
        "4\n", "0,1\n2,3\n", "1.5,2\n0,0\n1,1\n2,2\n", "0\n0\n1\n1\n", "-", "3\n", "1\n", "0\n2\n"]]
    write("text_readers", "ogb_gzip", b"\x01" + SEP.encode().join(gz))


if __name__ == "__main__":
    npy_seeds()
    wire_seeds()
    partition_seeds()
    ip_config_seeds()
    text_seeds()
    for target in sorted(os.listdir(ROOT)):
        print(target, len(os.listdir(os.path.join(ROOT, target))), "files")
