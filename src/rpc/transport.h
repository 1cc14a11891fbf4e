// File: src/rpc/transport.h
//
// The ZeroMQ transport, the only user of libzmq in tessera.
//
// Peers authenticate in the ZeroMQ handshake, before they can send a frame,
// and the wire is encrypted unless turned off (src/rpc/security.h).
//
// RpcServer owns one ROUTER socket, used only by the thread that runs
// Serve(). It validates every message (ParseMessage), answers heartbeats,
// keeps track of its clients (HELLO registers, GOODBYE leaves, silence longer
// than the heartbeat timeout means dead) and hands every other request to a
// Service. Malformed or unauthorised messages get an error response, are
// counted and logged (rate-limited), and serving goes on.
//
// RpcClient connects DEALER sockets to every server. Calls are thread-safe:
// each calling thread leases a private set of sockets for the duration of
// one call, so a socket only ever has one user at a time. A set holds
// `streams` connections to each server, and the calls of one CallMany to a
// server are spread over them: ZeroMQ encrypts and decrypts a connection's
// traffic on one of its I/O threads, so a large transfer split across
// streams is encrypted on several cores at each end. Every call has a
// deadline; a background thread sends heartbeats to each server that has
// answered once, and a server that stops answering them is reported dead,
// failing calls to it at once with an error naming it.
#ifndef TESSERA_SRC_RPC_TRANSPORT_H_
#define TESSERA_SRC_RPC_TRANSPORT_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/rpc/message.h"
#include "tessera/base/status.h"
#include "tessera/base/time.h"

namespace tessera::rpc {

using Millis = std::chrono::milliseconds;

// The sender of a request, so that a Service can answer it later.
struct Peer {
  std::string routing_id;
  int client_id = -1;
};

class Service {
 public:
  virtual ~Service() = default;
  // Handles one validated request (HEARTBEAT and GOODBYE never reach it).
  // Returns the response, or nullopt to answer later with RpcServer::Reply
  // from inside a later Handle or OnClientGone call.
  virtual std::optional<Message> Handle(const Peer& peer, Message& request) = 0;
  // A registered client left (said goodbye) or was lost (no heartbeat).
  virtual void OnClientGone(int client_id, bool lost) {}
  // 3 s after a loss: how many other clients still talk (heard from in the
  // last 2.5 s; they send heartbeats every second), those that may wait for
  // it. Clients that ended without a goodbye at about the same time (all of
  // a job's, say) are silent by then.
  virtual void OnClientLostSettled(int client_id, int others_talking) {}
};

// The largest message frame a server accepts by default: clients send ids
// and rows in pieces of at most 1 MiB (4096 seeds for graph requests); a
// push of a single row larger than this needs a larger limit on the servers.
// Before authentication a peer can make a server buffer up to this much per
// connection for the handshake timeout.
inline constexpr int64_t kDefaultMaxMessageBytes = int64_t{4} << 20;

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 0;  // 0: any free port; see RpcServer::port().
  std::string token;
  std::string curve_secret_key;     // Z85; empty: no encryption (security.h).
  std::string name = "server";      // For log messages.
  Millis heartbeat_timeout{30000};  // A client silent this long is dead.
  Millis startup_timeout{600000};   // Give up if no client says hello.
  int expected_clients = 0;         // 0: unknown; exit when all known left.
  // Larger frames drop their connection, handshake included.
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
  // A connection that has not completed its handshake by then is closed.
  Millis handshake_timeout{5000};
  // Answers ZeroMQ may hold for clients that do not read them; beyond it,
  // answers with data become errors.
  int64_t max_queued_reply_bytes = int64_t{2} << 30;
  // ZeroMQ pings every connection this often and closes one whose peer
  // stays silent for three intervals (dead hosts, half-open connections).
  Millis connection_heartbeat{5000};
  // ZeroMQ I/O threads: they encrypt the answers, each connection on one of
  // them. 0: DefaultIoThreads().
  int io_threads = 0;
};

// One per two cores, 1 to 4: the other half is left to the trainer and its
// samplers. (On a 2-core host, where both ends of a loopback transfer
// already keep both cores busy with the cipher, a second stream was 3-10 %
// slower in `tessera bench pull`.)
int DefaultIoThreads();

// Client ids a server accepts when it does not know the job's size.
inline constexpr int kMaxClients = 1 << 16;
// Bounds of ServerOptions::io_threads / ClientOptions::io_threads and streams.
inline constexpr int kMaxIoThreads = 64;
inline constexpr int kMaxStreams = 16;

