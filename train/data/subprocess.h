// Running an external program (tar) and owning a scratch directory.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dspark::train {

// Runs argv[0] (looked up in PATH) with the arguments, no shell, and waits for it.
// Throws dspark::Error with the command line when it cannot start or exits non-zero.
void run_process(const std::vector<std::string>& argv);

// A fresh directory under the system temp folder, removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "dspark");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dspark::train
