#include "worker/worker.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "common/logfmt.h"

namespace sluice {
namespace {

// A job whose lease is gone gets no heartbeats; one cancelled for shutdown still does,
// so that its retryable fail can be delivered.
bool LeaseGone(const JobContext& c) {
  return c.reason() == StopReason::kLeaseLost || c.reason() == StopReason::kLeaseExpired;
}

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
}

// A logfmt value of at most 200 bytes (an error's detail may be long).
std::string LogValue(std::string_view s) {
  if (s.size() <= 200) return LogfmtValue(s);
  return LogfmtValue(std::string(s.substr(0, 200)) + "...");
}

JobAck AckOf(const LeasedJob& job, const JobOutcome& outcome) {
  JobAck a;
  a.id = job.id;
  a.lease_id = job.lease_id;
  a.succeeded = outcome.succeeded;
  a.result = outcome.result;
  a.error = outcome.error;
  a.retryable = outcome.retryable;
  a.retry_in_ms = outcome.retry_in_ms;
  return a;
}

// One ack as its own POST /v1/acks.
AckResult SendAck(WorkerClient& client, const JobAck& ack) {
  auto r = client.Acks({ack});
  if (!r.ok()) return r.error();
  return std::move(r.value().at(0));
}

std::string DefaultWorkerId() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "worker") + "-" + std::to_string(getpid());
}

}  // namespace

std::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "none";
    case StopReason::kLeaseLost:
      return "lease_lost";
    case StopReason::kLeaseExpired:
      return "lease_expired";
    case StopReason::kShutdown:
      return "shutdown";
  }
  return "none";
}

JobOutcome JobOutcome::Complete(nlohmann::json result) {
  JobOutcome o;
  o.succeeded = true;
  o.result = std::move(result);
  return o;
}

JobOutcome JobOutcome::Fail(std::string error, bool retryable, std::optional<int64_t> retry_in_ms) {
  JobOutcome o;
  o.error = std::move(error);
  o.retryable = retryable;
  o.retry_in_ms = retry_in_ms;
  return o;
}

JobContext::JobContext(LeasedJob job)
    : job_(std::move(job)), cancel_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

void JobContext::Cancel(StopReason reason) {
  StopReason none = StopReason::kNone;
  if (!reason_.compare_exchange_strong(none, reason)) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(cancel_fd_.get(), &one, sizeof one);
}

bool JobContext::SleepFor(milliseconds d) const {
  auto until = Clock::now() + d;
  while (!cancelled()) {
    auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
    if (left <= 0) return true;
    pollfd p{cancel_fd_.get(), POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
  }
  return false;
}

Worker::Worker(WorkerOptions options, JobHandler handler)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      lease_client_(options_.server, options_.token,
                    options_.worker_id.empty() ? DefaultWorkerId() : options_.worker_id,
                    options_.wait_ms) {
  if (options_.worker_id.empty()) options_.worker_id = DefaultWorkerId();
  options_.concurrency = std::max(1, options_.concurrency);
  if (!options_.random) {
    auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
    options_.random = [rng] { return std::uniform_real_distribution<double>(0, 1)(*rng); };
  }
  // With a timeout shorter than the lease, the first lease is the timeout.
  if (options_.timeout_ms && (!options_.lease_ms || *options_.timeout_ms < *options_.lease_ms)) {
    options_.lease_ms = *options_.timeout_ms;
  }
}

Worker::~Worker() = default;

double Worker::Random() {
  std::lock_guard lock(random_mu_);
  return options_.random();
}

int Worker::FreeSlots() const { return options_.concurrency - static_cast<int>(running_.size()); }

Status Worker::Run() {
  std::string queues;
  for (const std::string& q : options_.queues) queues += (queues.empty() ? "" : ",") + q;
  spdlog::info("worker={} queues={} concurrency={} server={}: started", options_.worker_id,
               LogValue(queues), options_.concurrency, options_.server.ToString());
  std::thread leaser([this] { LeaseLoop(); });
  std::thread heart([this] { HeartbeatLoop(); });
  std::vector<std::thread> handlers;
  for (int i = 0; i < options_.concurrency; ++i) handlers.emplace_back([this] { HandlerLoop(); });

  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stopping_; });
    // The long-poll in flight may finish (its jobs are run like the others): cut, the
    // server could hand a job to a request nobody reads, and the job would sit leased
    // until its lease ran out. Abort() cuts it; an interrupt can miss a request that
    // had not started yet, so it is repeated until the leasing thread is out.
    while (!lease_exited_) {
      if (aborting_) {
        lock.unlock();
        lease_client_.Interrupt();
        lock.lock();
      }
      cv_.wait_for(lock, milliseconds(100), [&] { return lease_exited_; });
    }
  }
  leaser.join();
  {
    std::unique_lock lock(mu_);
    if (!running_.empty()) {
      spdlog::info("worker={}: draining {} running job(s), up to {} ms", options_.worker_id,
                   running_.size(), options_.drain_grace.count());
    }
    if (!cv_.wait_for(lock, options_.drain_grace, [&] { return running_.empty(); })) {
      lock.unlock();
      CancelAll(StopReason::kShutdown);
      lock.lock();
    }
    handlers_exit_ = true;
    cv_.notify_all();
  }
  for (auto& t : handlers) t.join();
  {
    std::lock_guard lock(mu_);
    heartbeat_exit_ = true;
    cv_.notify_all();
  }
  heart.join();
  spdlog::info("worker={}: stopped", options_.worker_id);
  if (fatal_) return *fatal_;
  return Ok{};
}

