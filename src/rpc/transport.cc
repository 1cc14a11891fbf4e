// File: src/rpc/transport.cc
#include "src/rpc/transport.h"

#include <malloc.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "src/rpc/security.h"
#include "tessera/base/interrupt.h"
#include "tessera/base/resource.h"
#include "zmq.hpp"

namespace tessera::rpc {
namespace {

constexpr size_t kMaxFrames = 64;
constexpr Millis kPollSlice{100};
// Unanswered calls of one CallMany on one socket, at most (see send_more).
constexpr size_t kMaxCallsInFlight = 256;
// Heap freed after a bad peer (e.g. a message of many frames) goes back to
// the system at most this often.
constexpr int64_t kTrimIntervalMs = 1000;
// Free heap kept for reuse (sampling answers reuse their buffers); beyond it
// the heap is trimmed.
constexpr size_t kMaxFreeHeapBytes = size_t{256} << 20;

int64_t NowMillis() {
  return std::chrono::duration_cast<Millis>(Clock::now().time_since_epoch()).count();
}

// Bytes of frames handed to ZeroMQ and not yet released by it (sent to the
// kernel or dropped).
using QueuedBytes = std::shared_ptr<std::atomic<int64_t>>;

// What a zero-copy frame keeps alive until ZeroMQ releases it.
struct FrameHold {
  std::shared_ptr<const void> owner;
  QueuedBytes queued;  // May be null.
  int64_t bytes = 0;
};

void FreeBlobOwner(void* /*data*/, void* hint) {
  auto* hold = static_cast<FrameHold*>(hint);
  if (hold->queued) hold->queued->fetch_sub(hold->bytes);
  delete hold;
}

zmq::message_t ZeroCopyFrame(const Blob& blob, const QueuedBytes& queued = nullptr) {
  if (blob.size == 0) return zmq::message_t();
  auto bytes = static_cast<int64_t>(blob.size);
  auto* hold = new FrameHold{blob.owner, queued, bytes};
  if (queued) queued->fetch_add(bytes);
  return zmq::message_t(const_cast<void*>(blob.data), blob.size, &FreeBlobOwner, hold);
}

// Sends `message` (preceded by `routing_id` on ROUTER sockets). Returns false
// when the socket would block (DEALER with a full queue). Array bytes count
// in `queued` until ZeroMQ releases them.
bool SendMessage(zmq::socket_t& socket, const std::string* routing_id, Message& message,
                 const QueuedBytes& queued = nullptr) {
  std::string head = EncodeHeader(message);
  size_t n = message.arrays.size();
  if (routing_id != nullptr) {
    if (!socket.send(zmq::buffer(*routing_id),
                     zmq::send_flags::sndmore | zmq::send_flags::dontwait))
      return false;
  }
  auto more = [&](bool last) {
    return (last ? zmq::send_flags::none : zmq::send_flags::sndmore) | zmq::send_flags::dontwait;
  };
  if (!socket.send(zmq::message_t(head.data(), head.size()), more(n == 0))) return false;
  for (size_t i = 0; i < n; ++i) {
    // Later frames of a multipart message never block once the first went.
    (void)socket.send(ZeroCopyFrame(message.arrays[i].blob, queued), more(i + 1 == n));
  }
  return true;
}

// Receives one multipart message without blocking; false if none is queued.
// Frames beyond kMaxFrames are drained and make `overflow` true.
bool ReceiveFrames(zmq::socket_t& socket, std::vector<Blob>& frames, bool& overflow) {
  frames.clear();
  overflow = false;
  for (bool first = true;; first = false) {
    auto msg = std::make_shared<zmq::message_t>();
    auto got = socket.recv(*msg, first ? zmq::recv_flags::dontwait : zmq::recv_flags::none);
    if (!got) return false;
    bool more = msg->more();
    if (frames.size() < kMaxFrames) {
      const void* data = msg->data();
      size_t size = msg->size();
      frames.push_back(Blob{data, size, std::move(msg)});
    } else {
      overflow = true;
    }
    if (!more) return true;
  }
}

void ConfigureSocket(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndbuf, 4 << 20);
  socket.set(zmq::sockopt::rcvbuf, 4 << 20);
}

}  // namespace

