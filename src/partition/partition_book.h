// File: src/partition/partition_book.h
//
// Moved to include/tessera/core/partition_book.h: it is part of the installed API (the public
// headers include it). This forwarding header keeps the project's includes as they were.
#include "tessera/core/partition_book.h"  // IWYU pragma: export
