#include "store/sqlite/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "common/time.h"

namespace sluice {
namespace {

std::string Resolved(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

std::string Errno(int e) { return std::strerror(e); }

// What the holder wrote into the lock file, on one line: "pid 1234, host h, since T".
// Empty while the holder is between taking the lock and writing (or wrote nothing).
std::string ReadHolder(int fd) {
  char buf[512];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string text(buf, static_cast<size_t>(n));
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    for (char& c : line) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    if (!line.empty()) {
      if (!out.empty()) out += ", ";
      out += line;
    }
    start = end + 1;
  }
  return out;
}

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

}  // namespace

std::string SqliteFileLock::LockPathFor(const std::string& db_path) {
  if (db_path.empty() || db_path == ":memory:") return "";
  if (std::string file = Resolved(db_path); !file.empty()) return file + ".lock";
  // Not there yet: its directory resolved, its name as given.
  const size_t slash = db_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : db_path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? db_path : db_path.substr(slash + 1);
  std::string resolved_dir = Resolved(dir);
  if (resolved_dir.empty()) return db_path + ".lock";  // no such directory: the open fails
  if (resolved_dir.back() != '/') resolved_dir += '/';
  return resolved_dir + name + ".lock";
}

Result<std::unique_ptr<SqliteFileLock>> SqliteFileLock::Acquire(const std::string& db_path) {
  std::string path = LockPathFor(db_path);
  if (path.empty()) return std::unique_ptr<SqliteFileLock>(new SqliteFileLock("", -1));
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    return MakeError(
        ErrorCode::kStorageUnavailable,
        "cannot open the lock file " + path + " of database " + db_path + ": " + Errno(e));
  }
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    if (e == EINTR) continue;
    if (e == EWOULDBLOCK) {
      std::string holder = ReadHolder(fd);
      close(fd);
      if (holder.empty()) holder = "pid unknown: it is just starting";
      return MakeError(ErrorCode::kConflict,
                       "database " + db_path + " is in use by another sluiced (" + holder +
                           "; lock file " + path +
                           "); SQLite allows one server per file; run several instances on "
                           "PostgreSQL: --db postgres://... (docs/operations.md, \"Moving from "
                           "SQLite to PostgreSQL\")");
    }
    close(fd);
    return MakeError(ErrorCode::kStorageUnavailable,
                     "cannot lock " + path + " (database " + db_path + "): " + Errno(e));
  }
  // Who holds it, for the refusal of the next one. Best effort: the lock is what counts.
  const std::string who = "pid " + std::to_string(getpid()) + "\nhost " + Hostname() + "\nsince " +
                          FormatRfc3339(WallNowMicros()) + "\n";
  if (ftruncate(fd, 0) == 0) {
    (void)!pwrite(fd, who.data(), who.size(), 0);
  }
  return std::unique_ptr<SqliteFileLock>(new SqliteFileLock(std::move(path), fd));
}

SqliteFileLock::~SqliteFileLock() {
  if (fd_ < 0) return;
  (void)!ftruncate(fd_, 0);  // still held: nobody reads a holder that is gone
  close(fd_);                // releases the lock
}

}  // namespace sluice
