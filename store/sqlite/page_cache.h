// SQLite's own page cache, wrapped so that a COMMIT does not walk all of it.
//
// At the end of every transaction SQLite asks the page cache to drop the pages past the
// end of the database (xTruncate with the database's size). SQLite's cache (pcache1)
// knows only the largest page number it has seen since its last truncation, and when
// that is far past the end it scans its whole hash table. One is, all the time: to sort
// the pages of a B-tree split, balance_nonroot() renumbers a page to the lock page
// (1 GiB / page size + 1: 262145 with 4 KiB pages) and back. So once a transaction has
// split a page, its COMMIT walks every page in the cache — 8k pages of the writer's
// 32 MiB — to drop none. At a million jobs, where every commit splits pages, that was
// 3.4 % of sluiced's CPU (issue 18, docs/performance.md).
//
// The wrapper keeps its own bound on the page numbers in each cache, leaving out that
// renumbering while it is undone (it always is, within the same balance), and passes a
// truncation on only when some page may be at or past the limit. Everything else goes
// straight to SQLite's cache. Installed once per process, before SQLite initializes
// (sqlite::Db does it); if SQLite is already initialized, nothing changes.
#pragma once

#include <cstdint>

namespace sluice::sqlite {

// Installs the wrapper; true if it is in place (now or before).
bool InstallPageCache();

// What the wrapper did since the process started, for tests.
struct PageCacheStats {
  int64_t truncations_passed = 0;   // handed to SQLite's cache
  int64_t truncations_skipped = 0;  // no page could be at or past the limit
  int64_t lock_page_renumberings = 0;
};
PageCacheStats GetPageCacheStats();

}  // namespace sluice::sqlite