void Worker::Stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  cv_.notify_all();
}

void Worker::Abort() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    aborting_ = true;
    cv_.notify_all();
  }
  lease_client_.Interrupt();
  CancelAll(StopReason::kShutdown);
}

void Worker::CancelAll(StopReason reason) {
  std::lock_guard lock(mu_);
  for (auto& [id, run] : running_) run->context->Cancel(reason);
}

void Worker::LeaseLoop() {
  int64_t failures = 0;
  while (true) {
    int n = 0;
    std::vector<std::shared_ptr<CarriedAck>> carrying;
    {
      std::unique_lock lock(mu_);
      // A carried ack's job is done: its slot counts as free.
      auto free = [&] { return FreeSlots() + static_cast<int>(carried_.size()); };
      lease_idle_ = true;
      cv_.wait(lock, [&] { return stopping_ || free() > 0; });
      lease_idle_ = false;
      if (stopping_) break;
      n = LeaseBatchSize(free(), WorkerClient::kMaxJobsPerLease);
      const size_t take = std::min(carried_.size(), WorkerClient::kMaxAcksPerRequest);
      carrying.assign(carried_.begin(), carried_.begin() + static_cast<std::ptrdiff_t>(take));
      carried_.erase(carried_.begin(), carried_.begin() + static_cast<std::ptrdiff_t>(take));
    }
    // A request that carries acks does not long-poll: their handlers wait for the
    // answer. It takes what is there at once; the next request waits for more.
    const int64_t wait_ms = carrying.empty() ? JitteredWaitMs(options_.wait_ms, Random()) : 0;
    const Clock::time_point sent = Clock::now();
    std::vector<JobAck> acks;
    for (const auto& c : carrying) acks.push_back(c->ack);
    std::vector<AckResult> ack_results;
    auto jobs =
        lease_client_.Lease({options_.queues, n, wait_ms, options_.lease_ms}, acks, ack_results);
    // Each carried ack's result to its handler; none when the request failed (a 503
    // applied nothing; after a lost connection the handler's own try may find the job
    // already acknowledged: lease_lost).
    for (size_t i = 0; i < carrying.size(); ++i) {
      carrying[i]->result.set_value(jobs.ok() ? std::optional<AckResult>(ack_results[i])
                                              : std::nullopt);
    }
    // A refusal may be the acks' doing (a result over the body limit): their handlers
    // send them on their own, and the next lease, without them, tells.
    if (!jobs.ok() && !carrying.empty() && !IsTransient(jobs.error())) continue;
    int64_t delay_ms = 0;
    if (!jobs.ok()) {
      const Error& e = jobs.error();
      {
        std::lock_guard lock(mu_);
        if (stopping_) break;
      }
      if (!IsTransient(e)) {
        spdlog::error("worker={}: the server refused to lease: {}", options_.worker_id, e.detail);
        std::lock_guard lock(mu_);
        fatal_ = e;
        stopping_ = true;
        cv_.notify_all();
        break;
      }
      delay_ms = RetryDelayMs(options_.backoff, ++failures, e.retry_after_s, Random());
      spdlog::warn("worker={}: cannot lease (failure {}): {}; retrying in {} ms (Retry-After {} s)",
                   options_.worker_id, failures, e.detail, delay_ms, e.retry_after_s.value_or(0));
    } else {
      if (failures > 0) spdlog::info("worker={}: leasing again", options_.worker_id);
      failures = 0;
      std::lock_guard lock(mu_);
      for (LeasedJob& job : jobs.value()) {
        auto run = std::make_shared<Running>();
        run->lease_ms = job.LeaseMs().value_or(options_.lease_ms.value_or(30000));
        run->started = sent;
        run->lease_ends = sent + milliseconds(run->lease_ms);
        run->next_heartbeat = sent + milliseconds(std::max<int64_t>(run->lease_ms / 3, 50));
        run->context = std::make_shared<JobContext>(std::move(job));
        running_[run->context->job().id] = run;
        ready_.push_back(run);
      }
      cv_.notify_all();
      // An empty answer long before the wait was up (e.g. the server is draining): do
      // not spin on it.
      if (jobs.value().empty() && MsSince(sent) < wait_ms / 4) {
        delay_ms = RetryDelayMs(options_.backoff, 1, std::nullopt, Random());
      }
    }
    if (delay_ms > 0) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, milliseconds(delay_ms), [&] { return stopping_; });
    }
  }
  std::lock_guard lock(mu_);
  lease_idle_ = false;
  for (auto& c : carried_) c->result.set_value(std::nullopt);  // their handlers send them
  carried_.clear();
  lease_exited_ = true;
  cv_.notify_all();
}

