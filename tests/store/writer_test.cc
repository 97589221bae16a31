// The group-committing Writer (store/writer.h): concurrent callers share transactions,
// and an operation that fails inside a batch leaves nothing behind without undoing the
// others (invariant 1).
#include "store/sqlite/writer.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "store/sqlite/sqlite.h"
#include "tests/store/store_fixture.h"
#include "tests/testutil/subprocess.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

using testing::Eventually;
using testing::MakePolicy;
using testing::StoreFixture;
using testing::TempDir;

// A database file with one table, t (k INTEGER PRIMARY KEY), opened for a Writer at the
// given synchronous level.
std::unique_ptr<sqlite::Db> KeyTable(const TempDir& dir, const std::string& synchronous) {
  auto db = std::make_unique<sqlite::Db>(dir.File("w.db"), synchronous, 5000);
  db->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)");
  return db;
}

// Inserts `k` into table t through the writer.
Status InsertKey(Writer& w, int64_t k, Writer::Sync sync = Writer::Sync::kDurable) {
  return w.Run<Ok>(
      [k](sqlite::Db& d) -> Status {
        d.Prepare("INSERT INTO t (k) VALUES (?)").BindAll(k).Exec();
        return Ok{};
      },
      sync);
}

// Counts the rows of table t through the writer.
Result<int64_t> CountKeys(Writer& w) {
  return w.Run<int64_t>([](sqlite::Db& d) -> Result<int64_t> {
    sqlite::Stmt s = d.Prepare("SELECT count(*) FROM t");
    s.Step();
    return s.Int(0);
  });
}

// Holds the writer's first flush of the WAL until Release(): set before the first
// operation. With `fail_errno`, that flush then fails with it.
class HeldFlush {
 public:
  explicit HeldFlush(Writer& w, int fail_errno = 0) : released_(release_.get_future().share()) {
    w.SetFlushForTesting([this, fail_errno](int fd) {
      if (++flushes_ == 1) {
        in_flush_.set_value();
        released_.wait();
        if (fail_errno != 0) {
          errno = fail_errno;
          return -1;
        }
      }
      return ::fdatasync(fd);
    });
  }
  void WaitUntilFlushing() { in_flush_.get_future().wait(); }
  void Release() { release_.set_value(); }

 private:
  std::promise<void> in_flush_, release_;
  std::shared_future<void> released_;
  std::atomic<int> flushes_{0};
};

// SetAfterCommit (the Checkpointer's tail): the work runs after a commit only when due,
// once that commit's callers heard back, outside any transaction, and holding the
// connection, so that no other operation starts before it ends.
TEST_CASE("Work after a commit follows its answers and precedes every other operation",
          "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  std::atomic<bool> due{false};
  std::atomic<int> runs{0};
  std::atomic<bool> answered{false}, answered_before_run{false}, in_txn{true};
  std::atomic<bool> run_done{false};
  std::promise<void> running, resume;
  std::shared_future<void> resumed = resume.get_future().share();
  w.SetAfterCommit([&] { return due.load(); },
                   [&](sqlite::Db& d) {
                     due = false;
                     ++runs;
                     answered_before_run = answered.load();
                     in_txn = d.InTransaction();
                     running.set_value();
                     resumed.wait();
                     run_done = true;
                   });
  REQUIRE(InsertKey(w, 1).ok());
  CHECK(runs == 0);  // not due

  due = true;
  std::promise<Status> second;
  w.RunAsync<Ok>(
      [](sqlite::Db& d) -> Status {
        d.Prepare("INSERT INTO t (k) VALUES (2)").Exec();
        return Ok{};
      },
      [&](Status st) {
        answered = true;
        second.set_value(st);
      });
  running.get_future().wait();
  CHECK(answered_before_run);
  CHECK_FALSE(in_txn);
  CHECK(second.get_future().get().ok());

  // Another operation waits for the work to end.
  std::atomic<bool> third_ran{false}, third_saw_run_done{false};
  auto third = std::async(std::launch::async, [&] {
    return w.Run<Ok>([&](sqlite::Db& d) -> Status {
      third_saw_run_done = run_done.load();
      third_ran = true;
      d.Prepare("INSERT INTO t (k) VALUES (3)").Exec();
      return Ok{};
    });
  });
  CHECK(third.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout);
  CHECK_FALSE(third_ran);
  resume.set_value();
  CHECK(third.get().ok());
  CHECK(third_saw_run_done);
  CHECK(runs == 1);
  CHECK(CountKeys(w).value() == 3);
}

