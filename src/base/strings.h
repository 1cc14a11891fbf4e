// File: src/base/strings.h
//
// Moved to include/tessera/core/strings.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/strings.h"  // IWYU pragma: export
