// File: src/dist_partition/comm_checks.h
//
// Checks of a Comm's collectives that run on every rank of any
// implementation: the thread ranks of comm_test.cc and the MPI ranks of
// mpi_comm_test.cc run the same code. Each returns a non-OK Status naming
// what was wrong on this rank.
#ifndef TESSERA_SRC_DIST_PARTITION_COMM_CHECKS_H_
#define TESSERA_SRC_DIST_PARTITION_COMM_CHECKS_H_

#include <numeric>

#include "src/dist_partition/comm.h"
#include "tessera/base/strings.h"

namespace tessera::dist_partition::testing {

// Rank r sends rank d (r + 1) * (d + 1) * scale values v = r * 1e9 + d * 1e6 +
// i: uneven sizes, empty ones when scale is 0, and values that tell where
// each came from.
inline Status CheckExchange(Comm& comm, int64_t scale) {
  const int p = comm.size(), r = comm.rank();
  std::vector<int64_t> send, counts(p);
  for (int d = 0; d < p; ++d) {
    counts[d] = (r + 1) * (d + 1) * scale;
    for (int64_t i = 0; i < counts[d]; ++i) send.push_back(r * 1000000000LL + d * 1000000LL + i);
  }
  ASSIGN_OR_RETURN(Received<int64_t> got, Exchange<int64_t>(comm, send, counts));
  size_t at = 0;
  for (int s = 0; s < p; ++s) {
    if (got.counts[s] != (s + 1) * (r + 1) * scale) {
      return absl::InternalError(StrCat("from rank ", s, ": ", got.counts[s], " values"));
    }
    for (int64_t i = 0; i < got.counts[s]; ++i, ++at) {
      if (got.data[at] != s * 1000000000LL + r * 1000000LL + i) {
        return absl::InternalError(StrCat("from rank ", s, ": value ", i, " is ", got.data[at]));
      }
    }
  }
  return at == got.data.size() ? absl::OkStatus() : absl::InternalError("extra values");
}

inline Status CheckReductions(Comm& comm) {
  const int p = comm.size(), r = comm.rank();
  ASSIGN_OR_RETURN(int64_t sum, AllSum(comm, r + 1));
  if (sum != int64_t{p} * (p + 1) / 2) return absl::InternalError(StrCat("AllSum ", sum));
  ASSIGN_OR_RETURN(int64_t most, AllMax(comm, (r * 7) % p));
  int64_t expected = 0;
  for (int q = 0; q < p; ++q) expected = std::max<int64_t>(expected, (q * 7) % p);
  if (most != expected) return absl::InternalError(StrCat("AllMax ", most));
  std::vector<int64_t> values = {r, 1, int64_t{1} << 40};
  RETURN_IF_ERROR(AllSum(comm, std::span<int64_t>(values)));
  if (values != std::vector<int64_t>{int64_t{p} * (p - 1) / 2, p, p * (int64_t{1} << 40)}) {
    return absl::InternalError(StrCat("AllSum(span) ", StrJoin(values, ",")));
  }
  std::string text = r == p - 1 ? std::string(100000, 'x') + "end" : "";
  RETURN_IF_ERROR(comm.Broadcast(p - 1, &text));
  if (text.size() != 100003 || text.substr(100000) != "end") {
    return absl::InternalError("Broadcast");
  }
  return absl::OkStatus();
}

// The highest rank fails, then every rank but 0: each time every rank gets
// the lowest failing rank's error.
inline Status CheckAgree(Comm& comm) {
  const int p = comm.size(), r = comm.rank();
  RETURN_IF_ERROR(Agree(comm, absl::OkStatus()));
  Status st =
      Agree(comm, r == p - 1 ? absl::NotFoundError("chunk x.npy missing") : absl::OkStatus());
  if (st.code() != absl::StatusCode::kNotFound ||
      st.message() != StrCat("rank ", p - 1, " of ", p, ": chunk x.npy missing")) {
    return absl::InternalError(StrCat("Agree gave ", st.ToString()));
  }
  st = Agree(comm, r > 0 ? absl::DataLossError(StrCat("bad ", r)) : absl::OkStatus());
  if (p > 1 && st.message() != StrCat("rank 1 of ", p, ": bad 1")) {
    return absl::InternalError(StrCat("Agree gave ", st.ToString()));
  }
  if (p == 1 && !st.ok()) return absl::InternalError("Agree failed with one rank");
  return absl::OkStatus();
}

}  // namespace tessera::dist_partition::testing

#endif  // TESSERA_SRC_DIST_PARTITION_COMM_CHECKS_H_
