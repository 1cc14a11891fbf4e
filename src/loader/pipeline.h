// File: src/loader/pipeline.h
//
// Moved to include/tessera/core/pipeline.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/pipeline.h"  // IWYU pragma: export
