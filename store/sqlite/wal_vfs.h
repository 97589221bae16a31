// A SQLite VFS that gathers each commit's WAL writes into one write system call.
//
// SQLite writes a WAL frame as two pwrite calls (a 24-byte header, then the page), so
// a commit that touches five pages costs ten system calls; on this project's virtual
// machines a system call is the writer's largest cost. This VFS wraps another one
// (the default, "unix") and changes only WAL files: it keeps consecutive writes in a
// buffer and hands them to the wrapped file as one write
//   - as soon as the frame that commits a transaction is complete, so the commit
//     sees any error of that write and nothing is published to readers (SQLite
//     updates the wal-index only after the frames are written) before it is in the
//     operating system's hands;
//   - before a write elsewhere in the file, and before any other call on the file
//     (read, sync, truncate, size, lock, file control, close);
//   - when the buffer reaches 256 KiB (in writes of at most 64 KiB: the unix VFS
//     takes no more per call).
// Other files (the database, the -shm index, journals) are the wrapped VFS's own.
// Durability is unchanged: the bytes reach the kernel in the same order before the
// same sync; only the number of calls changes.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::sqlite {

// Registers (once per name; not as the default) a coalescing VFS called `name` over
// the registered VFS `base` (nullptr: the default VFS) and returns `name`. Throws
// SqliteError if `base` does not exist.
const char* RegisterCoalescingWalVfs(const char* name = "sluice-wal", const char* base = nullptr);

// Counters over every WAL file opened through any coalescing VFS (for tests and
// diagnostics): writes SQLite asked for, and writes passed on to the wrapped files.
struct WalWriteCounts {
  int64_t requested = 0;
  int64_t issued = 0;
};
WalWriteCounts CoalescingWalWriteCounts();

}  // namespace sluice::sqlite
