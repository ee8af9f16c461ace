// dspark-train: the trainer executable (tokenizer, prepare, pretrain, regen, draft, calibrate,
// export).
//
// libtorch on glibc malloc page-faults heavily on this kind of machine and OpenBLAS threads
// fight the intra-op pool, so unless DSPARK_TRAIN_NO_REEXEC is set the program re-executes
// itself once with tcmalloc preloaded and OPENBLAS_NUM_THREADS=1.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "train/draft/draft_commands.h"
#include "train/export.h"
#include "train/pretrain/pretrain.h"
#include "data/commands.h"

namespace {

constexpr const char* kTcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";

void reexec_with_tcmalloc(char** argv) {
  if (std::getenv("DSPARK_TRAIN_NO_REEXEC")) return;
  const char* preload = std::getenv("LD_PRELOAD");
  const std::string current = preload ? preload : "";
  if (current.find("tcmalloc") != std::string::npos || !std::filesystem::exists(kTcmalloc)) return;
  const std::string updated = current.empty() ? kTcmalloc : std::string(kTcmalloc) + ":" + current;
  setenv("LD_PRELOAD", updated.c_str(), 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  setenv("DSPARK_TRAIN_NO_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed: run as we are.
}

}  // namespace

int main(int argc, char** argv) {
  reexec_with_tcmalloc(argv);
  CLI::App app{"dspark-train: tokenizer training, data preparation, pretraining, drafters and export"};
  app.require_subcommand(1);
  dspark::train::register_data_commands(app);
  dspark::train::add_pretrain_command(app);
  dspark::train::add_drafter_commands(app);
  dspark::train::add_export_command(app, {dspark::train::drafter_export_extension()});
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dspark-train: %s\n", e.what());
    return 1;
  }
  return 0;
}
