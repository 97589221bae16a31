#include "server/admin_page.h"

#include "server/web_assets.h"

namespace sluice {
namespace {

// The page loads only its own script and stylesheet and talks only to this server;
// it must not be framed (its buttons pause queues).
constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

void Serve(const WebAsset& asset, HttpResponse& res) {
  res.status = 200;
  res.set_content(std::string(asset.body), std::string(asset.content_type));
  // Revalidate on every load: a server upgrade must not leave an old script running.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("Referrer-Policy", "no-referrer");
}

}  // namespace

const std::vector<WebAsset>& AdminPageAssets() {
  static const std::vector<WebAsset> assets = {
      {"/admin", "text/html; charset=utf-8", web::kIndexHtml},
      {"/admin/app.js", "text/javascript; charset=utf-8", web::kAppJs},
      {"/admin/style.css", "text/css; charset=utf-8", web::kStyleCss},
  };
  return assets;
}

void RegisterAdminPageRoutes(Router& router) {
  for (const WebAsset& asset : AdminPageAssets()) {
    router.Add("GET", std::string(asset.path),
               [&asset](const HttpRequest&, HttpResponse& res) { Serve(asset, res); });
  }
  const WebAsset& page = AdminPageAssets().front();
  router.Add("GET", "/admin/",
             [&page](const HttpRequest&, HttpResponse& res) { Serve(page, res); });
}

}  // namespace sluice