TEST_CASE("Sequential Run calls each commit on their own", "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  for (int64_t k = 0; k < 5; ++k) REQUIRE(InsertKey(w, k).ok());
  // Nobody else was waiting: one transaction per operation.
  CHECK(w.commits() == 5);
  CHECK(w.operations() == 5);
}

// An operation queued just as the committer, finding nothing to do, goes to sleep must
// still be committed. Its caller may find the connection taken and leave the operation
// to the committer, so a wake-up lost in that moment strands it for good (a lone
// caller's next operation once never came back in CI). The hook queues an operation
// from another thread in exactly that moment.
TEST_CASE("An operation queued just as the committer goes to sleep is committed", "[writer]") {
  TempDir dir;
  std::promise<Status> late_done;  // declared before the writer: outlives any answer
  struct Joined : std::thread {
    using std::thread::thread;
    ~Joined() {
      if (joinable()) join();
    }
  };
  std::promise<void> go;
  std::promise<void> queued;
  std::future<void> queued_future = queued.get_future();
  Writer w(KeyTable(dir, "NORMAL"));
  Joined caller([&] {
    go.get_future().wait_for(std::chrono::seconds(10));  // bounded: a test never hangs
    w.RunAsync<Ok>(
        [](sqlite::Db& d) -> Status {
          d.Exec("INSERT INTO t (k) VALUES (2)");
          return Ok{};
        },
        [&](Status st) { late_done.set_value(st); }, Writer::Sync::kCommitted);
    queued.set_value();
  });
  std::atomic<bool> fired{false};
  w.SetBeforeSleepForTesting([&] {
    if (fired.exchange(true)) return;
    go.set_value();
    // The caller finds the connection taken and returns at once, or finds the queue
    // taken and goes on only once the committer sleeps: wait for the first, not forever
    // for the second.
    queued_future.wait_for(std::chrono::milliseconds(100));
  });
  REQUIRE(InsertKey(w, 1, Writer::Sync::kCommitted).ok());  // then the committer sleeps
  std::future<Status> late = late_done.get_future();
  REQUIRE(late.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(late.get().ok());
  CHECK(fired);
  CHECK(w.operations() == 2);
}

TEST_CASE("Only batches holding a durable operation wait for the disk", "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  auto insert = [&](int64_t k, Writer::Sync sync) { return InsertKey(w, k, sync); };
  REQUIRE(insert(1, Writer::Sync::kCommitted).ok());
  REQUIRE(insert(2, Writer::Sync::kCommitted).ok());
  CHECK(w.commits() == 2);
  CHECK(w.flushed_commits() == 0);
  REQUIRE(insert(3, Writer::Sync::kDurable).ok());
  REQUIRE(insert(4, Writer::Sync::kCommitted).ok());
  CHECK(w.commits() == 4);
  CHECK(w.flushed_commits() == 1);
  // The committed-only rows are there for every reader.
  auto count = CountKeys(w);
  REQUIRE(count.ok());
  CHECK(count.value() == 4);
}

TEST_CASE("A connection that never flushes is left alone", "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "NORMAL"));
  REQUIRE(w.Run<Ok>([](sqlite::Db& d) -> Status {
             d.Exec("INSERT INTO t (k) VALUES (1)");
             return Ok{};
           }).ok());
  CHECK(w.commits() == 1);
  CHECK(w.flushed_commits() == 0);
  CHECK_FALSE(w.pipelined());
}

TEST_CASE("With synchronous=FULL the committer flushes, once per durable caller at least",
          "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  REQUIRE(w.pipelined());
  auto insert = [&](int64_t k, Writer::Sync sync) { return InsertKey(w, k, sync); };
  // A durable caller hears back only after a flush that began after its commit: with
  // nobody else writing, one flush each.
  for (int64_t k = 1; k <= 3; ++k) {
    REQUIRE(insert(k, Writer::Sync::kDurable).ok());
    CHECK(w.flushes() == static_cast<uint64_t>(k));
  }
  // Nothing waits for a flush: a committed-only operation is answered without one.
  REQUIRE(insert(4, Writer::Sync::kCommitted).ok());
  CHECK(w.flushes() == 3);
  CHECK(w.commits() == 4);
  CHECK(w.flushed_commits() == 3);

  // Concurrent durable callers share flushes.
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50;
  std::atomic<int> failures{0};
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          if (!insert(100 + t * kPerThread + i, Writer::Sync::kDurable).ok()) ++failures;
        }
      });
    }
    for (std::thread& th : threads) th.join();
  }
  CHECK(failures.load() == 0);
  CAPTURE(w.flushes(), w.commits());
  CHECK(w.flushes() <= w.commits());
  CHECK(w.flushes() < 3 + kThreads * kPerThread);
}

