// Runs a command line through the shell, as a user would, and keeps what it printed on
// standard output (add 2>&1 to the command for standard error too) and its exit status.
#pragma once

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

namespace dspark::testing {

struct CommandRun {
  int status = -1;  // pclose's status: 0 when the command exited with 0
  std::string out;
};

inline CommandRun run_command(const std::string& command) {
  CommandRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) run.out.append(buffer, n);
  run.status = pclose(pipe);
  return run;
}

// Arguments a command must refuse, and what its output must then say.
struct RefusedArguments {
  const char* args;
  const char* message;
};

// Expects (GoogleTest) run(args) to fail with `message` in its output, for each case.
inline void expect_refused(const std::function<CommandRun(const std::string&)>& run,
                           std::initializer_list<RefusedArguments> cases) {
  for (const RefusedArguments& c : cases) {
    const CommandRun result = run(c.args);
    EXPECT_NE(result.status, 0) << c.args;
    EXPECT_NE(result.out.find(c.message), std::string::npos) << c.args << "\n" << result.out;
  }
}

}  // namespace dspark::testing