int DefaultIoThreads() {
  unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores / 2, 1u, 4u));
}

namespace {

int IoThreadsOr(int requested) { return requested > 0 ? requested : DefaultIoThreads(); }

}  // namespace

// ---------------------------------------------------------------- server

struct RpcServer::State {
  explicit State(int io_threads) : context(io_threads) {}
  // Destroyed in reverse: the socket, then the ZAP handler, then the context.
  // Answers' bytes ZeroMQ still holds (clients that do not read them);
  // shared with the frames, which may be released after the State is gone.
  QueuedBytes queued = std::make_shared<std::atomic<int64_t>>(0);
  zmq::context_t context;
  std::unique_ptr<ZapHandler> zap;
  zmq::socket_t socket{context, zmq::socket_type::router};
  struct Client {
    int64_t last_seen_ms = 0;
    bool gone = false;
    int64_t lost_at_ms = -1;  // Until OnClientLostSettled.
  };
  std::map<int, Client> clients;
  int registered = 0;
  // Everything a peer can trigger is logged rate-limited.
  LogLimiter reject_log;
  LogLimiter lost_log;
  bool trim_due = false;
  int64_t last_heap_check_ms = 0;
  int64_t last_client_check_ms = 0;
};

RpcServer::RpcServer(ServerOptions options)
    : options_(std::move(options)),
      state_(std::make_unique<State>(IoThreadsOr(options_.io_threads))) {}

RpcServer::~RpcServer() = default;

StatusOr<std::unique_ptr<RpcServer>> RpcServer::Bind(const ServerOptions& options) {
  if (options.token.empty()) {
    return absl::InvalidArgumentError(fmt::format("{}: no job token", options.name));
  }
  if (options.io_threads < 0 || options.io_threads > kMaxIoThreads) {
    return absl::InvalidArgumentError(fmt::format("{}: {} I/O threads; expected 0..{}",
                                                  options.name, options.io_threads, kMaxIoThreads));
  }
  std::unique_ptr<RpcServer> server(new RpcServer(options));
  JobCredentials credentials{options.token, options.curve_secret_key};
  State& st = *server->state_;
  ASSIGN_OR_RETURN(st.zap, ZapHandler::Start(st.context, credentials, options.name));
  try {
    zmq::socket_t& s = st.socket;
    ConfigureSocket(s);
    RETURN_IF_ERROR(SecureServerSocket(s, credentials));
    s.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
    s.set(zmq::sockopt::handshake_ivl, static_cast<int>(options.handshake_timeout.count()));
    if (options.connection_heartbeat.count() > 0) {
      int ivl = static_cast<int>(options.connection_heartbeat.count());
      s.set(zmq::sockopt::heartbeat_ivl, ivl);
      s.set(zmq::sockopt::heartbeat_timeout, 3 * ivl);
    }
    std::string port = options.port == 0 ? "*" : std::to_string(options.port);
    s.bind(fmt::format("tcp://{}:{}", options.host, port));
    std::string endpoint = s.get(zmq::sockopt::last_endpoint);
    server->port_ = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(fmt::format("{}: cannot listen on {}:{}: {}", options.name,
                                              options.host, options.port, e.what()));
  }
  return server;
}

uint64_t RpcServer::connections_refused() const { return state_->zap ? state_->zap->refused() : 0; }

void RpcServer::Reply(const Peer& peer, Message response) {
  int64_t bytes = 0;
  for (const WireArray& a : response.arrays) bytes += static_cast<int64_t>(a.blob.size);
  int64_t queued = state_->queued->load();
  if (bytes > 0 && queued + bytes > options_.max_queued_reply_bytes) {
    // Clients that send requests and never read the answers must not make
    // the server hold them all.
    response = MakeResponse(
        response.header,
        absl::ResourceExhaustedError(fmt::format(
            "{}: {} of answers are waiting for their clients to take them; this {} answer would "
            "pass the limit of {}",
            options_.name, FormatBytes(queued), FormatBytes(bytes),
            FormatBytes(options_.max_queued_reply_bytes))));
    state_->reject_log.Warn(std::string(response.header.status_message()));
  }
  response.header.set_is_response(true);
  response.header.set_version(kWireVersion);
  Send(peer, response);
}

