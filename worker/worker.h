// The in-process worker loop over WorkerClient, for handlers written in C++ (and the
// engine of the sluice-worker runtime). It leases only as many jobs as it has free
// slots, runs each on one of `concurrency` handler threads, heartbeats while a handler
// runs, and completes or fails the job with the handler's outcome: when the leasing
// thread is only waiting for a free slot, the ack rides on its next lease request
// (ack and fetch in one round trip), else it goes at once as POST /v1/acks. It reconnects with
// exponential backoff and full jitter (honoring Retry-After), jitters its long-polls,
// and cancels a job whose lease is lost (409) or runs out. One log line per job.
//
// Threads: one leasing, one heartbeating, `concurrency` handlers; each owns its own
// connection. Stop() and Abort() may be called from any thread; Run() once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client/server_url.h"
#include "client/worker_client.h"
#include "common/error.h"
#include "worker/backoff.h"
#include "worker/unique_fd.h"

namespace sluice {

// Why a handler is asked to stop before it is done.
enum class StopReason {
  kNone,
  kLeaseLost,     // the server answered 409 lease_lost: another worker may hold the job
  kLeaseExpired,  // the lease ran out (no heartbeat got through, or --timeout reached)
  kShutdown,      // the worker is shutting down and the drain grace is over
};
std::string_view StopReasonName(StopReason reason);

// What a handler decided.
struct JobOutcome {
  bool succeeded = false;
  nlohmann::json result;  // when succeeded
  std::string error;      // when not
  bool retryable = true;
  std::optional<int64_t> retry_in_ms;

  static JobOutcome Complete(nlohmann::json result = nullptr);
  static JobOutcome Fail(std::string error, bool retryable = true,
                         std::optional<int64_t> retry_in_ms = std::nullopt);
};

// A handler's view of its job and of the request to stop. Thread-safe.
class JobContext {
 public:
  explicit JobContext(LeasedJob job);
  JobContext(const JobContext&) = delete;
  JobContext& operator=(const JobContext&) = delete;

  const LeasedJob& job() const { return job_; }
  bool cancelled() const { return reason_.load() != StopReason::kNone; }
  StopReason reason() const { return reason_.load(); }
  // Readable once cancelled: poll() it beside your own descriptors.
  int cancel_fd() const { return cancel_fd_.get(); }
  // Waits up to `d`; false when cancelled first (stop the work then).
  bool SleepFor(std::chrono::milliseconds d) const;

  // The first reason wins; later calls change nothing.
  void Cancel(StopReason reason);

 private:
  LeasedJob job_;
  std::atomic<StopReason> reason_{StopReason::kNone};
  UniqueFd cancel_fd_;  // an eventfd
};

using JobHandler = std::function<JobOutcome(JobContext&)>;

struct WorkerOptions {
  ServerUrl server;       // ParseServerUrl("http://127.0.0.1:8080", ...)
  std::string token;      // work scope; never logged
  std::string worker_id;  // default: hostname-pid
  std::vector<std::string> queues;
  int concurrency = 1;                           // jobs run at once; never more are leased
  std::optional<int64_t> lease_ms;               // lease length to ask for (default: the queue's)
  std::optional<int64_t> timeout_ms;             // a job's lease is not extended beyond this long
                                                 // after it started: then it runs out and the job
                                                 // is cancelled (kLeaseExpired) and re-leased
  int64_t wait_ms = 20000;                       // long-poll length, jittered over [w/2, w]
  BackoffPolicy backoff;                         // reconnects and undelivered acks
  std::chrono::milliseconds drain_grace{30000};  // after Stop(), before cancelling jobs
  std::function<double()> random;                // uniform [0, 1); default: seeded mt19937
};

class Worker {
 public:
  Worker(WorkerOptions options, JobHandler handler);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Works until Stop() and the drain are over (Ok), or until the server refuses the
  // worker for good (bad token, unknown queue, ...: that Error).
  Status Run();
  // Stops leasing: the long-poll in flight may still finish (at most wait_ms) and its
  // jobs run. Running jobs get `drain_grace` to finish, then are cancelled (kShutdown)
  // and their handlers' outcomes (normally a retryable fail) are sent.
  void Stop();
  // Cuts the long-poll in flight and cancels running jobs now (kShutdown). A job the
  // server hands to the cut request stays leased until its lease runs out.
  void Abort();

 private:
  using Clock = std::chrono::steady_clock;
  struct Running {
    std::shared_ptr<JobContext> context;
    Clock::time_point started;     // when the lease request was sent (conservative)
    int64_t lease_ms = 0;          // length of each extension
    Clock::time_point lease_ends;  // by our clock, never later than the server's
    Clock::time_point next_heartbeat;
    bool lease_over = false;  // lease_ends passed: no more heartbeats
  };

  void LeaseLoop();
  void HeartbeatLoop();
  void HandlerLoop();
  // A finished job's ack handed to the leasing thread, and where its result goes
  // (nothing: it was not delivered, or its fate is unknown; send it yourself).
  struct CarriedAck {
    JobAck ack;
    std::promise<std::optional<AckResult>> result;
  };

  void Finish(WorkerClient& client, Running& run, const JobOutcome& outcome);
  // Hands `ack` to the leasing thread if it waits for a free slot, and waits for the
  // result; nothing when it was not handed over or not delivered.
  std::optional<AckResult> Carry(Running& run, const JobAck& ack);
  void CancelAll(StopReason reason);
  double Random();
  int FreeSlots() const;  // requires mu_

  WorkerOptions options_;
  JobHandler handler_;
  WorkerClient lease_client_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Running>> running_;  // leased, not yet acked
  std::vector<std::shared_ptr<Running>> ready_;              // leased, not yet started
  std::vector<std::shared_ptr<CarriedAck>> carried_;         // for the next lease request
  bool lease_idle_ = false;    // the leasing thread waits for a free slot (or an ack)
  bool stopping_ = false;      // no more leasing
  bool aborting_ = false;      // cut the long-poll, cancel running jobs
  bool lease_exited_ = false;  // the leasing thread is gone
  bool handlers_exit_ = false;
  bool heartbeat_exit_ = false;
  std::optional<Error> fatal_;

  std::mutex random_mu_;
};

}  // namespace sluice