TEST_CASE("Concurrent submits all succeed and are group-committed", "[writer]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1000, 1'000'000));
  const uint64_t commits_before = f.sqlite().writer().commits();
  const uint64_t ops_before = f.sqlite().writer().operations();

  constexpr int kThreads = 16;
  constexpr int kPerThread = 200;
  std::vector<std::vector<std::string>> ids(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::string> first_error(kThreads);
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          NewJob j;
          j.queue = "export";
          j.tenant = "tenant-" + std::to_string(t % 4);
          j.payload = "{\"t\":" + std::to_string(t) + ",\"i\":" + std::to_string(i) + "}";
          auto r = f.store().Submit(j, f.now());
          if (!r.ok() || r.value().decision.outcome != AdmissionOutcome::kAdmitted ||
              !r.value().job) {
            if (failures.fetch_add(1) == 0)
              first_error[t] = r.ok() ? "not admitted" : r.error().detail;
            continue;
          }
          ids[t].push_back(r.value().job->id);
        }
      });
    }
    for (std::thread& th : threads) th.join();
  }
  std::string err;
  for (const std::string& e : first_error) err += e;
  INFO(err);
  REQUIRE(failures.load() == 0);

  std::set<std::string> unique;
  for (const auto& v : ids) unique.insert(v.begin(), v.end());
  CHECK(unique.size() == static_cast<size_t>(kThreads * kPerThread));
  auto q = f.store().GetQueue("export");
  REQUIRE(q.ok());
  CHECK(q.value().stats.queued == kThreads * kPerThread);

  const uint64_t commits = f.sqlite().writer().commits() - commits_before;
  const uint64_t ops = f.sqlite().writer().operations() - ops_before;
  CAPTURE(commits, ops);
  CHECK(ops == static_cast<uint64_t>(kThreads * kPerThread));
  CHECK(commits < ops);  // some transactions carried more than one submit
}

TEST_CASE("A failed flush fails its callers and every later one until restart", "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  REQUIRE(w.pipelined());
  std::atomic<int> flushes{0};
  w.SetFlushForTesting([&flushes](int fd) {
    if (++flushes == 2) {
      errno = EIO;  // the disk lost a write
      return -1;
    }
    return ::fdatasync(fd);
  });
  auto insert = [&](int64_t k, Writer::Sync sync) { return InsertKey(w, k, sync); };
  REQUIRE(insert(1, Writer::Sync::kDurable).ok());
  auto lost = insert(2, Writer::Sync::kDurable);
  REQUIRE_FALSE(lost.ok());
  CHECK(lost.error().code == ErrorCode::kStorageUnavailable);
  // The kernel may have dropped pages of the WAL: no later flush proves anything, so
  // nothing more is acknowledged as durable, though the disk answers again.
  auto after = insert(3, Writer::Sync::kDurable);
  REQUIRE_FALSE(after.ok());
  CHECK(after.error().code == ErrorCode::kStorageUnavailable);
  CHECK(after.error().detail.find("restart") != std::string::npos);
  // Nor as committed: a lease answered now could hand out a job whose submit failed.
  auto committed = insert(4, Writer::Sync::kCommitted);
  REQUIRE_FALSE(committed.ok());
  CHECK(committed.error().code == ErrorCode::kStorageUnavailable);
  CHECK(flushes.load() == 2);
}