void RpcServer::Send(const Peer& peer, Message& response) {
  try {
    // ROUTER drops messages for vanished peers or full queues; it never blocks.
    SendMessage(state_->socket, &peer.routing_id, response, state_->queued);
  } catch (const zmq::error_t& e) {
    state_->reject_log.Warn(
        fmt::format("{}: cannot answer client {}: {}", options_.name, peer.client_id, e.what()));
  }
}

void RpcServer::HandleFrames(Service& service, std::vector<Blob>& frames) {
  Peer peer{std::string(static_cast<const char*>(frames[0].data), frames[0].size), -1};
  std::vector<Blob> body(std::make_move_iterator(frames.begin() + 1),
                         std::make_move_iterator(frames.end()));
  StatusOr<Message> parsed = body.empty() ? absl::InvalidArgumentError("no header frame")
                                          : ParseMessage(body, options_.token);
  if (parsed.ok() && !parsed->header.is_response()) {
    // Client ids name trainers: 0..num_clients-1 of the job.
    int id = parsed->header.client_id();
    int limit = options_.expected_clients > 0 ? options_.expected_clients : kMaxClients;
    if (id < 0 || id >= limit) {
      parsed = absl::InvalidArgumentError(
          fmt::format("client id {} is outside 0..{} (the job's trainers)", id, limit - 1));
    }
  }
  if (!parsed.ok()) {
    ++rejected_;
    state_->trim_due = true;
    state_->reject_log.Warn(fmt::format("{}: rejected a message: {}", options_.name,
                                        std::string(parsed.status().message())));
    wire::Header best_effort;
    bool parsed_header = !body.empty() && body[0].size <= kMaxHeaderBytes &&
                         best_effort.ParseFromArray(body[0].data, static_cast<int>(body[0].size));
    if (!parsed_header || !ConstantTimeEquals(best_effort.token(), options_.token)) {
      // Not shown the token: the peer learns nothing but the refusal.
      Message refusal = MakeRefusal(best_effort.request_id(), parsed.status());
      Send(peer, refusal);
      return;
    }
    best_effort.set_method(wire::METHOD_UNSPECIFIED);
    Reply(peer, MakeResponse(best_effort, parsed.status()));
    return;
  }
  Message& request = *parsed;
  ++requests_;
  peer.client_id = request.header.client_id();
  std::optional<Message> response;
  try {
    response = Dispatch(service, peer, request);
    if (response &&
        response->header.status_code() == static_cast<int>(absl::StatusCode::kResourceExhausted)) {
      state_->trim_due = true;  // A request too large to answer: its memory goes back.
    }
  } catch (const std::bad_alloc&) {
    state_->trim_due = true;
    response = MakeResponse(request.header, absl::ResourceExhaustedError(fmt::format(
                                                "{}: out of memory answering {}", options_.name,
                                                MethodName(request.header.method()))));
  } catch (const std::exception& e) {
    response = MakeResponse(request.header, absl::InternalError(fmt::format(
                                                "{}: {} failed: {}", options_.name,
                                                MethodName(request.header.method()), e.what())));
  } catch (...) {
    response = MakeResponse(request.header,
                            absl::InternalError(fmt::format("{}: {} failed", options_.name,
                                                            MethodName(request.header.method()))));
  }
  if (response) Reply(peer, std::move(*response));
}

std::optional<Message> RpcServer::Dispatch(Service& service, const Peer& peer, Message& request) {
  auto it = state_->clients.find(peer.client_id);
  if (it != state_->clients.end() && !it->second.gone) it->second.last_seen_ms = NowMillis();
  std::optional<Message> response;
  switch (request.header.method()) {
    case wire::HEARTBEAT:
      response = MakeResponse(request.header, absl::OkStatus());
      break;
    case wire::GOODBYE:
      if (it != state_->clients.end() && !it->second.gone) {
        it->second.gone = true;
        state_->trim_due = true;
        spdlog::debug("{}: client {} said goodbye", options_.name, peer.client_id);
        service.OnClientGone(peer.client_id, /*lost=*/false);
      }
      response = MakeResponse(request.header, absl::OkStatus());
      break;
    case wire::HELLO:
      if (it == state_->clients.end() || it->second.gone) {
        if (it == state_->clients.end()) ++state_->registered;
        state_->clients[peer.client_id] = {NowMillis(), false};
      }
      response = service.Handle(peer, request);
      break;
    default:
      response = service.Handle(peer, request);
  }
  return response;
}

