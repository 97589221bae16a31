// The machine-readable description of the HTTP API: docs/openapi.yaml, converted to
// JSON when sluiced is built (server/openapi_embed.py) and served, without a token, at
// GET /v1/openapi.json. Immutable after first use; thread-safe.
#pragma once

#include <string_view>

#include "server/router.h"

namespace sluice {

// The OpenAPI 3.1 document as compact JSON.
std::string_view OpenApiJson();

// GET /v1/openapi.json.
void RegisterOpenApiRoutes(Router& router);

}  // namespace sluice
