// File: src/graph/readers.h
//
// Moved to include/tessera/core/readers.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/readers.h"  // IWYU pragma: export