void RpcServer::CheckClients(Service& service) {
  int64_t now = NowMillis();
  // This server was itself stopped or starved that long (SIGSTOP, swap, a
  // paused VM): the heartbeats queued meanwhile are not read yet, and no
  // client is to blame for the silence.
  if (now - state_->last_client_check_ms >
      std::max<int64_t>(options_.heartbeat_timeout.count() / 2, 1000)) {
    for (auto& [id, client] : state_->clients)
      client.last_seen_ms = std::max(client.last_seen_ms, now);
  }
  state_->last_client_check_ms = now;
  for (auto& [id, client] : state_->clients) {
    if (client.lost_at_ms >= 0 && now - client.lost_at_ms >= 3000) {
      client.lost_at_ms = -1;
      int talking = 0;
      for (const auto& [other, c] : state_->clients) {
        talking += !c.gone && now - c.last_seen_ms < 2500;
      }
      service.OnClientLostSettled(id, talking);
    }
    if (client.gone || now - client.last_seen_ms <= options_.heartbeat_timeout.count()) continue;
    client.gone = true;
    state_->trim_due = true;
    state_->lost_log.Warn(
        fmt::format("{}: client {} not heard from for {:.1f} s; treating it as dead", options_.name,
                    id, (now - client.last_seen_ms) / 1000.0));
    client.lost_at_ms = now;
    service.OnClientGone(id, /*lost=*/true);
  }
  state_->reject_log.Flush();
  state_->lost_log.Flush();
  // Once a second at most (this runs every turn of the serving loop): what
  // a bad peer made the server allocate goes back to the system, not only to
  // malloc's free lists; so does free heap beyond what reuse needs, whatever
  // freed it (a keyless peer's handshake buffers are freed by ZeroMQ's
  // thread, unseen here).
  if (now - state_->last_heap_check_ms < kTrimIntervalMs) return;
  state_->last_heap_check_ms = now;
  if (state_->trim_due || mallinfo2().fordblks > kMaxFreeHeapBytes) malloc_trim(0);
  state_->trim_due = false;
}

void RpcServer::FlushLogs() {
  state_->reject_log.Flush(/*now=*/true);
  state_->lost_log.Flush(/*now=*/true);
}

template <typename F>
void RpcServer::Survive(const char* what, F&& f) {
  // Anything but the socket's own errors (handled by Serve) is this one
  // message's problem, never the server's end.
  try {
    f();
  } catch (const zmq::error_t&) {
    throw;
  } catch (const std::exception& e) {
    ++rejected_;
    state_->trim_due = true;
    try {
      state_->reject_log.Warn(fmt::format("{}: {}: {}", options_.name, what, e.what()));
    } catch (...) {
      // No memory even to say so.
    }
  } catch (...) {
    ++rejected_;
    state_->trim_due = true;
  }
}

Status RpcServer::Serve(Service& service, const std::atomic<bool>& stop) {
  Stopwatch since_start;
  State& st = *state_;
  std::vector<Blob> frames;
  while (!stop.load()) {
    try {
      zmq::pollitem_t item{st.socket.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kPollSlice);
      bool overflow = false;
      for (int i = 0; i < 256 && ReceiveFrames(st.socket, frames, overflow); ++i) {
        if (overflow) {
          ++rejected_;
          st.trim_due = true;
          st.reject_log.Warn(fmt::format("{}: dropped a message of more than {} frames",
                                         options_.name, kMaxFrames));
          continue;
        }
        if (frames.size() >= 1) {
          Survive("answering a message", [&] { HandleFrames(service, frames); });
        }
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) {
        FlushLogs();
        return absl::InternalError(fmt::format("{}: socket error: {}", options_.name, e.what()));
      }
    }
    Survive("checking clients", [&] { CheckClients(service); });
    bool any_active = false;
    for (const auto& [id, client] : st.clients) any_active |= !client.gone;
    if (st.registered > 0 && !any_active &&
        (options_.expected_clients == 0 || st.registered >= options_.expected_clients)) {
      FlushLogs();
      spdlog::info("{}: all {} clients left; {} requests served, {} rejected", options_.name,
                   st.registered, requests_.load(), rejected_.load());
      return absl::OkStatus();
    }
    if (st.registered == 0 && since_start.Seconds() * 1000 > options_.startup_timeout.count()) {
      FlushLogs();
      return absl::DeadlineExceededError(fmt::format("{}: no client connected within {:.0f} s",
                                                     options_.name,
                                                     options_.startup_timeout.count() / 1000.0));
    }
  }
  FlushLogs();
  spdlog::info("{}: stopping; {} requests served, {} rejected", options_.name, requests_.load(),
               rejected_.load());
  return absl::OkStatus();
}

