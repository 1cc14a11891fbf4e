// File: src/base/interrupt.h
//
// Moved to include/tessera/core/interrupt.h: it is part of the installed API (the public headers
// include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/interrupt.h"  // IWYU pragma: export
