"""``dgl.data``'s place: DGL's dataset downloaders are not part of tessera
(its machines may have no internet). Read a graph from files instead: a
folder in the OGB or npy layout (``tessera partition --input``,
``tessera.partition_graph(folder, ...)``), or build it with
``tessera.graph`` / ``tessera.heterograph``."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    # Not an AttributeError: `from tessera.data import X` would replace its message.
    from tessera import _C
    raise _C.TesseraError(f"tessera.data.{name}: DGL's dataset downloaders (dgl.data) are not "
                          f"part of tessera; read the graph from a folder in the OGB or npy "
                          f"layout (tessera.partition_graph(folder, ...)) or build it with "
                          f"tessera.graph / tessera.heterograph (docs/python.md)")