// ---------------------------------------------------------------- client

// Connections to every server: server s's streams are sockets
// [s * streams, (s + 1) * streams), each connected on first use.
struct RpcClient::SocketSet {
  std::vector<std::unique_ptr<zmq::socket_t>> sockets;
};

struct RpcClient::Shared {
  explicit Shared(int io_threads) : context(io_threads) {}
  zmq::context_t context;
  std::mutex mutex;
  std::vector<std::unique_ptr<SocketSet>> free_sets;
  struct ServerHealth {
    std::atomic<bool> contacted{false};
    std::atomic<bool> dead{false};
    std::atomic<int64_t> last_ok_ms{0};
    std::string reason;  // Guarded by mutex.
  };
  std::unique_ptr<ServerHealth[]> health;
  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::thread heartbeat;
};

RpcClient::RpcClient(ClientOptions options) : options_(std::move(options)) {
  options_.io_threads = IoThreadsOr(options_.io_threads);
  if (options_.streams == 0) {
    options_.streams =
        options_.curve_secret_key.empty() ? 1 : std::min(options_.io_threads, kMaxStreams);
  }
  shared_ = std::make_unique<Shared>(options_.io_threads);
}

StatusOr<std::unique_ptr<RpcClient>> RpcClient::Create(const ClientOptions& options) {
  if (options.servers.empty()) return absl::InvalidArgumentError("no servers to connect to");
  if (options.token.empty()) return absl::InvalidArgumentError("no job token");
  if (!options.curve_secret_key.empty()) {
    RETURN_IF_ERROR(ValidateCurveSecretKey(options.curve_secret_key, "the job key"));
  }
  if (options.io_threads < 0 || options.io_threads > kMaxIoThreads || options.streams < 0 ||
      options.streams > kMaxStreams) {
    return absl::InvalidArgumentError(
        fmt::format("{} I/O threads and {} streams per server; expected 0..{} and 0..{}",
                    options.io_threads, options.streams, kMaxIoThreads, kMaxStreams));
  }
  std::unique_ptr<RpcClient> client(new RpcClient(options));
  {
    // A socket that cannot be secured fails here, clearly, not in a call.
    zmq::socket_t probe(client->shared_->context, zmq::socket_type::dealer);
    probe.set(zmq::sockopt::linger, 0);
    RETURN_IF_ERROR(SecureClientSocket(probe, {options.token, options.curve_secret_key}));
  }
  client->shared_->health = std::make_unique<Shared::ServerHealth[]>(options.servers.size());
  if (options.heartbeat_timeout.count() > 0) {
    client->shared_->heartbeat = std::thread([c = client.get()] { c->HeartbeatLoop(); });
  }
  return client;
}

RpcClient::~RpcClient() {
  {
    std::lock_guard<std::mutex> lock(shared_->stop_mutex);
    shared_->stopping = true;
  }
  shared_->stop_cv.notify_all();
  if (shared_->heartbeat.joinable()) shared_->heartbeat.join();
  shared_->free_sets.clear();  // Sockets close before the context.
}

std::unique_ptr<RpcClient::SocketSet> RpcClient::Lease() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (!shared_->free_sets.empty()) {
      auto set = std::move(shared_->free_sets.back());
      shared_->free_sets.pop_back();
      return set;
    }
  }
  auto set = std::make_unique<SocketSet>();
  set->sockets.resize(options_.servers.size() * options_.streams);
  return set;
}

void RpcClient::Return(std::unique_ptr<SocketSet> set) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->free_sets.push_back(std::move(set));
}

