// The --server flag of sluice's command-line programs (CLI11): a server URL checked as
// it is parsed (client/server_url.h), so a bad one is a usage error like any other
// flag's. Header only, for programs that link CLI11.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "client/server_url.h"

namespace sluice {

inline CLI::Option* AddServerFlag(CLI::App& app, ServerUrl& url, const std::string& help) {
  return app.add_option_function<std::string>(
      "--server",
      [&url](const std::string& text) {
        std::string why;
        auto parsed = ParseServerUrl(text, &why);
        if (!parsed) throw CLI::ValidationError("--server", why);
        url = *parsed;
      },
      help);
}

}  // namespace sluice
