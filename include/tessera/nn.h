// File: include/tessera/nn.h
//
// The layers (dgl.nn: SAGEConv, RelGraphConv and the models built of them,
// tessera/nn/conv.h) and the CSR kernels they run on (tessera/nn/aggregate.h).
#ifndef TESSERA_INCLUDE_TESSERA_NN_H_
#define TESSERA_INCLUDE_TESSERA_NN_H_

#include "tessera/nn/aggregate.h"  // IWYU pragma: export
#include "tessera/nn/conv.h"       // IWYU pragma: export

#endif  // TESSERA_INCLUDE_TESSERA_NN_H_