std::string RpcClient::Describe(int server) const {
  return fmt::format("server {} ({})", server, options_.servers[server]);
}

Status RpcClient::ServerStatus(int server) const {
  if (server < 0 || server >= num_servers()) {
    return absl::InvalidArgumentError(fmt::format("no server {}", server));
  }
  if (!shared_->health[server].dead.load()) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return absl::UnavailableError(shared_->health[server].reason);
}

namespace {

// sockets[index], a connection to `server` made on first use.
zmq::socket_t& SocketFor(zmq::context_t& context,
                         std::vector<std::unique_ptr<zmq::socket_t>>& sockets, size_t index,
                         int server, const ClientOptions& options) {
  if (!sockets[index]) {
    auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
    ConfigureSocket(*socket);
    Status secured =
        SecureClientSocket(*socket, JobCredentials{options.token, options.curve_secret_key});
    // The key was checked in Create(): only ZeroMQ itself can fail here,
    // and zmq::error_t reports its errno.
    if (!secured.ok()) throw zmq::error_t();
    socket->connect(options.servers[server]);
    sockets[index] = std::move(socket);
  }
  return *sockets[index];
}

// zmq::poll, except that a signal arriving meanwhile (EINTR) counts as a
// timeout: the caller's loop then checks its deadline and CheckInterrupt().
void PollOrSignal(zmq::pollitem_t* items, size_t count, Millis timeout) {
  try {
    zmq::poll(items, count, timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
  }
}

}  // namespace

StatusOr<std::vector<Message>> RpcClient::CallMany(std::vector<Call> calls, Deadline deadline,
                                                   const std::function<void()>& between,
                                                   const OnResponse& on_response) {
  std::unique_ptr<SocketSet> set = Lease();
  struct Pending {
    int server;
    size_t socket;  // Index into set->sockets, once sent.
    wire::Method method;
  };
  std::vector<Pending> pending(calls.size());
  // Per server, its calls not sent yet, in call order.
  std::vector<std::deque<size_t>> unsent(options_.servers.size());
  std::vector<size_t> in_flight(set->sockets.size(), 0);
  // Sent and unanswered calls by (socket, request id).
  std::map<std::pair<size_t, uint64_t>, size_t> waiting;
  std::vector<std::optional<Message>> responses(calls.size());
  auto finish = [&](Status status) -> StatusOr<std::vector<Message>> {
    Return(std::move(set));
    if (!status.ok()) return status;
    std::vector<Message> out;
    if (on_response) return out;
    out.reserve(responses.size());
    for (auto& r : responses) out.push_back(std::move(*r));
    return out;
  };
  for (size_t c = 0; c < calls.size(); ++c) {
    if (Status s = ServerStatus(calls[c].server); !s.ok()) return finish(s);
    pending[c] = {calls[c].server, 0, calls[c].request.header.method()};
    unsent[calls[c].server].push_back(c);
  }
  // Sends each server's calls, in order, on its least busy stream while that
  // has fewer than kMaxCallsInFlight unanswered: past ZeroMQ's high-water
  // marks (1000 messages a side) a server's ROUTER socket drops answers
  // without a word, and a call of thousands of pieces waited for them until
  // its deadline. A server whose streams are full waits; the others do not.
  auto send_more = [&]() -> Status {
    for (size_t server = 0; server < unsent.size(); ++server) {
      std::deque<size_t>& queue = unsent[server];
      while (!queue.empty()) {
        size_t index = server * options_.streams;
        for (size_t k = index + 1; k < (server + 1) * options_.streams; ++k) {
          if (in_flight[k] < in_flight[index]) index = k;
        }
        if (in_flight[index] >= kMaxCallsInFlight) break;
        RETURN_IF_ERROR(ServerStatus(static_cast<int>(server)));
        const size_t c = queue.front();
        wire::Header& h = calls[c].request.header;
        h.set_token(options_.token);
        h.set_client_id(options_.client_id);
        h.set_timeout_ms(static_cast<uint32_t>(deadline.RemainingMillis()));
        zmq::socket_t& s =
            SocketFor(shared_->context, set->sockets, index, static_cast<int>(server), options_);
        while (!SendMessage(s, nullptr, calls[c].request)) {
          if (deadline.Expired()) {
            return absl::DeadlineExceededError(
                fmt::format("{}: cannot send {} (queue full or server unreachable)",
                            Describe(static_cast<int>(server)), MethodName(h.method())));
          }
          RETURN_IF_ERROR(CheckInterrupt());
          zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLOUT, 0};
          PollOrSignal(&item, 1, std::min(kPollSlice, Millis(deadline.RemainingMillis())));
        }
        queue.pop_front();
        waiting[{index, h.request_id()}] = c;
        pending[c].socket = index;
        ++in_flight[index];
      }
    }
    return absl::OkStatus();
  };
  try {
    if (Status s = send_more(); !s.ok()) return finish(s);
    if (between) between();
    size_t remaining = calls.size();
    std::vector<zmq::pollitem_t> items;
    std::vector<size_t> item_socket;
    std::vector<Blob> frames;
    while (remaining > 0) {
      if (Status s = send_more(); !s.ok()) return finish(s);
      items.clear();
      item_socket.clear();
      for (size_t socket = 0; socket < in_flight.size(); ++socket) {
        if (in_flight[socket] == 0) continue;
        const int server = static_cast<int>(socket / options_.streams);
        if (Status s = ServerStatus(server); !s.ok()) {
          return finish(Annotate(s, fmt::format("{} failed", MethodName(pending[0].method))));
        }
        items.push_back({set->sockets[socket]->handle(), 0, ZMQ_POLLIN, 0});
        item_socket.push_back(socket);
      }
      if (deadline.Expired()) {
        // Each server once, with the number of its calls not answered.
        std::map<int, size_t> late;
        for (const auto& [key, i] : waiting) ++late[pending[i].server];
        for (size_t server = 0; server < unsent.size(); ++server) {
          if (!unsent[server].empty()) late[static_cast<int>(server)] += unsent[server].size();
        }
        std::vector<std::string> named;
        bool never = false;
        const std::string_view method = MethodName(calls[0].request.header.method());
        for (const auto& [server, count] : late) {
          named.push_back(fmt::format("{} did not answer {} in time ({} request{})",
                                      Describe(server), method, count, count == 1 ? "" : "s"));
          never |= !shared_->health[server].contacted.load();
        }
        return finish(absl::DeadlineExceededError(fmt::format(
            "{}{}", fmt::join(named, "; "),
            never ? " (never answered this process: is it running, and do both sides use the "
                    "same job key and encryption setting?)"
                  : "")));
      }
      if (Status s = CheckInterrupt(); !s.ok()) {
        return finish(Annotate(
            s, fmt::format("waiting for {}", MethodName(calls[0].request.header.method()))));
      }
      PollOrSignal(items.data(), items.size(),
                   std::min(kPollSlice, Millis(std::max(1, deadline.RemainingMillis()))));
      for (size_t k = 0; k < items.size(); ++k) {
        if (!(items[k].revents & ZMQ_POLLIN)) continue;
        size_t socket = item_socket[k];
        int server = static_cast<int>(socket / options_.streams);
        bool overflow = false;
        while (ReceiveFrames(*set->sockets[socket], frames, overflow)) {
          if (overflow) continue;
          StatusOr<Message> parsed = ParseMessage(std::move(frames), "");
          frames.clear();
          if (!parsed.ok()) {
            return finish(
                Annotate(parsed.status(), fmt::format("bad response from {}", Describe(server))));
          }
          auto it = waiting.find({socket, parsed->header.request_id()});
          if (it == waiting.end()) continue;  // An answer to an earlier, abandoned call.
          const size_t i = it->second;
          waiting.erase(it);
          --in_flight[socket];
          shared_->health[server].contacted.store(true);
          shared_->health[server].last_ok_ms.store(NowMillis());
          if (Status s = ResponseStatus(parsed->header); !s.ok()) {
            return finish(Annotate(
                s, fmt::format("{} on {}", MethodName(pending[i].method), Describe(server))));
          }
          --remaining;
          if (on_response) {
            if (Status s = on_response(i, *parsed); !s.ok()) return finish(s);
          } else {
            responses[i] = std::move(*parsed);
          }
        }
      }
    }
  } catch (const zmq::error_t& e) {
    return finish(absl::InternalError(fmt::format("ZeroMQ error: {}", e.what())));
  }
  return finish(absl::OkStatus());
}

