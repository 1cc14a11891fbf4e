// File: src/loader/epoch.h
//
// Moved to include/tessera/core/epoch.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/epoch.h"  // IWYU pragma: export