// Invariant 3 for an operation that fails on its own: its answer (a conflict here) tells
// of a commit whose flush has not ended, so it waits for that flush; and since the flush
// fails, the answer is storage_unavailable, not a conflict with a change that is lost.
TEST_CASE("An operation that fails on its own is answered only once what it saw is durable",
          "[writer]") {
  TempDir dir;
  std::promise<Status> first_done, second_done;  // declared before the writer: outlive it
  Writer w(KeyTable(dir, "FULL"));
  REQUIRE(w.pipelined());
  HeldFlush held(w, EIO);  // the first commit never becomes durable
  w.RunAsync<Ok>(
      [](sqlite::Db& d) -> Status {
        d.Exec("INSERT INTO t (k) VALUES (1)");
        return Ok{};
      },
      [&](Status st) { first_done.set_value(st); });
  held.WaitUntilFlushing();  // k = 1 is committed, its flush held
  w.RunAsync<Ok>(
      [](sqlite::Db& d) -> Status {
        sqlite::Stmt s = d.Prepare("SELECT count(*) FROM t WHERE k = 1");
        s.Step();
        if (s.Int(0) > 0) return MakeError(ErrorCode::kConflict, "k = 1 exists");
        d.Exec("INSERT INTO t (k) VALUES (1)");
        return Ok{};
      },
      [&](Status st) { second_done.set_value(st); });
  std::future<Status> first = first_done.get_future();
  std::future<Status> second = second_done.get_future();
  // Give a wrong early answer time to arrive: it would within microseconds.
  CHECK(second.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  CHECK(first.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  held.Release();
  Status s1 = first.get();
  Status s2 = second.get();
  REQUIRE_FALSE(s1.ok());
  CHECK(s1.error().code == ErrorCode::kStorageUnavailable);
  REQUIRE_FALSE(s2.ok());
  CHECK(s2.error().code == ErrorCode::kStorageUnavailable);
}

TEST_CASE("An operation that fails on its own is answered with its own error once durable",
          "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  REQUIRE(InsertKey(w, 1).ok());
  auto dup = InsertKey(w, 1);  // a primary key conflict: its own error
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().code != ErrorCode::kStorageUnavailable);
  CHECK(InsertKey(w, 2).ok());
}

TEST_CASE("A transaction bound of 0 is taken as 1", "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "NORMAL"), /*max_batch=*/0);
  for (int64_t k = 0; k < 3; ++k) REQUIRE(InsertKey(w, k, Writer::Sync::kCommitted).ok());
  CHECK(w.operations() == 3);
}

TEST_CASE(
    "Operations run into the next transaction while a flush is under way, and are "
    "answered after it",
    "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  REQUIRE(w.pipelined());
  HeldFlush held(w);                  // the first flush waits until the test lets it go
  std::vector<std::string> answered;  // in the order the callers heard back
  std::mutex mu;
  std::promise<void> both;
  auto note = [&](const std::string& who, const Status& st) {
    std::lock_guard lock(mu);
    answered.push_back(who + (st.ok() ? "" : " failed"));
    if (answered.size() == 2) both.set_value();
  };
  auto insert = [](int64_t k) {
    return [k](sqlite::Db& d) -> Status {
      d.Prepare("INSERT INTO t (k) VALUES (?)").BindAll(k).Exec();
      return Ok{};
    };
  };
  w.RunAsync<Ok>(insert(1), [&](Status st) { note("durable", st); });
  held.WaitUntilFlushing();  // its commit is being flushed

  // A committed-only operation now runs at once, in the next transaction...
  bool ran = false;
  w.RunAsync<Ok>(
      [&](sqlite::Db& d) -> Status {
        ran = true;
        return insert(2)(d);
      },
      [&](Status st) { note("committed", st); }, Writer::Sync::kCommitted);
  CHECK(ran);
  // ...but nobody hears back before the flush ends: not the durable caller, and not
  // the committed-only one, whose answer could reveal the unflushed row 1.
  {
    std::lock_guard lock(mu);
    CHECK(answered.empty());
  }
  held.Release();
  both.get_future().wait();
  CHECK(answered == std::vector<std::string>{"durable", "committed"});
  CHECK(w.commits() == 2);
  CHECK(w.flushes() == 1);
}

TEST_CASE("A caller never waits for the connection: its holder runs the operation", "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  std::promise<void> first_running, let_go;
  std::shared_future<void> go = let_go.get_future().share();
  std::thread::id first_thread, second_thread;
  std::promise<Status> first_done, second_done;
  std::thread holder([&] {
    first_thread = std::this_thread::get_id();
    w.RunAsync<Ok>(
        [&](sqlite::Db& d) -> Status {
          first_running.set_value();
          go.wait();  // holds the connection until the test lets go
          d.Exec("INSERT INTO t (k) VALUES (1)");
          return Ok{};
        },
        [&](Status st) { first_done.set_value(st); });
  });
  first_running.get_future().wait();
  bool ran = false;
  w.RunAsync<Ok>(
      [&](sqlite::Db& d) -> Status {
        ran = true;
        second_thread = std::this_thread::get_id();
        d.Exec("INSERT INTO t (k) VALUES (2)");
        return Ok{};
      },
      [&](Status st) { second_done.set_value(st); });
  // Back at once, with the operation queued, not run.
  CHECK_FALSE(ran);
  let_go.set_value();
  CHECK(first_done.get_future().get().ok());
  CHECK(second_done.get_future().get().ok());
  holder.join();
  CHECK(ran);
  CHECK(second_thread == first_thread);  // run by the thread that held the connection
  auto count = CountKeys(w);
  REQUIRE(count.ok());
  CHECK(count.value() == 2);
}

TEST_CASE("Operations that find the transaction full run in the next one", "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"), /*max_batch=*/2);
  REQUIRE(w.pipelined());
  HeldFlush held(w);
  constexpr int kOps = 5;
  std::vector<bool> ran(kOps, false);
  std::vector<uint64_t> commits_before(kOps, 0);
  std::vector<std::promise<Status>> done(kOps);
  auto submit = [&](int i) {
    w.RunAsync<Ok>(
        [&, i](sqlite::Db& d) -> Status {
          ran[i] = true;
          commits_before[i] = w.commits();
          d.Prepare("INSERT INTO t (k) VALUES (?)").BindAll(int64_t{i}).Exec();
          return Ok{};
        },
        [&, i](Status st) { done[i].set_value(st); });
  };
  submit(0);
  held.WaitUntilFlushing();  // commit 1 (op 0) is being flushed
  for (int i = 1; i < kOps; ++i) submit(i);
  // Ops 1 and 2 fill the next transaction; 3 and 4 wait for room.
  CHECK(ran == std::vector<bool>{true, true, true, false, false});
  held.Release();
  for (int i = 0; i < kOps; ++i) CHECK(done[i].get_future().get().ok());
  CHECK(ran == std::vector<bool>(kOps, true));
  CHECK(commits_before == std::vector<uint64_t>{0, 1, 1, 2, 2});
  CHECK(w.commits() == 3);
  CHECK(w.operations() == kOps);
}