StatusOr<Message> RpcClient::CallOne(int server, Message request, Deadline deadline) {
  std::vector<Call> calls;
  calls.push_back({server, std::move(request)});
  ASSIGN_OR_RETURN(std::vector<Message> responses, CallMany(std::move(calls), deadline));
  return std::move(responses[0]);
}

void RpcClient::HeartbeatLoop() {
  std::vector<std::unique_ptr<zmq::socket_t>> sockets(options_.servers.size());
  std::vector<Blob> frames;
  int64_t next_beat = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(shared_->stop_mutex);
      if (shared_->stop_cv.wait_for(lock, kPollSlice, [&] { return shared_->stopping; })) break;
    }
    try {
      int64_t now = NowMillis();
      for (int s = 0; s < num_servers(); ++s) {
        Shared::ServerHealth& h = shared_->health[s];
        if (!h.contacted.load() || h.dead.load()) continue;
        zmq::socket_t& socket = SocketFor(shared_->context, sockets, s, s, options_);
        bool overflow = false;
        while (ReceiveFrames(socket, frames, overflow)) {
          StatusOr<Message> parsed = ParseMessage(std::move(frames), "");
          frames.clear();
          if (parsed.ok() && parsed->header.method() == wire::HEARTBEAT) h.last_ok_ms.store(now);
        }
        int64_t silent = now - h.last_ok_ms.load();
        if (silent > options_.heartbeat_timeout.count()) {
          std::lock_guard<std::mutex> lock(shared_->mutex);
          h.reason =
              fmt::format("{} has not answered heartbeats for {:.1f} s; it is considered dead",
                          Describe(s), silent / 1000.0);
          h.dead.store(true);
          spdlog::warn("{}", h.reason);
          continue;
        }
        if (now >= next_beat) {
          Message beat = MakeRequest(wire::HEARTBEAT);
          beat.header.set_token(options_.token);
          beat.header.set_client_id(options_.client_id);
          (void)SendMessage(socket, nullptr, beat);  // A full queue: next beat.
        }
      }
      if (now >= next_beat) next_beat = now + options_.heartbeat_interval.count();
    } catch (const zmq::error_t& e) {
      spdlog::warn("heartbeat thread: ZeroMQ error: {}", e.what());
    }
  }
}

