// File: src/graph/array.h
//
// Moved to include/tessera/core/array.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/array.h"  // IWYU pragma: export