TEST_CASE("An operation that throws fails alone, leaves nothing behind and holds no lock",
          "[writer]") {
  TempDir dir;
  const std::string path = dir.File("w.db");
  Writer w(KeyTable(dir, "FULL"));
  std::function<void()> bug;
  SECTION("a std::exception") {
    bug = [] { throw std::runtime_error("a bug after writing"); };
  }
  SECTION("anything else") {
    bug = [] { throw 42; };
  }
  auto bad = w.Run<Ok>([&bug](sqlite::Db& d) -> Status {
    d.Exec("INSERT INTO t (k) VALUES (1)");
    bug();
    return Ok{};
  });
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::kInternal);
  // Nobody else wrote: the write lock is free for another connection at once.
  sqlite::Db other(path, "FULL", /*busy_timeout_ms=*/0);
  CHECK_NOTHROW(other.Exec("INSERT INTO t (k) VALUES (2)"));
  REQUIRE(InsertKey(w, 3).ok());
  std::set<int64_t> keys;
  sqlite::Stmt s = other.Prepare("SELECT k FROM t");
  while (s.Step()) keys.insert(s.Int(0));
  CHECK(keys == std::set<int64_t>{2, 3});
}

TEST_CASE("The first operation of a transaction that returns an error leaves nothing behind",
          "[writer]") {
  TempDir dir;
  const std::string path = dir.File("w.db");
  Writer w(KeyTable(dir, "FULL"));
  auto bad = w.Run<Ok>([](sqlite::Db& d) -> Status {
    d.Exec("INSERT INTO t (k) VALUES (1)");
    d.Exec("INSERT INTO t (k) VALUES (4)");
    return MakeError(ErrorCode::kConflict, "changed its mind after writing");
  });
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::kConflict);
  REQUIRE(InsertKey(w, 1).ok());  // the same key again: the first insert is gone
  REQUIRE(InsertKey(w, 3).ok());
  sqlite::Db other(path, "FULL", /*busy_timeout_ms=*/0);
  std::set<int64_t> keys;
  sqlite::Stmt s = other.Prepare("SELECT k FROM t");
  while (s.Step()) keys.insert(s.Int(0));
  CHECK(keys == std::set<int64_t>{1, 3});
}

enum class OpKind { kGood, kReturnsError, kThrows };

