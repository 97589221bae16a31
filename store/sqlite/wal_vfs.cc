#include "store/sqlite/wal_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "store/sqlite/sqlite.h"

namespace sluice::sqlite {
namespace {

constexpr size_t kMaxPending = 256 << 10;
// The unix VFS writes at most 128 KiB - 1 bytes per call (it masks larger sizes).
constexpr size_t kMaxWrite = 64 << 10;
constexpr int kFrameHeaderSize = 24;  // WAL frame header; bytes 4..7: nonzero on commit

std::atomic<int64_t> g_requested{0};
std::atomic<int64_t> g_issued{0};

// A WAL file: our methods in front, the wrapped VFS's file right behind, in the one
// allocation SQLite makes (szOsFile covers both).
struct WalFile {
  sqlite3_file base;  // first: SQLite sees a sqlite3_file*
  sqlite3_file* real;
  std::vector<char>* pending;  // bytes not yet passed on, starting at pending_at
  sqlite3_int64 pending_at;
  bool commit_header_last;  // the last write was the header of a commit frame
};

constexpr size_t kRealOffset = (sizeof(WalFile) + 7) & ~size_t{7};

WalFile* Wal(sqlite3_file* f) { return reinterpret_cast<WalFile*>(f); }
sqlite3_file* Real(sqlite3_file* f) { return Wal(f)->real; }

uint32_t BigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

int Flush(WalFile* w) {
  if (w->pending->empty()) return SQLITE_OK;
  int rc = SQLITE_OK;
  for (size_t done = 0; done < w->pending->size() && rc == SQLITE_OK; done += kMaxWrite) {
    g_issued.fetch_add(1, std::memory_order_relaxed);
    const size_t n = std::min(kMaxWrite, w->pending->size() - done);
    rc = w->real->pMethods->xWrite(w->real, w->pending->data() + done, static_cast<int>(n),
                                   w->pending_at + static_cast<sqlite3_int64>(done));
  }
  w->pending->clear();
  return rc;
}

int FlushFile(sqlite3_file* f) { return Flush(Wal(f)); }

int Write(sqlite3_file* f, const void* data, int amt, sqlite3_int64 offset) {
  g_requested.fetch_add(1, std::memory_order_relaxed);
  WalFile* w = Wal(f);
  if (!w->pending->empty() &&
      offset != w->pending_at + static_cast<sqlite3_int64>(w->pending->size())) {
    if (int rc = Flush(w); rc != SQLITE_OK) return rc;
  }
  if (w->pending->empty()) w->pending_at = offset;
  const char* p = static_cast<const char*>(data);
  try {
    w->pending->insert(w->pending->end(), p, p + amt);
  } catch (const std::bad_alloc&) {  // no exception may cross back into SQLite
    return SQLITE_NOMEM;
  }
  // The write after a commit frame's header is that frame's page: the commit is
  // complete, and it must reach the wrapped file before SQLite publishes it.
  const bool completes_commit = w->commit_header_last;
  w->commit_header_last = amt == kFrameHeaderSize && BigEndian32(p + 4) != 0;
  if (completes_commit || w->pending->size() >= kMaxPending) return Flush(w);
  return SQLITE_OK;
}

int Close(sqlite3_file* f) {
  WalFile* w = Wal(f);
  int rc = Flush(w);
  int closed = w->real->pMethods->xClose(w->real);
  delete w->pending;
  w->pending = nullptr;
  return rc != SQLITE_OK ? rc : closed;
}

// Every call but a write passes the buffered bytes on first, so it sees all of them.
template <typename Method, typename... Args>
int FlushThen(sqlite3_file* f, Method sqlite3_io_methods::*method, Args... args) {
  if (int rc = FlushFile(f); rc != SQLITE_OK) return rc;
  return (Real(f)->pMethods->*method)(Real(f), args...);
}

int Read(sqlite3_file* f, void* out, int amt, sqlite3_int64 offset) {
  return FlushThen(f, &sqlite3_io_methods::xRead, out, amt, offset);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  return FlushThen(f, &sqlite3_io_methods::xTruncate, size);
}
int Sync(sqlite3_file* f, int flags) { return FlushThen(f, &sqlite3_io_methods::xSync, flags); }
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return FlushThen(f, &sqlite3_io_methods::xFileSize, size);
}
int Lock(sqlite3_file* f, int level) { return FlushThen(f, &sqlite3_io_methods::xLock, level); }
int Unlock(sqlite3_file* f, int level) { return FlushThen(f, &sqlite3_io_methods::xUnlock, level); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return FlushThen(f, &sqlite3_io_methods::xCheckReservedLock, out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return FlushThen(f, &sqlite3_io_methods::xFileControl, op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
// SQLite keeps the wal-index with the database file, not the WAL, and does not map
// the WAL into memory; these pass through for completeness.
int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return FlushThen(f, &sqlite3_io_methods::xShmMap, region, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  return FlushThen(f, &sqlite3_io_methods::xShmLock, offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int delete_flag) {
  return FlushThen(f, &sqlite3_io_methods::xShmUnmap, delete_flag);
}
int Fetch(sqlite3_file* f, sqlite3_int64, int, void** out) {
  *out = nullptr;  // "no mapping": SQLite then reads with xRead
  if (int rc = FlushFile(f); rc != SQLITE_OK) return rc;
  return SQLITE_OK;
}
int Unfetch(sqlite3_file*, sqlite3_int64, void*) { return SQLITE_OK; }

const sqlite3_io_methods kWalMethods = {
    3,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    ShmMap,
    ShmLock,
    ShmBarrier,
    ShmUnmap,
    Fetch,
    Unfetch,
};

// ---- the VFS --------------------------------------------------------------------

struct Shim {
  sqlite3_vfs vfs{};
  sqlite3_vfs* base = nullptr;
  std::string name;
};

sqlite3_vfs* Base(sqlite3_vfs* vfs) { return static_cast<Shim*>(vfs->pAppData)->base; }

int Open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
  sqlite3_vfs* base = Base(vfs);
  if (!(flags & SQLITE_OPEN_WAL)) return base->xOpen(base, name, f, flags, out_flags);
  WalFile* w = Wal(f);
  w->base.pMethods = nullptr;
  w->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + kRealOffset);
  w->real->pMethods = nullptr;
  int rc = base->xOpen(base, name, w->real, flags, out_flags);
  if (rc == SQLITE_OK) {
    w->pending = new (std::nothrow) std::vector<char>();
    if (!w->pending) rc = SQLITE_NOMEM;
  }
  if (rc != SQLITE_OK) {
    if (w->real->pMethods) w->real->pMethods->xClose(w->real);
    return rc;
  }
  w->pending_at = 0;
  w->commit_header_last = false;
  w->base.pMethods = &kWalMethods;
  return SQLITE_OK;
}

int Delete(sqlite3_vfs* v, const char* name, int sync_dir) {
  return Base(v)->xDelete(Base(v), name, sync_dir);
}
int Access(sqlite3_vfs* v, const char* name, int flags, int* out) {
  return Base(v)->xAccess(Base(v), name, flags, out);
}
int FullPathname(sqlite3_vfs* v, const char* name, int n, char* out) {
  return Base(v)->xFullPathname(Base(v), name, n, out);
}
void* DlOpen(sqlite3_vfs* v, const char* name) { return Base(v)->xDlOpen(Base(v), name); }
void DlError(sqlite3_vfs* v, int n, char* out) { Base(v)->xDlError(Base(v), n, out); }
void (*DlSym(sqlite3_vfs* v, void* h, const char* sym))(void) {
  return Base(v)->xDlSym(Base(v), h, sym);
}
void DlClose(sqlite3_vfs* v, void* h) { Base(v)->xDlClose(Base(v), h); }
int Randomness(sqlite3_vfs* v, int n, char* out) { return Base(v)->xRandomness(Base(v), n, out); }
int Sleep(sqlite3_vfs* v, int us) { return Base(v)->xSleep(Base(v), us); }
int CurrentTime(sqlite3_vfs* v, double* out) { return Base(v)->xCurrentTime(Base(v), out); }
int GetLastError(sqlite3_vfs* v, int n, char* out) {
  return Base(v)->xGetLastError ? Base(v)->xGetLastError(Base(v), n, out) : 0;
}
int CurrentTimeInt64(sqlite3_vfs* v, sqlite3_int64* out) {
  if (Base(v)->iVersion >= 2 && Base(v)->xCurrentTimeInt64) {
    return Base(v)->xCurrentTimeInt64(Base(v), out);
  }
  double days = 0;
  int rc = Base(v)->xCurrentTime(Base(v), &days);
  *out = static_cast<sqlite3_int64>(days * 86400000.0);
  return rc;
}

}  // namespace

const char* RegisterCoalescingWalVfs(const char* name, const char* base) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Shim>> shims;
  ConfigureOnce();
  std::lock_guard lock(mu);
  if (auto it = shims.find(name); it != shims.end()) return it->second->name.c_str();
  sqlite3_vfs* wrapped = sqlite3_vfs_find(base);
  if (!wrapped) {
    throw SqliteError(SQLITE_ERROR, std::string("no SQLite VFS named ") + (base ? base : ""));
  }
  auto shim = std::make_unique<Shim>();
  shim->name = name;
  shim->base = wrapped;
  sqlite3_vfs& v = shim->vfs;
  v.iVersion = 2;
  v.szOsFile = static_cast<int>(kRealOffset) + wrapped->szOsFile;  // ours, then theirs
  v.mxPathname = wrapped->mxPathname;
  v.zName = shim->name.c_str();
  v.pAppData = shim.get();
  v.xOpen = Open;
  v.xDelete = Delete;
  v.xAccess = Access;
  v.xFullPathname = FullPathname;
  v.xDlOpen = DlOpen;
  v.xDlError = DlError;
  v.xDlSym = DlSym;
  v.xDlClose = DlClose;
  v.xRandomness = Randomness;
  v.xSleep = Sleep;
  v.xCurrentTime = CurrentTime;
  v.xGetLastError = GetLastError;
  v.xCurrentTimeInt64 = CurrentTimeInt64;
  if (int rc = sqlite3_vfs_register(&v, 0); rc != SQLITE_OK) {
    throw SqliteError(rc, "cannot register the SQLite VFS " + shim->name);
  }
  const char* registered = shim->name.c_str();
  shims.emplace(shim->name, std::move(shim));
  return registered;
}

WalWriteCounts CoalescingWalWriteCounts() {
  return {g_requested.load(std::memory_order_relaxed), g_issued.load(std::memory_order_relaxed)};
}

}  // namespace sluice::sqlite
