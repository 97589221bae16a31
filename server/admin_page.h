// The web dashboard at /admin: its page, script and stylesheet, compiled into the
// binary from server/web/ and served without authentication (the page's own API calls
// carry the admin token). Stateless; thread-safe.
#pragma once

#include <string_view>
#include <vector>

#include "server/router.h"

namespace sluice {

struct WebAsset {
  std::string_view path;          // e.g. "/admin/app.js"
  std::string_view content_type;  // with charset
  std::string_view body;
};

// Every asset of the dashboard, the page first.
const std::vector<WebAsset>& AdminPageAssets();

// GET /admin, /admin/, /admin/app.js, /admin/style.css.
void RegisterAdminPageRoutes(Router& router);

}  // namespace sluice
