"""A graph where papers share labels with their authors, built with
tessera.heterograph and partitioned with partition_graph (1 part): 1,500
authors and 4,000 papers in 5 classes; each paper has 3 authors, each of
its own class with probability 0.8 (else any author). Papers have labels
and 30/10/60 % train/val/test masks and, with ``with_feat``, 8 features of
pure noise; authors have nothing. Returns the partition config."""
import torch

import tessera


def partition_authors_graph(out, with_feat, seed=0):
    gen = torch.Generator().manual_seed(seed)
    num_authors, num_papers, classes, per_paper = 1500, 4000, 5, 3
    author_cls = torch.randint(0, classes, (num_authors,), generator=gen)
    paper_cls = torch.randint(0, classes, (num_papers,), generator=gen)
    pools = [torch.nonzero(author_cls == c).reshape(-1) for c in range(classes)]
    src = []
    for _ in range(per_paper):
        same = torch.empty(num_papers, dtype=torch.int64)
        for c in range(classes):
            m = paper_cls == c
            same[m] = pools[c][torch.randint(0, len(pools[c]), (int(m.sum()),), generator=gen)]
        anyone = torch.randint(0, num_authors, (num_papers,), generator=gen)
        src.append(torch.where(torch.rand(num_papers, generator=gen) < 0.8, same, anyone))
    s, d = torch.cat(src), torch.arange(num_papers).repeat(per_paper)
    g = tessera.heterograph({("author", "writes", "paper"): (s, d),
                             ("paper", "rev-writes", "author"): (d, s)},
                            num_nodes_dict={"author": num_authors, "paper": num_papers})
    r = torch.rand(num_papers, generator=gen)
    paper = g.nodes["paper"].data
    paper["label"] = paper_cls
    paper["train_mask"], paper["val_mask"], paper["test_mask"] = r < 0.3, (r >= 0.3) & (
        r < 0.4), r >= 0.4
    if with_feat:
        paper["feat"] = torch.randn(num_papers, 8, generator=gen)
    tessera.partition_graph(g, "authors", 1, str(out))
    return str(out / "authors.json")
