// The dashboard's assets as compiled in: each served by its route with its type,
// uncached, and the page refers only to assets that exist.
#include "server/admin_page.h"

#include <catch2/catch.hpp>
#include <string>

namespace sluice {
namespace {

HttpResponse Get(const Router& router, const std::string& path) {
  const Router::Route* route = nullptr;
  std::vector<std::string> captures;
  REQUIRE(router.Find("GET", path, &route, &captures) == Router::Found::kRoute);
  HttpRequest req;
  req.method = "GET";
  req.path = path;
  HttpResponse res;
  route->handler(req, res);
  return res;
}

TEST_CASE("the dashboard's assets are served with their types and no-cache", "[admin_page]") {
  Router router;
  RegisterAdminPageRoutes(router);
  const std::pair<const char*, const char*> expected[] = {
      {"/admin", "text/html; charset=utf-8"},
      {"/admin/", "text/html; charset=utf-8"},
      {"/admin/app.js", "text/javascript; charset=utf-8"},
      {"/admin/style.css", "text/css; charset=utf-8"},
  };
  for (const auto& [path, type] : expected) {
    INFO(path);
    HttpResponse res = Get(router, path);
    CHECK(res.status == 200);
    CHECK(res.content_type == type);
    CHECK(res.get_header_value("Cache-Control") == "no-cache");
    CHECK(!res.body.empty());
  }
  CHECK(Get(router, "/admin").body == Get(router, "/admin/").body);
}

TEST_CASE("the page loads exactly the embedded script and stylesheet", "[admin_page]") {
  const auto& assets = AdminPageAssets();
  REQUIRE(assets.size() == 3);
  const std::string page(assets.front().body);
  CHECK(page.find("<script src=\"/admin/app.js\"") != std::string::npos);
  CHECK(page.find("<link rel=\"stylesheet\" href=\"/admin/style.css\">") != std::string::npos);
  // Offline: nothing is loaded from another host.
  for (const WebAsset& a : assets) {
    INFO(a.path);
    CHECK(std::string(a.body).find("https://") == std::string::npos);
    CHECK(std::string(a.body).find("//cdn") == std::string::npos);
  }
}

}  // namespace
}  // namespace sluice