std::optional<AckResult> Worker::Carry(Running& run, const JobAck& ack) {
  auto carried = std::make_shared<CarriedAck>();
  carried->ack = ack;
  auto result = carried->result.get_future();
  {
    std::lock_guard lock(mu_);
    if (!lease_idle_ || stopping_) return std::nullopt;
    carried_.push_back(carried);
    run.lease_over = true;  // done: no more heartbeats
    cv_.notify_all();
  }
  return result.get();  // the leasing thread always answers (LeaseLoop)
}

void Worker::HeartbeatLoop() {
  WorkerClient client(options_.server, options_.token, options_.worker_id, options_.wait_ms);
  std::unique_lock lock(mu_);
  while (!heartbeat_exit_) {
    // Sleep until the earliest heartbeat or lease end, or until something changes.
    Clock::time_point next = Clock::now() + std::chrono::seconds(5);
    for (auto& [id, run] : running_) {
      if (run->lease_over || LeaseGone(*run->context)) continue;
      next = std::min({next, run->next_heartbeat, run->lease_ends});
    }
    cv_.wait_until(lock, next);
    if (heartbeat_exit_) break;
    std::vector<std::shared_ptr<Running>> due;
    const Clock::time_point now = Clock::now();
    for (auto& [id, run] : running_) {
      if (run->lease_over || LeaseGone(*run->context)) continue;
      if (now >= run->lease_ends) {
        run->lease_over = true;
        run->context->Cancel(StopReason::kLeaseExpired);
      } else if (now >= run->next_heartbeat) {
        due.push_back(run);
      }
    }
    for (auto& run : due) {
      const LeasedJob& job = run->context->job();
      auto extend = HeartbeatExtendMs(run->lease_ms, MsSince(run->started), options_.timeout_ms);
      if (!extend) {  // the timeout is near: let the lease run out
        run->next_heartbeat = run->lease_ends;
        continue;
      }
      lock.unlock();
      const Clock::time_point sent = Clock::now();
      auto beat = client.Heartbeat(job, *extend);
      lock.lock();
      if (beat.ok()) {
        run->lease_ends = sent + milliseconds(*extend);
        run->next_heartbeat = sent + milliseconds(std::max<int64_t>(run->lease_ms / 3, 50));
      } else if (IsTransient(beat.error())) {
        // Try again soon; the lease end by our clock still holds.
        run->next_heartbeat =
            Clock::now() + milliseconds(std::clamp<int64_t>(run->lease_ms / 10, 50, 1000));
        spdlog::warn("worker={} id={}: heartbeat failed: {}", options_.worker_id, job.id,
                     beat.error().detail);
      } else {
        run->context->Cancel(StopReason::kLeaseLost);
        spdlog::warn("worker={} id={}: lease lost: {}", options_.worker_id, job.id,
                     beat.error().detail);
      }
    }
  }
}

