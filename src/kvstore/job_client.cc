// File: src/kvstore/job_client.cc
#include "src/kvstore/job_client.h"

#include <algorithm>
#include <limits>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "tessera/base/resource.h"
#include "tessera/base/strings.h"

namespace tessera::kvstore {

using rpc::Message;

namespace {

// The book a server describes in HELLO: its type layout (or, from a server
// without one, the homogeneous offsets), checked against the offsets.
StatusOr<PartitionBook> BookOf(const wire::ServerInfo& info, int part) {
  std::vector<int64_t> nodes(info.node_offsets().begin(), info.node_offsets().end());
  std::vector<int64_t> edges(info.edge_offsets().begin(), info.edge_offsets().end());
  if (info.ntypes().empty()) return PartitionBook::Create(nodes, edges, part);
  TypeLayout layout;
  layout.ntypes.assign(info.ntypes().begin(), info.ntypes().end());
  for (const std::string& e : info.etypes()) {
    ASSIGN_OR_RETURN(EdgeType parsed, ParseEdgeType(e));
    layout.etypes.push_back(std::move(parsed));
  }
  for (const std::string& t : layout.ntypes) RETURN_IF_ERROR(CheckTypeName(t, "node type"));
  layout.node_counts.assign(info.node_type_counts().begin(), info.node_type_counts().end());
  layout.edge_counts.assign(info.edge_type_counts().begin(), info.edge_type_counts().end());
  ASSIGN_OR_RETURN(PartitionBook book, PartitionBook::CreateTyped(std::move(layout), part));
  if (book.node_offsets() != nodes || book.edge_offsets() != edges) {
    return absl::DataLossError("type counts disagree with the partition offsets");
  }
  return book;
}

}  // namespace

StatusOr<std::shared_ptr<JobClient>> JobClient::Connect(const KvClientOptions& options) {
  int S = options.servers_per_machine;
  if (S < 1 || options.servers.empty() || options.servers.size() % S != 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{} server endpoints cannot be {} servers per machine", options.servers.size(), S));
  }
  std::shared_ptr<JobClient> client(new JobClient(options));
  rpc::ClientOptions rpc_options{.token = options.token,
                                 .curve_secret_key = options.curve_secret_key,
                                 .client_id = options.client_id,
                                 .servers = options.servers,
                                 .heartbeat_interval = options.heartbeat_interval,
                                 .heartbeat_timeout = options.heartbeat_timeout,
                                 .streams = options.streams};
  ASSIGN_OR_RETURN(client->rpc_, rpc::RpcClient::Create(rpc_options));
  // Main servers first: backups can only answer once their main server has
  // published the partition.
  int64_t frame_limit = std::numeric_limits<int64_t>::max();
  Deadline deadline = Deadline::In(options.connect_timeout);
  int num_machines = static_cast<int>(options.servers.size()) / S;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<rpc::Call> calls;
    for (int server = 0; server < static_cast<int>(options.servers.size()); ++server) {
      if ((server % S == 0) != (pass == 0)) continue;
      calls.push_back({server, rpc::MakeRequest(wire::HELLO)});
    }
    if (calls.empty()) continue;
    std::vector<int> targets;
    for (const auto& c : calls) targets.push_back(c.server);
    ASSIGN_OR_RETURN(std::vector<Message> responses,
                     client->rpc_->CallMany(std::move(calls), deadline));
    for (size_t i = 0; i < responses.size(); ++i) {
      const wire::ServerInfo& info = responses[i].header.server_info();
      int expected_id = targets[i];
      if (info.server_id() != expected_id || info.servers_per_machine() != S ||
          info.job_id() != options.job_id || info.node_offsets_size() != num_machines + 1) {
        return absl::FailedPreconditionError(fmt::format(
            "{} is server {} of job '{}' ({} servers per machine, {} partitions); expected "
            "server {} of job '{}' ({} per machine, {} machines): check ip_config and "
            "--num-servers",
            client->rpc_->endpoint(expected_id), info.server_id(), info.job_id(),
            info.servers_per_machine(), info.node_offsets_size() - 1, expected_id, options.job_id,
            S, num_machines));
      }
      if (info.max_message_bytes() > 0) {
        frame_limit = std::min(frame_limit, info.max_message_bytes());
      }
      if (pass == 0 && i == 0) {
        client->graph_name_ = info.graph_name();
        client->halo_hops_ = info.halo_hops();
        int part =
            options.machine_id >= 0 && options.machine_id < num_machines ? options.machine_id : 0;
        StatusOr<PartitionBook> book = BookOf(info, part);
        if (!book.ok()) {
          return absl::DataLossError(fmt::format("{} sent a bad partition book: {}",
                                                 client->rpc_->endpoint(expected_id),
                                                 std::string(book.status().message())));
        }
        client->book_ = std::move(*book);
      }
    }
  }
  if (frame_limit != std::numeric_limits<int64_t>::max()) client->max_frame_bytes_ = frame_limit;
  if (options.machine_id >= 0 && options.machine_id < num_machines) {
    StatusOr<shm::Catalog> catalog = shm::Catalog::Open(options.job_id, options.machine_id);
    if (catalog.ok()) {
      client->local_ = std::make_unique<ShardMap>(std::move(*catalog));
    } else {
      spdlog::debug("client {}: no local shared memory for machine {} ({}); all access is remote",
                    options.client_id, options.machine_id, std::string(catalog.status().message()));
    }
  }
  client->connected_ = true;
  return client;
}

