#include "tests/testutil/temp_dir.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace sluice::testing {

TempDir::TempDir() : TempDir(std::filesystem::temp_directory_path().string(), "sluice-test") {}

TempDir::TempDir(const std::string& parent, const std::string& prefix) {
  std::string tmpl = (std::filesystem::path(parent) / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace sluice::testing
