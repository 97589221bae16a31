#include "store/sqlite/checkpointer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace sluice {
namespace {

// Background passes stop once at most this many frames are left for the writer to copy
// (about one commit at a million queued jobs), or after kMaxPasses passes.
constexpr int kTailFrames = 64;
constexpr int kMaxPasses = 8;

}  // namespace

Checkpointer::Checkpointer(const std::string& path, sqlite::Db& writer_db, int wal_pages)
    : path_(path), wal_pages_(wal_pages) {
  writer_db.Exec("PRAGMA wal_autocheckpoint=0");
  sqlite3_wal_hook(writer_db.raw(), &Checkpointer::WalHook, this);
  thread_ = std::thread([this] { Loop(); });
}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (db_fd_ >= 0) ::close(db_fd_);
}

int Checkpointer::WalHook(void* self, sqlite3* /*db*/, const char* /*name*/, int pages) {
  auto* c = static_cast<Checkpointer*>(self);
  c->wal_frames_.store(pages, std::memory_order_relaxed);
  if (c->tail_wanted_.exchange(false, std::memory_order_relaxed)) {
    // Not here, inside the COMMIT: the tail's flushes (the WAL, then the database) would
    // delay every caller of this commit by 1.4 ms at the median, 4.6 ms at worst
    // (bench/scale.sh at a million jobs). The writer copies it once they heard back.
    c->tail_due_ = true;
    return SQLITE_OK;
  }
  // The WAL restarted from its beginning: the last checkpoint emptied it.
  if (pages < c->pages_at_request_) c->pages_at_request_ = 0;
  // Ask again only once the WAL has grown by half a threshold since the last request:
  // while readers keep the WAL from restarting, its length stays above the threshold,
  // and a checkpoint per commit would cost two fsyncs per commit.
  if (pages >= c->wal_pages_ && pages - c->pages_at_request_ >= c->wal_pages_ / 2) {
    c->pages_at_request_ = pages;
    {
      std::lock_guard lock(c->mu_);
      c->wanted_ = true;
    }
    c->cv_.notify_one();
  }
  return SQLITE_OK;
}

void Checkpointer::CopyTail(sqlite::Db& writer_db) {
  tail_due_ = false;
  // Copies what the background checkpoint left (it flushes the WAL first, then the
  // database). Readers still on old frames may keep the WAL from starting over; the
  // next background checkpoint asks again.
  int log = 0;
  int copied = 0;
  sqlite3_wal_checkpoint_v2(writer_db.raw(), "main", SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
}

void Checkpointer::FlushDatabase(sqlite::Db& db) {
  if (db_fd_ < 0) {
    const char* file = sqlite3_db_filename(db.raw(), "main");  // the file, not the URI
    if (file == nullptr || *file == '\0') return;
    db_fd_ = ::open(file, O_RDONLY | O_CLOEXEC);
    if (db_fd_ < 0) return;
  }
  while (::fdatasync(db_fd_) != 0 && errno == EINTR) {
  }
}

void Checkpointer::Loop() {
  std::unique_ptr<sqlite::Db> db;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return wanted_ || stopping_; });
      if (stopping_) return;
      wanted_ = false;
    }
    try {
      if (!db) db = std::make_unique<sqlite::Db>(path_, "FULL", 1000);
      // A pass copies the frames there when it began; the writer appends meanwhile, so
      // pass again until what is left is a short tail.
      int copied = 0;
      int rc = SQLITE_OK;
      for (int pass = 0; pass < kMaxPasses; ++pass) {
        int log = 0;
        rc = sqlite3_wal_checkpoint_v2(db->raw(), "main", SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
        if (rc != SQLITE_OK) break;
        if (wal_frames_.load(std::memory_order_relaxed) - copied <= kTailFrames) break;
      }
      if (rc != SQLITE_OK && rc != SQLITE_BUSY) throw sqlite::SqliteError(rc, "checkpoint");
      // SQLite flushes the database file in a checkpoint only when that checkpoint
      // copies the whole WAL, which under steady commits only the writer's tail does:
      // that flush would then write out every page these passes copied, with the writer
      // waiting. Flush them here instead, so the tail's flush has only the tail's pages
      // (should this flush fail, the tail's reports it: SQLite syncs there all the same).
      // The writer has gone on appending since: it copies the rest (see the header).
      if (rc == SQLITE_OK && copied > 0) {
        FlushDatabase(*db);
        tail_wanted_.store(true, std::memory_order_relaxed);
      }
    } catch (const sqlite::SqliteError&) {
      db.reset();  // storage trouble: try again on the next request
    }
  }
}

}  // namespace sluice