TEST_CASE("A failing operation inside a batch does not undo the others", "[writer]") {
  TempDir dir;
  const std::string path = dir.File("w.db");
  {
    sqlite::Db setup(path, "FULL", 5000);
    setup.Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)");
  }
  Writer w(std::make_unique<sqlite::Db>(path, "FULL", 5000));

  constexpr int kThreads = 12;
  std::set<int64_t> committed_expected;
  bool shared_batch_seen = false;
  for (int round = 0; round < 20 && !shared_batch_seen; ++round) {
    CAPTURE(round);
    // A first operation holds the writer until every thread is about to call Run, so
    // that their operations queue up behind it and (mostly) share the next batch.
    std::latch arrived(kThreads + 1);
    std::thread blocker([&] {
      auto r = w.Run<Ok>([&](sqlite::Db&) -> Status {
        arrived.arrive_and_wait();
        return Ok{};
      });
      (void)r;
    });
    std::vector<OpKind> kinds(kThreads);
    std::vector<uint64_t> batch_of(kThreads, 0);
    std::vector<std::optional<Error>> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      kinds[t] = t % 3 == 1 ? OpKind::kReturnsError : t % 3 == 2 ? OpKind::kThrows : OpKind::kGood;
      threads.emplace_back([&, t] {
        const int64_t key = round * 1000 + t;
        arrived.arrive_and_wait();
        auto r = w.Run<Ok>([&, key](sqlite::Db& db) -> Status {
          batch_of[t] = w.commits();  // batches committed before this one = its batch number
          db.Prepare("INSERT INTO t (k) VALUES (?)").BindAll(key).Exec();
          if (kinds[t] == OpKind::kReturnsError) {
            return MakeError(ErrorCode::kConflict, "changed its mind after writing");
          }
          if (kinds[t] == OpKind::kThrows) {
            db.Prepare("INSERT INTO t (k) VALUES (?)").BindAll(key).Exec();  // duplicate key
          }
          return Ok{};
        });
        if (!r.ok()) errors[t] = r.error();
      });
    }
    for (std::thread& th : threads) th.join();
    blocker.join();

    std::set<uint64_t> batches_with_failure, batches_with_success;
    for (int t = 0; t < kThreads; ++t) {
      CAPTURE(t);
      switch (kinds[t]) {
        case OpKind::kGood:
          CHECK_FALSE(errors[t]);
          committed_expected.insert(round * 1000 + t);
          batches_with_success.insert(batch_of[t]);
          break;
        case OpKind::kReturnsError:
          REQUIRE(errors[t]);
          CHECK(errors[t]->code == ErrorCode::kConflict);
          batches_with_failure.insert(batch_of[t]);
          break;
        case OpKind::kThrows:
          REQUIRE(errors[t]);
          CHECK(errors[t]->code == ErrorCode::kInternal);  // a constraint is a bug, not storage
          batches_with_failure.insert(batch_of[t]);
          break;
      }
    }
    for (uint64_t b : batches_with_failure) {
      shared_batch_seen = shared_batch_seen || batches_with_success.count(b) > 0;
    }
  }
  // The scenario did put failing and succeeding operations in one transaction.
  CHECK(shared_batch_seen);

  // On disk, read by another connection: every good key, no failed one.
  sqlite::Db reader(path, "FULL", 5000);
  std::set<int64_t> on_disk;
  {
    sqlite::Stmt s = reader.Prepare("SELECT k FROM t");
    while (s.Step()) on_disk.insert(s.Int(0));
  }
  CHECK(on_disk == committed_expected);
}

