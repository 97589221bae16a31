#include "store/db_uri.h"

namespace sluice {

bool IsPostgresUri(const std::string& db) {
  return db.rfind("postgres://", 0) == 0 || db.rfind("postgresql://", 0) == 0;
}

std::string RedactDb(const std::string& db) {
  if (!IsPostgresUri(db)) return db;
  std::string out = db;
  const size_t start = out.find("://") + 3;
  const size_t end = out.find_first_of("/?", start);
  const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
  if (at != std::string::npos && at >= start) {
    const size_t colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  for (size_t q = out.find('?'); q != std::string::npos;) {
    size_t key = q + 1;
    size_t amp = out.find('&', key);
    if (out.compare(key, 9, "password=") == 0) {
      size_t value = key + 9;
      size_t stop = amp == std::string::npos ? out.size() : amp;
      out.replace(value, stop - value, "***");
      amp = out.find('&', value);
    }
    q = amp;
  }
  return out;
}

}  // namespace sluice
