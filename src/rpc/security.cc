// File: src/rpc/security.cc
#include "src/rpc/security.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "fmt/format.h"
#include "spdlog/spdlog.h"
#include "src/base/logging.h"
#include "zmq.hpp"

namespace tessera::rpc {
namespace {

constexpr size_t kKeyBytes = 32;
constexpr size_t kZ85KeyChars = 40;
constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";
constexpr char kPlainUser[] = "tessera";
constexpr int kZapPollMillis = 100;

Status CheckCurveSupport() {
  if (zmq_has("curve")) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "this libzmq has no CURVE support (it needs libsodium): encryption is impossible; run the "
      "job with --no-encryption on a trusted network");
}

// The job's public key (Z85) from its secret key (Z85).
StatusOr<std::string> PublicKeyZ85(const std::string& secret_z85) {
  RETURN_IF_ERROR(CheckCurveSupport());
  char public_z85[kZ85KeyChars + 1] = {};
  if (zmq_curve_public(public_z85, secret_z85.c_str()) != 0) {
    return absl::InvalidArgumentError(
        fmt::format("cannot derive the CURVE public key: {}", zmq_strerror(zmq_errno())));
  }
  return std::string(public_z85, kZ85KeyChars);
}

// The same, binary (as ZAP requests carry it).
StatusOr<std::array<uint8_t, kKeyBytes>> PublicKeyOf(const std::string& secret_z85) {
  ASSIGN_OR_RETURN(std::string z85, PublicKeyZ85(secret_z85));
  std::array<uint8_t, kKeyBytes> key{};
  if (zmq_z85_decode(key.data(), z85.c_str()) == nullptr) {
    return absl::InternalError("cannot decode the CURVE public key");
  }
  return key;
}

// socket.send, retried when a signal interrupts it (a REP socket left
// between a request and its full reply would refuse every later request).
void SendRetrying(zmq::socket_t& socket, std::string_view data, zmq::send_flags flags) {
  while (true) {
    try {
      socket.send(zmq::buffer(data), flags);
      return;
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

}  // namespace

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

StatusOr<std::string> NewCurveSecretKey() {
  RETURN_IF_ERROR(CheckCurveSupport());
  std::array<uint8_t, kKeyBytes> secret{};
  size_t filled = 0;
  while (filled < secret.size()) {
    ssize_t n = getrandom(secret.data() + filled, secret.size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(
          fmt::format("cannot read random bytes for the job key: {}", std::strerror(errno)));
    }
    filled += static_cast<size_t>(n);
  }
  char z85[kZ85KeyChars + 1] = {};
  if (zmq_z85_encode(z85, secret.data(), secret.size()) == nullptr) {
    return absl::InternalError("cannot encode the job key");
  }
  std::memset(secret.data(), 0, secret.size());
  return std::string(z85, kZ85KeyChars);
}

Status ValidateCurveSecretKey(std::string_view z85, std::string_view what) {
  if (z85.size() != kZ85KeyChars) {
    return absl::InvalidArgumentError(fmt::format(
        "{} is not a CURVE key: {} characters, expected {} (Z85)", what, z85.size(), kZ85KeyChars));
  }
  std::string copy(z85);
  std::array<uint8_t, kKeyBytes> bytes{};
  if (zmq_z85_decode(bytes.data(), copy.c_str()) == nullptr) {
    return absl::InvalidArgumentError(fmt::format("{} is not a CURVE key: not Z85 text", what));
  }
  return absl::OkStatus();
}

Status SecureServerSocket(zmq::socket_t& socket, const JobCredentials& credentials) {
  try {
    // A ZAP domain makes ZeroMQ consult the handler for every mechanism.
    socket.set(zmq::sockopt::zap_domain, "tessera");
    if (credentials.encrypted()) {
      ASSIGN_OR_RETURN(std::string public_z85, PublicKeyZ85(credentials.curve_secret_key));
      socket.set(zmq::sockopt::curve_server, true);
      socket.set(zmq::sockopt::curve_secretkey, credentials.curve_secret_key);
      socket.set(zmq::sockopt::curve_publickey, public_z85);
    } else {
      socket.set(zmq::sockopt::plain_server, true);
    }
  } catch (const zmq::error_t& e) {
    return absl::InternalError(fmt::format("cannot secure the server socket: {}", e.what()));
  }
  return absl::OkStatus();
}

Status SecureClientSocket(zmq::socket_t& socket, const JobCredentials& credentials) {
  try {
    if (credentials.encrypted()) {
      ASSIGN_OR_RETURN(std::string public_z85, PublicKeyZ85(credentials.curve_secret_key));
      socket.set(zmq::sockopt::curve_serverkey, public_z85);
      socket.set(zmq::sockopt::curve_publickey, public_z85);
      socket.set(zmq::sockopt::curve_secretkey, credentials.curve_secret_key);
    } else {
      socket.set(zmq::sockopt::plain_username, kPlainUser);
      socket.set(zmq::sockopt::plain_password, credentials.token);
    }
  } catch (const zmq::error_t& e) {
    return absl::InternalError(fmt::format("cannot secure the client socket: {}", e.what()));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------- ZAP

struct ZapHandler::State {
  explicit State(zmq::context_t& context) : socket(context, zmq::socket_type::rep) {}
  zmq::socket_t socket;
  JobCredentials credentials;
  std::array<uint8_t, kKeyBytes> public_key{};
  std::string name;
  LogLimiter refusals;
};

StatusOr<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context,
                                                        const JobCredentials& credentials,
                                                        std::string name) {
  if (credentials.token.empty()) return absl::InvalidArgumentError("the job token is empty");
  std::unique_ptr<ZapHandler> handler(new ZapHandler());
  try {
    handler->state_ = std::make_unique<State>(context);
    State& st = *handler->state_;
    st.credentials = credentials;
    st.name = std::move(name);
    if (credentials.encrypted()) {
      RETURN_IF_ERROR(ValidateCurveSecretKey(credentials.curve_secret_key, "the job key"));
      ASSIGN_OR_RETURN(st.public_key, PublicKeyOf(credentials.curve_secret_key));
    }
    st.socket.set(zmq::sockopt::linger, 0);
    st.socket.bind(kZapEndpoint);
  } catch (const zmq::error_t& e) {
    return absl::InternalError(fmt::format("cannot start the ZAP handler: {}", e.what()));
  }
  handler->thread_ = std::thread([h = handler.get()] { h->Loop(); });
  return handler;
}

ZapHandler::~ZapHandler() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (state_) state_->refusals.Flush(/*now=*/true);
  state_.reset();
}

bool ZapHandler::Judge(const std::vector<zmq::message_t>& frames) const {
  const State& st = *state_;
  // RFC 27: version, request id, domain, address, identity, mechanism,
  // credentials (CURVE: the client's public key; PLAIN: user, password).
  if (frames.size() < 6 || frames[0].to_string_view() != "1.0") return false;
  std::string_view mechanism = frames[5].to_string_view();
  if (mechanism == "CURVE" && st.credentials.encrypted() && frames.size() == 7 &&
      frames[6].size() == kKeyBytes) {
    return ConstantTimeEquals(
        frames[6].to_string_view(),
        std::string_view(reinterpret_cast<const char*>(st.public_key.data()), kKeyBytes));
  }
  if (mechanism == "PLAIN" && !st.credentials.encrypted() && frames.size() == 8) {
    return ConstantTimeEquals(frames[7].to_string_view(), st.credentials.token);
  }
  return false;
}

void ZapHandler::Loop() {
  State& st = *state_;
  while (!stop_.load()) {
    std::vector<zmq::message_t> frames;
    bool answered = true;
    try {
      zmq::pollitem_t item{st.socket.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(kZapPollMillis)) == 0) {
        st.refusals.Flush();
        continue;
      }
      frames.reserve(16);
      while (true) {
        zmq::message_t frame;
        if (!st.socket.recv(frame, zmq::recv_flags::dontwait)) break;
        bool more = frame.more();
        if (frames.size() < 16) frames.push_back(std::move(frame));
        if (!more) break;
      }
      if (frames.empty()) continue;
      answered = false;  // From here on the REP socket owes a reply.
      bool ok = Judge(frames);
      std::string_view request_id = frames.size() > 1 ? frames[1].to_string_view() : "";
      // Reply: version, request id, status code, status text, user id, metadata.
      std::array<std::string_view, 6> reply = {"1.0",          request_id,      ok ? "200" : "400",
                                               ok ? "OK" : "", ok ? "job" : "", ""};
      for (size_t i = 0; i < reply.size(); ++i) {
        SendRetrying(st.socket, reply[i],
                     i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
      answered = true;
      if (ok) {
        ++accepted_;
        continue;
      }
      ++refused_;
      std::string_view mechanism = frames.size() > 5 ? frames[5].to_string_view() : "";
      st.refusals.Warn(
          fmt::format("{}: refused a connection from {} ({} handshake without the job's {})",
                      st.name, frames.size() > 3 ? frames[3].to_string() : "?",
                      mechanism.empty() ? "malformed" : std::string(mechanism),
                      st.credentials.encrypted() ? "key" : "token"));
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      if (e.num() != EINTR) spdlog::warn("{}: authentication handler: {}", st.name, e.what());
    } catch (...) {
      ++refused_;  // Out of memory while judging: refuse, below.
    }
    if (!answered) {
      // Whatever failed, the peer is refused and the socket can take the next
      // request: a REP socket without its reply would refuse all later ones.
      // (ZeroMQ takes a malformed reply as a refusal.)
      try {
        SendRetrying(st.socket, "", zmq::send_flags::none);
      } catch (...) {
        // The socket is gone: the context is shutting down.
      }
    }
  }
}

}  // namespace tessera::rpc