StatusOr<std::vector<double>> MeasureLoopbackExchange(size_t response_bytes, int rounds) {
  std::vector<double> seconds;
  try {
    zmq::context_t context(1);
    zmq::socket_t router(context, zmq::socket_type::router);
    ConfigureSocket(router);
    router.bind("tcp://127.0.0.1:*");
    std::string endpoint = router.get(zmq::sockopt::last_endpoint);
    auto payload = std::make_shared<std::vector<uint64_t>>((response_bytes + 7) / 8, 1);
    Blob blob{payload->data(), response_bytes, payload};
    std::thread responder([&] {
      try {
        for (int i = 0; i <= rounds; ++i) {
          zmq::message_t id, request;
          if (!router.recv(id) || !router.recv(request)) return;
          router.send(id, zmq::send_flags::sndmore);
          router.send(ZeroCopyFrame(blob), zmq::send_flags::none);
        }
      } catch (const zmq::error_t&) {
        // Context shut down by the caller after a failure.
      }
    });
    zmq::socket_t dealer(context, zmq::socket_type::dealer);
    ConfigureSocket(dealer);
    dealer.set(zmq::sockopt::rcvtimeo, 60000);
    dealer.connect(endpoint);
    for (int i = 0; i <= rounds; ++i) {
      Stopwatch watch;
      dealer.send(zmq::buffer("x", 1), zmq::send_flags::none);
      zmq::message_t reply;
      if (!dealer.recv(reply) || reply.size() != response_bytes) {
        context.shutdown();  // Unblocks the responder.
        responder.join();
        return absl::InternalError("loopback exchange: no or short reply");
      }
      if (i > 0) seconds.push_back(watch.Seconds());
    }
    responder.join();
  } catch (const zmq::error_t& e) {
    return absl::InternalError(fmt::format("loopback exchange: {}", e.what()));
  }
  return seconds;
}

}  // namespace tessera::rpc