JobClient::~JobClient() {
  // A failed Connect() says no goodbyes (servers that answered it notice the
  // silence); waiting on unreachable servers would only delay the error.
  if (rpc_ && connected_) {
    try {
      Status s = Close();
      if (!s.ok())
        spdlog::warn("client {}: goodbye: {}", options_.client_id, std::string(s.message()));
    } catch (const std::exception& e) {  // Nothing leaves a destructor.
      spdlog::warn("client {}: goodbye: {}", options_.client_id, e.what());
    }
  }
}

Status JobClient::CheckFrameFits(size_t bytes, const std::string& what) const {
  // A little room for CURVE's framing.
  if (static_cast<int64_t>(bytes) + 64 <= max_frame_bytes_) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "{} is {} in one message, more than the servers accept ({}): raise tessera server "
      "--max-message-bytes",
      what, FormatBytes(static_cast<int64_t>(bytes)), FormatBytes(max_frame_bytes_)));
}

int JobClient::PickServer(int machine) {
  int S = options_.servers_per_machine;
  return machine * S + static_cast<int>(round_robin_.fetch_add(1) % S);
}

Status JobClient::Health() const {
  for (int s = 0; s < rpc_->num_servers(); ++s) RETURN_IF_ERROR(rpc_->ServerStatus(s));
  return absl::OkStatus();
}

StatusOr<int64_t> JobClient::BarrierMax(int64_t value) {
  RETURN_IF_ERROR(Health());
  Message request = rpc::MakeRequest(wire::BARRIER);
  request.header.mutable_barrier()->set_num_clients(options_.num_clients);
  request.header.mutable_barrier()->set_value(value);
  ASSIGN_OR_RETURN(Message response,
                   rpc_->CallOne(0, std::move(request), Deadline::In(options_.barrier_timeout)));
  return response.header.barrier().value();
}

Status JobClient::Close() {
  if (closed_.exchange(true)) return absl::OkStatus();
  std::vector<rpc::Call> calls;
  for (int s = 0; s < rpc_->num_servers(); ++s) {
    if (!rpc_->ServerStatus(s).ok()) continue;  // Dead servers need no goodbye.
    calls.push_back({s, rpc::MakeRequest(wire::GOODBYE)});
  }
  if (calls.empty()) return absl::OkStatus();
  // The client's work is done: a goodbye that is late (a loaded server) or
  // fails (a stopped one) is worth a warning, never the program's error; a
  // server also notices a client that left by its missing heartbeats.
  Status said = rpc_->CallMany(std::move(calls), Deadline::InSeconds(5)).status();
  if (!said.ok()) {
    spdlog::warn("client {}: goodbye not confirmed ({}); closing anyway", options_.client_id,
                 std::string(said.message()));
  }
  return absl::OkStatus();
}

}  // namespace tessera::kvstore
