// File: src/base/time.h
//
// Moved to include/tessera/core/time.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/time.h"  // IWYU pragma: export
