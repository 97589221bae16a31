// What the sluice instances on one PostgreSQL database say to each other, over one
// connection per process that a thread of its own owns:
//   - Changes. Publish(change), called once a change has committed, sends
//     NOTIFY sluice_changes with a one-letter payload per kind of change. Changes
//     published while a notification is on its way go out together in the next one, so a
//     burst of submits costs a few notifications, not one each (and never more than one
//     per kMinGap). With no other instance listening, nothing is sent. Other processes'
//     notifications reach the listener; this process's own are skipped.
//   - Maintenance leadership. The session tries pg_try_advisory_lock(kMaintenanceLockKey)
//     until it holds it (every kLeaderRetry); the lock belongs to the session, so it
//     goes with the connection (a killed process, a lost network) and another process
//     takes it within kLeaderRetry of the server noticing.
//   - The session's application_name is "sluice-channel" (pg_stat_activity).
//   - Loss. When the connection is lost, leadership is dropped at once, the thread
//     connects again (kMinBackoff doubling to kMaxBackoff), LISTENs again and tells the
//     listener kResync: changes may have been missed meanwhile.
// Thread-safe: Publish and leader() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "store/postgres/pg.h"
#include "store/store.h"

namespace sluice {

class PgChannel {
 public:
  static constexpr const char* kChannel = "sluice_changes";
  static constexpr int64_t kMaintenanceLockKey = 0x736c756963650001;  // "sluice" 1
  static constexpr std::chrono::milliseconds kLeaderRetry{1000};
  static constexpr std::chrono::milliseconds kMinBackoff{25};
  static constexpr std::chrono::milliseconds kMaxBackoff{1000};
  // At most one notification per kMinGap: what is published meanwhile goes in the next.
  static constexpr std::chrono::milliseconds kMinGap{10};
  // How often the channel counts the other instances' channels on the database; alone,
  // it sends nothing. A channel that connects says so (kHello), so others know at once.
  static constexpr std::chrono::milliseconds kPeerCheck{1000};
  static constexpr char kHello = 'h';

  // Starts the thread, which connects to `uri`. `listener` runs on that thread.
  PgChannel(std::string uri, std::function<void(StoreChange)> listener);
  ~PgChannel();  // stops the thread; the lock goes with the connection
  PgChannel(const PgChannel&) = delete;
  PgChannel& operator=(const PgChannel&) = delete;

  void Publish(StoreChange change);
  // Whether this process holds the maintenance lock on a live connection.
  bool leader() const { return leader_.load(); }

  // One letter per change, and back (0 for a letter this version does not know).
  static char Letter(StoreChange change);
  static unsigned BitOf(char letter);

 private:
  void Run();
  // Serves one connection until it is lost (false) or the channel stops (true).
  bool Serve(pg::Connection& conn);
  // Waits until woken, the socket (if >= 0) is readable, or `timeout` passes.
  void Wait(int socket, std::chrono::milliseconds timeout, bool* readable);
  void Wake();
  void Deliver(unsigned bits);

  const std::string uri_;
  std::function<void(StoreChange)> listener_;
  int wake_fd_ = -1;                  // eventfd: Publish and the destructor wake the thread
  std::atomic<unsigned> pending_{0};  // bits of changes not yet sent
  std::atomic<bool> leader_{false};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace sluice
