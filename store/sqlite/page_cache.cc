#include "store/sqlite/page_cache.h"

#include <sqlite3.h>

#include <atomic>
#include <mutex>
#include <new>

namespace sluice::sqlite {
namespace {

// SQLite's locking page: never part of a database, used by balance_nonroot() as a
// temporary number while it swaps two pages' numbers.
constexpr unsigned kPendingByte = 0x40000000;

sqlite3_pcache_methods2 inner;  // SQLite's own cache; set once, before any use
bool installed = false;

std::atomic<int64_t> passed{0};
std::atomic<int64_t> skipped{0};
std::atomic<int64_t> renumbered{0};

// One cache, used by one connection (its pager) at a time, so its fields need no lock.
struct Cache {
  sqlite3_pcache* inner;
  unsigned lock_page;
  unsigned max_key = 0;       // no page in the cache has a larger number
  bool at_lock_page = false;  // a page is renumbered to lock_page and not back yet
};

Cache* Of(sqlite3_pcache* p) { return reinterpret_cast<Cache*>(p); }

sqlite3_pcache* Create(int page_size, int extra, int purgeable) {
  sqlite3_pcache* c = inner.xCreate(page_size, extra, purgeable);
  if (c == nullptr) return nullptr;
  auto* cache = new (std::nothrow) Cache{c, kPendingByte / static_cast<unsigned>(page_size) + 1};
  if (cache == nullptr) {
    inner.xDestroy(c);
    return nullptr;
  }
  return reinterpret_cast<sqlite3_pcache*>(cache);
}

void Cachesize(sqlite3_pcache* p, int n) { inner.xCachesize(Of(p)->inner, n); }

int Pagecount(sqlite3_pcache* p) { return inner.xPagecount(Of(p)->inner); }

sqlite3_pcache_page* Fetch(sqlite3_pcache* p, unsigned key, int create) {
  Cache* c = Of(p);
  sqlite3_pcache_page* page = inner.xFetch(c->inner, key, create);
  if (page != nullptr && key > c->max_key) c->max_key = key;
  return page;
}

void Unpin(sqlite3_pcache* p, sqlite3_pcache_page* page, int discard) {
  inner.xUnpin(Of(p)->inner, page, discard);
}

void Rekey(sqlite3_pcache* p, sqlite3_pcache_page* page, unsigned old_key, unsigned new_key) {
  Cache* c = Of(p);
  inner.xRekey(c->inner, page, old_key, new_key);
  if (new_key == c->lock_page) {
    c->at_lock_page = true;
    renumbered.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (old_key == c->lock_page) c->at_lock_page = false;
  if (new_key > c->max_key) c->max_key = new_key;
}

void Truncate(sqlite3_pcache* p, unsigned limit) {
  Cache* c = Of(p);
  if (limit > c->max_key && !c->at_lock_page) {
    skipped.fetch_add(1, std::memory_order_relaxed);
    return;  // no page is numbered `limit` or more
  }
  inner.xTruncate(c->inner, limit);
  if (c->max_key >= limit) c->max_key = limit - 1;
  if (limit <= c->lock_page) c->at_lock_page = false;  // dropped with the rest
  passed.fetch_add(1, std::memory_order_relaxed);
}

void Destroy(sqlite3_pcache* p) {
  Cache* c = Of(p);
  inner.xDestroy(c->inner);
  delete c;
}

void Shrink(sqlite3_pcache* p) { inner.xShrink(Of(p)->inner); }

int Init(void* arg) { return inner.xInit(arg); }

void Shutdown(void* arg) { inner.xShutdown(arg); }

}  // namespace

bool InstallPageCache() {
  static std::once_flag once;
  std::call_once(once, [] {
    sqlite3_pcache_methods2 own{};
    if (sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &own) != SQLITE_OK) return;
    if (own.iVersion < 1 || own.xTruncate == nullptr) return;
    inner = own;
    sqlite3_pcache_methods2 wrapped = own;  // iVersion and pArg as SQLite's
    wrapped.xInit = Init;
    wrapped.xShutdown = Shutdown;
    wrapped.xCreate = Create;
    wrapped.xCachesize = Cachesize;
    wrapped.xPagecount = Pagecount;
    wrapped.xFetch = Fetch;
    wrapped.xUnpin = Unpin;
    wrapped.xRekey = Rekey;
    wrapped.xTruncate = Truncate;
    wrapped.xDestroy = Destroy;
    wrapped.xShrink = Shrink;
    installed = sqlite3_config(SQLITE_CONFIG_PCACHE2, &wrapped) == SQLITE_OK;
  });
  return installed;
}

PageCacheStats GetPageCacheStats() {
  return {passed.load(std::memory_order_relaxed), skipped.load(std::memory_order_relaxed),
          renumbered.load(std::memory_order_relaxed)};
}

}  // namespace sluice::sqlite
