// The server's real route table for the fuzz targets: RegisterRoutes (server/app.h)
// over an App whose store is a throwaway SQLite file. The targets route requests and
// never run a handler, so the App is only there to be captured.
// Built once, on first use (thread-safe); read-only afterwards.
#pragma once

#include "server/router.h"

namespace sluice::fuzz {

const Router& RealRoutes();

}  // namespace sluice::fuzz
