// A fresh temporary directory per test, removed when the object dies, and reading the
// files a test finds there. Thread-compatible.
#pragma once

#include <string>

namespace sluice::testing {

class TempDir {
 public:
  TempDir();
  // Under `parent` instead of the system temp dir (TMPDIR), e.g. "/tmp" for a dir
  // another user must reach, named `prefix`-XXXXXX.
  TempDir(const std::string& parent, const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole content of the file at `path`; empty if it cannot be read.
std::string ReadFile(const std::string& path);
// Whether anything (a file, a directory...) exists at `path`.
bool FileExists(const std::string& path);

}  // namespace sluice::testing