class RpcServer {
 public:
  static StatusOr<std::unique_ptr<RpcServer>> Bind(const ServerOptions& options);
  ~RpcServer();

  int port() const { return port_; }
  const ServerOptions& options() const { return options_; }

  // Serves until every registered client has left (and at least
  // expected_clients registered), `stop` becomes true (OK), or no client said
  // hello within the startup timeout (DeadlineExceeded).
  Status Serve(Service& service, const std::atomic<bool>& stop);

  // Sends a response; only from the serving thread.
  void Reply(const Peer& peer, Message response);

  // Safe to read from any thread.
  uint64_t requests_served() const { return requests_.load(); }
  uint64_t requests_rejected() const { return rejected_.load(); }
  // Connections refused in the handshake (no job key or token).
  uint64_t connections_refused() const;

 private:
  struct State;
  explicit RpcServer(ServerOptions options);
  void HandleFrames(Service& service, std::vector<Blob>& frames);
  // Runs `f`; an exception other than the socket's is counted and logged.
  template <typename F>
  void Survive(const char* what, F&& f);
  void FlushLogs();
  void Send(const Peer& peer, Message& response);
  // The response to a validated request (nullopt: answered later).
  std::optional<Message> Dispatch(Service& service, const Peer& peer, Message& request);
  void CheckClients(Service& service);

  ServerOptions options_;
  int port_ = 0;
  std::unique_ptr<State> state_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> rejected_{0};
};

struct ClientOptions {
  std::string token;
  std::string curve_secret_key;  // Z85; empty: no encryption (security.h).
  int client_id = 0;
  std::vector<std::string> servers;  // ZeroMQ endpoints; index = server id.
  Millis heartbeat_interval{1000};
  Millis heartbeat_timeout{10000};  // 0 disables heartbeats.
  // ZeroMQ I/O threads (they decrypt the answers). 0: DefaultIoThreads().
  int io_threads = 0;
  // Connections to each server per calling thread; one call's requests to
  // a server are spread over them round-robin. 0: as many as I/O threads
  // (at most kMaxStreams) when encrypted, so that several cores decrypt one
  // transfer, else 1. Each is a socket and a descriptor: calling threads x
  // servers x streams must stay under ZeroMQ's 1023 sockets per context.
  int streams = 0;
};

struct Call {
  int server = 0;
  Message request;
};

class RpcClient {
 public:
  static StatusOr<std::unique_ptr<RpcClient>> Create(const ClientOptions& options);
  ~RpcClient();

  // Called with each successful response as it arrives (index into the
  // calls), so its data can be used while later responses are in flight.
  using OnResponse = std::function<Status(size_t index, Message& response)>;

  // Sends the requests, at most kMaxCallsInFlight (256) unanswered per
  // connection (ZeroMQ drops answers past its high-water marks), runs
  // `between` once the first ones are out (local work overlapping the remote
  // calls; may be empty), then sends the rest as answers come back and waits
  // for all responses until `deadline`.
  // Responses are handed to `on_response` when given (and then not
  // returned), else returned in call order. Fails with the first error: a
  // server's error status (annotated with the server), a dead server, an
  // error from `on_response`, or DeadlineExceeded naming the servers that did
  // not answer. Thread-safe.
  StatusOr<std::vector<Message>> CallMany(std::vector<Call> calls, Deadline deadline,
                                          const std::function<void()>& between = {},
                                          const OnResponse& on_response = {});
  StatusOr<Message> CallOne(int server, Message request, Deadline deadline);

  int num_servers() const { return static_cast<int>(options_.servers.size()); }
  const std::string& endpoint(int server) const { return options_.servers[server]; }
  // OK, or why `server` is considered dead.
  Status ServerStatus(int server) const;

 private:
  struct SocketSet;
  struct Shared;
  explicit RpcClient(ClientOptions options);
  std::unique_ptr<SocketSet> Lease();
  void Return(std::unique_ptr<SocketSet> set);
  void HeartbeatLoop();
  std::string Describe(int server) const;

  ClientOptions options_;
  std::unique_ptr<Shared> shared_;
};

// The transport's own limit, for benchmarks: `rounds` request/response
// exchanges over TCP loopback between two threads of this process, each a
// small request answered by `response_bytes` bytes sent zero-copy. Returns
// the seconds of each exchange (after one warm-up exchange).
StatusOr<std::vector<double>> MeasureLoopbackExchange(size_t response_bytes, int rounds);

}  // namespace tessera::rpc

#endif  // TESSERA_SRC_RPC_TRANSPORT_H_