void Worker::HandlerLoop() {
  WorkerClient client(options_.server, options_.token, options_.worker_id, options_.wait_ms);
  while (true) {
    std::shared_ptr<Running> run;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !ready_.empty() || handlers_exit_; });
      if (ready_.empty()) return;
      run = ready_.front();
      ready_.erase(ready_.begin());
    }
    JobOutcome outcome;
    try {
      outcome = handler_(*run->context);
    } catch (const std::exception& e) {
      outcome = JobOutcome::Fail(std::string("handler threw: ") + e.what());
    }
    Finish(client, *run, outcome);
    std::lock_guard lock(mu_);
    // Only this attempt's entry: with its ack carried, the job may already be leased
    // again (a retry) under the same id.
    if (auto it = running_.find(run->context->job().id);
        it != running_.end() && it->second == run) {
      running_.erase(it);
    }
    cv_.notify_all();
  }
}

// Sends the outcome, retrying transient failures with backoff until the lease ends by
// our clock. Logs the one line of this job.
void Worker::Finish(WorkerClient& client, Running& run, const JobOutcome& outcome) {
  const LeasedJob& job = run.context->job();
  const int64_t duration_ms = MsSince(run.started);
  std::string result;  // the job's state after the ack, or why there was none
  std::string detail = outcome.succeeded ? "" : outcome.error;
  if (run.context->reason() == StopReason::kLeaseLost) {
    result = "lease_lost";
  } else {
    const JobAck mine = AckOf(job, outcome);
    std::optional<AckResult> carried = Carry(run, mine);
    for (int64_t failures = 1;; ++failures) {
      AckResult ack = failures == 1 && carried ? std::move(*carried) : SendAck(client, mine);
      if (!ack.ok() && outcome.succeeded && !IsTransient(ack.error()) &&
          ack.error().code != ErrorCode::kLeaseLost) {
        // The result was refused (e.g. too large): record why rather than retry forever.
        detail = "result refused: " + ack.error().detail;
        ack = client.Fail(job, detail, /*retryable=*/false);
      }
      if (ack.ok()) {
        result = ack.value();
        break;
      }
      if (ack.error().code == ErrorCode::kLeaseLost) {
        result =
            run.context->reason() == StopReason::kLeaseExpired ? "lease_expired" : "lease_lost";
        break;
      }
      Clock::time_point lease_ends;
      {
        std::lock_guard lock(mu_);
        lease_ends = run.lease_ends;
      }
      const int64_t delay =
          RetryDelayMs(options_.backoff, failures, ack.error().retry_after_s, Random());
      if (!IsTransient(ack.error()) || Clock::now() + milliseconds(delay) >= lease_ends) {
        result = "ack_undelivered";
        detail = ack.error().detail;
        break;
      }
      spdlog::warn("worker={} id={}: ack failed: {}; retrying in {} ms", options_.worker_id, job.id,
                   ack.error().detail, delay);
      std::this_thread::sleep_for(milliseconds(delay));  // a backoff, not a wait for an event
    }
  }
  const StopReason reason = run.context->reason();
  std::string line = "job worker=" + LogValue(options_.worker_id) + " id=" + job.id +
                     " queue=" + LogValue(job.queue) + " tenant=" + LogValue(job.tenant) +
                     " attempt=" + std::to_string(job.attempt) +
                     " outcome=" + (outcome.succeeded ? "succeeded" : "failed") +
                     " state=" + result + " duration_ms=" + std::to_string(duration_ms);
  if (reason != StopReason::kNone) line += " stopped=" + std::string(StopReasonName(reason));
  if (!detail.empty()) line += " error=" + LogValue(detail);
  if (result == "succeeded" || result == "queued") {
    spdlog::info("{}", line);
  } else {
    spdlog::warn("{}", line);
  }
}

}  // namespace sluice
