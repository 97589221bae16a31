#include "server/openapi.h"

#include <string>

#include "server/openapi_json.h"

namespace sluice {

std::string_view OpenApiJson() {
  static const std::string document = [] {
    std::string joined;
    for (std::string_view part : generated::kOpenApiJsonParts) joined += part;
    return joined;
  }();
  return document;
}

void RegisterOpenApiRoutes(Router& router) {
  router.Add("GET", "/v1/openapi.json", [](const HttpRequest&, HttpResponse& res) {
    res.status = 200;
    res.set_content(std::string(OpenApiJson()), "application/json");
    // Revalidate on every load: an upgraded server may describe another API.
    res.set_header("Cache-Control", "no-cache");
  });
}

}  // namespace sluice