// A completions executor that keeps what it is given until the test runs it.
class HeldTasks {
 public:
  Writer::Executor executor() {
    return [this](std::function<void()> fn) {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(fn));
    };
  }
  size_t size() {
    std::lock_guard lock(mu_);
    return tasks_.size();
  }
  // Runs what is held, and what that adds, on this thread; returns how many ran.
  size_t RunAll() {
    size_t ran = 0;
    for (;;) {
      std::vector<std::function<void()>> now;
      {
        std::lock_guard lock(mu_);
        now.swap(tasks_);
      }
      if (now.empty()) return ran;
      for (auto& fn : now) fn();
      ran += now.size();
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::function<void()>> tasks_;
};

// Inserts `k` through RunAsync, recording its answer in `done`.
void InsertKeyAsync(Writer& w, int64_t k, std::vector<Status>* done) {
  w.RunAsync<Ok>(
      [k](sqlite::Db& d) -> Status {
        d.Prepare("INSERT INTO t (k) VALUES (?)").BindAll(k).Exec();
        return Ok{};
      },
      [done](Status st) { done->push_back(st); });
}

int64_t CountRowsInFile(const std::string& path) {
  sqlite::Db db(path, "NORMAL", 5000);
  sqlite::Stmt s = db.Prepare("SELECT count(*) FROM t");
  s.Step();
  return s.Int(0);
}

TEST_CASE("With nothing to flush, the caller's executor commits: no hand-off to a thread",
          "[writer]") {
  TempDir dir;
  HeldTasks tasks;  // declared before the writer: outlives it
  std::vector<Status> done;
  std::vector<std::thread::id> committed_on;
  {
    Writer w(KeyTable(dir, "NORMAL"), 512, tasks.executor(), [&](double, size_t ops, bool flushed) {
      committed_on.push_back(std::this_thread::get_id());
      CHECK(ops == 3);
      CHECK_FALSE(flushed);
    });
    for (int64_t k = 1; k <= 3; ++k) InsertKeyAsync(w, k, &done);
    // All three ran in one transaction; one commit is posted, none made.
    CHECK(tasks.size() == 1);
    CHECK(w.commits() == 0);
    CHECK(done.empty());
    CHECK(tasks.RunAll() == 4);  // the commit, then one call for each answer
    CHECK(w.commits() == 1);
    CHECK(w.operations() == 3);
    REQUIRE(done.size() == 3);
    for (const Status& st : done) CHECK(st.ok());
    REQUIRE(committed_on.size() == 1);
    CHECK(committed_on[0] == std::this_thread::get_id());
    CHECK(CountRowsInFile(dir.File("w.db")) == 3);
  }
}

TEST_CASE("A Run() caller and a writer closing do not wait for the executor", "[writer]") {
  TempDir dir;
  HeldTasks tasks;  // never run while the writer lives
  std::vector<Status> done;
  {
    Writer w(KeyTable(dir, "NORMAL"), 512, tasks.executor());
    // Run() blocks its caller, which may be the executor's only thread: the committer
    // commits for it.
    REQUIRE(InsertKey(w, 1).ok());
    CHECK(w.commits() == 1);
    InsertKeyAsync(w, 2, &done);
    CHECK(tasks.size() == 1);  // its commit is posted, and never runs in time
  }
  // The writer committed it as it closed; the posted commit finds no writer.
  CHECK(tasks.RunAll() == 2);
  REQUIRE(done.size() == 1);
  CHECK(done[0].ok());
  CHECK(CountRowsInFile(dir.File("w.db")) == 2);
}

TEST_CASE("Concurrent callers on executor threads all commit, grouped, with nothing left",
          "[writer]") {
  TempDir dir;
  HeldTasks tasks;
  std::mutex done_mu;
  std::vector<Status> done;
  constexpr int kThreads = 4, kPerThread = 250;
  {
    Writer w(KeyTable(dir, "NORMAL"), 512, tasks.executor());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          w.RunAsync<Ok>(
              [k = t * kPerThread + i](sqlite::Db& d) -> Status {
                d.Prepare("INSERT INTO t (k) VALUES (?)").BindAll(k).Exec();
                return Ok{};
              },
              [&](Status st) {
                std::lock_guard lock(done_mu);
                done.push_back(st);
              });
          if (i % 10 == 0) tasks.RunAll();  // as an event loop runs what is posted
        }
      });
    }
    for (std::thread& th : threads) th.join();
    tasks.RunAll();
    // Whatever callers left queued while another held the connection was run by the
    // holder and committed: every answer is in, with no committer to wake.
    std::lock_guard lock(done_mu);
    REQUIRE(done.size() == static_cast<size_t>(kThreads * kPerThread));
    for (const Status& st : done) CHECK(st.ok());
    CHECK(w.operations() == static_cast<uint64_t>(kThreads * kPerThread));
    CHECK(w.commits() < w.operations());
  }
  CHECK(CountRowsInFile(dir.File("w.db")) == kThreads * kPerThread);
}

// What ran, in order, with the commits made before each ran and its thread.
struct RunLog {
  std::mutex mu;
  std::vector<std::string> order;
  std::map<std::string, uint64_t> commits_before;
  std::map<std::string, std::thread::id> thread;
  void Ran(const std::string& name, const Writer& w) {
    std::lock_guard lock(mu);
    order.push_back(name);
    commits_before[name] = w.commits();
    thread[name] = std::this_thread::get_id();
  }
};

// An operation that logs itself and inserts `k`.
std::function<Result<Ok>(sqlite::Db&)> Logged(RunLog& log, const Writer& w, std::string name,
                                              int64_t k) {
  return [&log, &w, name, k](sqlite::Db& d) -> Result<Ok> {
    log.Ran(name, w);
    d.Prepare("INSERT INTO t (k) VALUES (?)").BindAll(k).Exec();
    return Ok{};
  };
}

