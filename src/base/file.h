// File: src/base/file.h
//
// Moved to include/tessera/core/file.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/file.h"  // IWYU pragma: export
