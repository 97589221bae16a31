// The intake-protection layers over HTTP: GET and PUT /v1/admin/limits (admin scope).
#include <spdlog/spdlog.h>

#include "server/app.h"
#include "server/errors.h"
#include "server/http.h"
#include "server/layer_gate.h"
#include "server/log.h"

namespace sluice {
namespace {

using nlohmann::json;
using Req = const HttpRequest&;
using Res = HttpResponse&;

json PolicyJson(const LayerGate::Policy& p) {
  json j = LayersToJson(p.layers);
  j["version"] = p.version;
  j["defaults"] = p.version == 0;  // none declared: the built-in layers
  return j;
}

void GetLimits(App& app, Req req, Res res) {
  auto who = app.auth.RequireReader(req);
  if (!who.ok()) return RenderError(res, who.error());
  RenderJson(res, 200, PolicyJson(*app.layers->policy()));
}

void PutLimits(App& app, Req req, Res res) {
  auto who = app.auth.Require(req, Scope::kAdmin);
  if (!who.ok()) return RenderError(res, who.error());
  auto body = ParseJsonObject(req);
  if (!body.ok()) return RenderError(res, body.error());
  auto layers = ReadLayers(body.value());
  if (!layers.ok()) return RenderError(res, layers.error());
  auto p = app.layers->Put(layers.value(), app.clock.Now());
  if (!p.ok()) return RenderError(res, p.error());
  LogEvent(spdlog::level::info, "limits_changed",
           {{"request_id", req.request_id},
            {"token_id", who.value().token_id},
            {"policy_version", p.value()->version},
            {"limits", LayersToJson(p.value()->layers)}});
  RenderJson(res, 200, PolicyJson(*p.value()));
}

}  // namespace

void RegisterLimitRoutes(Router& router, App& app) {
  router.Add("GET", "/v1/admin/limits", [&app](Req req, Res res) { GetLimits(app, req, res); });
  router.Add("PUT", "/v1/admin/limits", [&app](Req req, Res res) { PutLimits(app, req, res); });
}

}  // namespace sluice