TEST_CASE("Operations in turn run before those queued behind, whenever they were queued",
          "[writer]") {
  TempDir dir;
  Writer w(KeyTable(dir, "FULL"));
  RunLog log;
  std::promise<void> holding, let_go;
  std::shared_future<void> go = let_go.get_future().share();
  std::promise<Status> a_done, c_done;
  std::thread holder([&] {
    w.RunAsync<Ok>(
        [&](sqlite::Db& d) -> Status {
          log.Ran("A", w);
          holding.set_value();
          go.wait();  // holds the connection until the test lets go
          d.Exec("INSERT INTO t (k) VALUES (1)");
          return Ok{};
        },
        [&](Status st) { a_done.set_value(st); });
  });
  holding.get_future().wait();
  std::vector<Result<Ok>> passes;
  std::thread behind([&] {
    passes = w.RunEachBehind<Ok>({Logged(log, w, "B1", 2), Logged(log, w, "B2", 3)});
  });
  REQUIRE(Eventually([&] { return w.QueuedBehindForTesting() == 2; }, std::chrono::seconds(10)));
  w.RunAsync<Ok>(Logged(log, w, "C", 4), [&](Status st) { c_done.set_value(st); });
  let_go.set_value();
  CHECK(a_done.get_future().get().ok());
  CHECK(c_done.get_future().get().ok());
  behind.join();
  holder.join();
  REQUIRE(passes.size() == 2);
  CHECK(passes[0].ok());
  CHECK(passes[1].ok());
  // C came last but runs before the two queued behind, which keep their order.
  CHECK(log.order == std::vector<std::string>{"A", "C", "B1", "B2"});
  auto count = CountKeys(w);
  REQUIRE(count.ok());
  CHECK(count.value() == 4);
}

TEST_CASE("A holder lets go for a waiting commit rather than start a pass left behind",
          "[writer]") {
  TempDir dir;
  HeldTasks tasks;  // declared before the writer: outlives it
  RunLog log;
  std::vector<Status> done0;
  std::promise<Status> a_done, c_done;
  std::vector<Result<Ok>> passes;
  std::atomic<bool> passes_back{false};
  {
    Writer w(KeyTable(dir, "FULL"), 512, tasks.executor());
    REQUIRE(w.pipelined());
    HeldFlush held(w);
    InsertKeyAsync(w, 0, &done0);
    held.WaitUntilFlushing();  // commit 1 (key 0) is being flushed
    std::promise<void> holding, let_go;
    std::shared_future<void> go = let_go.get_future().share();
    std::thread holder([&] {
      w.RunAsync<Ok>(
          [&](sqlite::Db& d) -> Status {
            log.Ran("A", w);
            holding.set_value();
            go.wait();
            d.Exec("INSERT INTO t (k) VALUES (1)");
            return Ok{};
          },
          [&](Status st) { a_done.set_value(st); });
    });
    holding.get_future().wait();
    std::thread behind([&] {
      passes = w.RunEachBehind<Ok>({Logged(log, w, "B", 2)});
      passes_back = true;
    });
    REQUIRE(Eventually([&] { return w.QueuedBehindForTesting() == 1; }, std::chrono::seconds(10)));
    w.RunAsync<Ok>(Logged(log, w, "C", 3), [&](Status st) { c_done.set_value(st); });
    // The flush ends; the committer wants the connection for the next commit.
    held.Release();
    REQUIRE(Eventually([&] { return w.CommitWantedForTesting(); }, std::chrono::seconds(10)));
    let_go.set_value();  // A ends: its thread runs C, then lets go instead of running B
    holder.join();
    // Answers, and the run of what was left queued, come through the executor.
    REQUIRE(Eventually(
        [&] {
          tasks.RunAll();
          return passes_back.load();
        },
        std::chrono::seconds(10)));
    behind.join();
    tasks.RunAll();
    CHECK(a_done.get_future().get().ok());
    CHECK(c_done.get_future().get().ok());
    REQUIRE(passes.size() == 1);
    CHECK(passes[0].ok());
    REQUIRE(done0.size() == 1);
    CHECK(done0[0].ok());
    CHECK(log.order == std::vector<std::string>{"A", "C", "B"});
    // A and C in commit 2 (C run by A's thread, as ever); B in commit 3, run on the
    // executor while commit 2 flushed.
    CHECK(log.commits_before["A"] == 1);
    CHECK(log.commits_before["C"] == 1);
    CHECK(log.commits_before["B"] == 2);
    CHECK(log.thread["C"] == log.thread["A"]);
    CHECK(log.thread["B"] == std::this_thread::get_id());
    CHECK(w.commits() == 3);
  }
  CHECK(CountRowsInFile(dir.File("w.db")) == 4);
}

}  // namespace
}  // namespace sluice
