// SHA-256 and constant-time comparison (OpenSSL). Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

// Compares two strings in time independent of where they differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace sluice
