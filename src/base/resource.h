// File: src/base/resource.h
//
// Moved to include/tessera/core/resource.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/resource.h"  // IWYU pragma: export
