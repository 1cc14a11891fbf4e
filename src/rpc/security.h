// File: src/rpc/security.h
//
// Who may talk to a tessera server, and how the wire is protected.
//
// Every job has a secret token and, unless encryption is turned off, a
// CURVE key pair (ZeroMQ's CurveZMQ: Curve25519 key exchange, then every
// frame encrypted and authenticated with XSalsa20-Poly1305). Servers use the
// job's key pair as their server key; clients use the same pair as their
// client key. A server's ZAP handler (ZeroMQ's authentication hook, which
// runs inside the handshake, before the connection can queue a single
// frame) accepts only clients whose public key is the job's, so a peer must
// hold the job's secret key to complete a handshake; and a client can only
// complete a handshake with a server that holds it too, so answers cannot be
// forged. Without encryption the handshake uses ZeroMQ's PLAIN mechanism
// with the job token as password: peers still prove the token before any
// frame is queued, but everything, the token included, travels in clear.
// The token is checked again in every request (src/rpc/message.h).
#ifndef TESSERA_SRC_RPC_SECURITY_H_
#define TESSERA_SRC_RPC_SECURITY_H_

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tessera/base/status.h"

namespace zmq {
class context_t;
class message_t;
class socket_t;
}  // namespace zmq

namespace tessera::rpc {

// The credentials of one job, as every process of it receives them.
struct JobCredentials {
  std::string token;
  // The job's CURVE secret key, Z85-encoded (40 characters); empty: no
  // encryption (PLAIN handshake with the token).
  std::string curve_secret_key;

  bool encrypted() const { return !curve_secret_key.empty(); }
};

// A fresh CURVE secret key (Z85) from the system's random source.
StatusOr<std::string> NewCurveSecretKey();

// OK if `z85` is a well-formed CURVE secret key; else an error that names
// `what` (e.g. "TESSERA_JOB_KEY") without echoing the key.
Status ValidateCurveSecretKey(std::string_view z85, std::string_view what);

// Byte strings compared in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Sets `socket` up as the server (CURVE or PLAIN) side of `credentials`.
// The socket's context must have a running ZapHandler.
Status SecureServerSocket(zmq::socket_t& socket, const JobCredentials& credentials);
// Sets `socket` up as a client of a server holding `credentials`.
Status SecureClientSocket(zmq::socket_t& socket, const JobCredentials& credentials);

// The ZAP handler of one ZeroMQ context: a thread answering the context's
// authentication requests ("inproc://zeromq.zap.01"), accepting CURVE
// clients whose public key is the job's and PLAIN clients whose password is
// the job token, both compared in constant time. Everything else is refused
// (and counted; refusals are logged at most once per 10 s).
class ZapHandler {
 public:
  // Binds the handler in `context` (before any server socket binds) and
  // starts its thread.
  static StatusOr<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context,
                                                     const JobCredentials& credentials,
                                                     std::string name);
  // Stops the thread; call before the context is closed.
  ~ZapHandler();

  uint64_t accepted() const { return accepted_.load(); }
  uint64_t refused() const { return refused_.load(); }

 private:
  struct State;
  ZapHandler() = default;
  void Loop();
  // Whether a ZAP request's credentials are the job's.
  bool Judge(const std::vector<zmq::message_t>& frames) const;

  std::unique_ptr<State> state_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

}  // namespace tessera::rpc

#endif  // TESSERA_SRC_RPC_SECURITY_H_
