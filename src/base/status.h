// File: src/base/status.h
//
// Moved to include/tessera/core/status.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/status.h"  // IWYU pragma: export
