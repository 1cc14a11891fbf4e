// File: src/partition/partition.h
//
// Moved to include/tessera/core/partition_graph.h: it is part of the installed API (the public
// headers include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/partition_graph.h"  // IWYU pragma: export
