#include "data/subprocess.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace dspark::train {

void run_process(const std::vector<std::string>& argv) {
  DSPARK_CHECK(!argv.empty(), "run_process needs a program");
  std::string command_line;
  for (const auto& a : argv) command_line += (command_line.empty() ? "" : " ") + a;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  DSPARK_CHECK(pid >= 0, "cannot fork for '{}': {}", command_line, std::strerror(errno));
  if (pid == 0) {
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    DSPARK_CHECK(errno == EINTR, "waiting for '{}' failed: {}", command_line, std::strerror(errno));
  }
  DSPARK_CHECK(WIFEXITED(status), "'{}' was killed by signal {}", command_line,
               WIFSIGNALED(status) ? WTERMSIG(status) : -1);
  DSPARK_CHECK(WEXITSTATUS(status) == 0, "'{}' exited with status {}{}", command_line,
               WEXITSTATUS(status), WEXITSTATUS(status) == 127 ? " (program not found?)" : "");
}

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  DSPARK_CHECK(::mkdtemp(pattern.data()) != nullptr, "cannot create a temp dir {}: {}", pattern,
               std::strerror(errno));
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dspark::train
