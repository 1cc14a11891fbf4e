// File: src/partition/load_partition.h
//
// Moved to include/tessera/core/load_partition.h: it is part of the installed API (the public
// headers include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/load_partition.h"  // IWYU pragma: export
