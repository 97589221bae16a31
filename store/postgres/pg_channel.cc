#include "store/postgres/pg_channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr StoreChange kSent[] = {StoreChange::kWork, StoreChange::kLeaseEnded, StoreChange::kQueues,
                                 StoreChange::kTokens, StoreChange::kLimits};

unsigned Bit(StoreChange c) { return 1u << static_cast<unsigned>(c); }

}  // namespace

char PgChannel::Letter(StoreChange change) {
  switch (change) {
    case StoreChange::kWork:
      return 'w';
    case StoreChange::kLeaseEnded:
      return 'l';
    case StoreChange::kQueues:
      return 'q';
    case StoreChange::kTokens:
      return 't';
    case StoreChange::kLimits:
      return 'x';
    case StoreChange::kResync:
      return 'r';
  }
  return 0;
}

unsigned PgChannel::BitOf(char letter) {
  for (StoreChange c : kSent) {
    if (Letter(c) == letter) return Bit(c);
  }
  return 0;
}

PgChannel::PgChannel(std::string uri, std::function<void(StoreChange)> listener)
    : uri_(std::move(uri)), listener_(std::move(listener)) {
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { Run(); });
}

PgChannel::~PgChannel() {
  stopping_.store(true);
  Wake();
  thread_.join();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void PgChannel::Publish(StoreChange change) {
  // Only the first change since the last send wakes the thread.
  if (pending_.fetch_or(Bit(change)) == 0) Wake();
}

void PgChannel::Wake() {
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof one);
}

void PgChannel::Wait(int socket, milliseconds timeout, bool* readable) {
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {socket, POLLIN, 0}};
  const int n = socket >= 0 ? 2 : 1;
  *readable = false;
  if (poll(fds, static_cast<nfds_t>(n), static_cast<int>(timeout.count())) <= 0) return;
  if (fds[0].revents & POLLIN) {
    uint64_t drained;
    (void)!read(wake_fd_, &drained, sizeof drained);
  }
  if (n == 2 && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) *readable = true;
}

void PgChannel::Deliver(unsigned bits) {
  for (StoreChange c : kSent) {
    if (bits & Bit(c)) listener_(c);
  }
}

void PgChannel::Run() {
  milliseconds backoff{0};
  bool readable;
  while (!stopping_.load()) {
    std::unique_ptr<pg::Connection> conn;
    try {
      conn = std::make_unique<pg::Connection>(uri_);
      // A notification needs no flush of its own: what it announces is durable already.
      conn->Exec("SET synchronous_commit = off");
      conn->Exec("SET application_name = 'sluice-channel'");  // for pg_stat_activity
      conn->Exec(std::string("LISTEN ") + kChannel);
    } catch (const pg::PgError&) {
      conn.reset();
    }
    if (!conn) {
      backoff = std::clamp(backoff * 2, kMinBackoff, kMaxBackoff);
      Wait(-1, backoff, &readable);
      continue;
    }
    backoff = milliseconds{0};
    listener_(StoreChange::kResync);  // whatever happened before this LISTEN was missed
    if (Serve(*conn)) break;
    leader_.store(false);
  }
  leader_.store(false);
}

bool PgChannel::Serve(pg::Connection& conn) {
  const int own_pid = conn.BackendPid();
  const auto now = [] { return steady_clock::now(); };
  auto next_leader_try = now();
  auto next_peer_check = now();
  auto next_send = now();
  bool alone = false;  // no other instance's channel on this database: nobody to tell
  bool readable = false;
  try {
    // Others learn at once that someone new listens (see `alone`).
    conn.ExecParams("SELECT pg_notify($1, $2)", pg::Params(kChannel, std::string(1, kHello)));
    while (!stopping_.load()) {
      if (!leader_.load() && now() >= next_leader_try) {
        pg::Rows r = conn.ExecParams("SELECT pg_try_advisory_lock($1::bigint)",
                                     pg::Params(kMaintenanceLockKey));
        leader_.store(r.Bool(0, 0));
        next_leader_try = now() + kLeaderRetry;
      }
      if (now() >= next_peer_check) {
        pg::Rows r = conn.Exec(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sluice-channel' "
            "AND datname = current_database() AND pid <> pg_backend_pid()");
        alone = r.Int(0, 0) == 0;
        next_peer_check = now() + kPeerCheck;
      }
      // Alone, changes wait (unsent, and waking no one) until another instance appears.
      if (!alone && pending_.load() != 0 && now() >= next_send) {
        const unsigned bits = pending_.exchange(0);
        std::string payload;
        for (StoreChange c : kSent) {
          if (bits & Bit(c)) payload += Letter(c);
        }
        try {
          conn.ExecParams("SELECT pg_notify($1, $2)", pg::Params(kChannel, payload));
        } catch (const pg::PgError&) {
          pending_.fetch_or(bits);  // sent on the next connection
          throw;
        }
        next_send = now() + kMinGap;
      }
      unsigned heard = 0;
      for (const auto& n : conn.TakeNotifications()) {
        if (n.backend_pid == own_pid) continue;
        alone = false;
        for (char letter : n.payload) heard |= BitOf(letter);
      }
      if (heard) Deliver(heard);
      auto wake = next_peer_check;
      if (!leader_.load()) wake = std::min(wake, next_leader_try);
      if (!alone && pending_.load() != 0) wake = std::min(wake, next_send);
      const auto timeout = std::chrono::duration_cast<milliseconds>(wake - now());
      if (timeout.count() <= 0 && wake == next_send) continue;
      Wait(conn.Socket(), std::max(milliseconds{1}, timeout), &readable);
    }
    return true;
  } catch (const pg::PgError&) {
    leader_.store(false);
    return stopping_.load();
  }
}

}  // namespace sluice
