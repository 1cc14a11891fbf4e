// File: src/partition/partition_config.h
//
// Moved to include/tessera/core/partition_config.h: it is part of the installed API (the public
// headers include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/partition_config.h"  // IWYU pragma: export
