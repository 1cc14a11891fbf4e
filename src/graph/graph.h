// File: src/graph/graph.h
//
// Moved to include/tessera/core/graph.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/graph.h"  // IWYU pragma: export
