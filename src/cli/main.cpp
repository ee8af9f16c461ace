#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/check.h"

int main(int argc, char** argv) {
  CLI::App app{"dspark: LLM inference and serving with DSpark speculative decoding"};
  app.require_subcommand(1);
  dspark::cli::register_generate(app);
  dspark::cli::register_eval(app);
  dspark::cli::register_profile(app);
  dspark::cli::register_serve(app);
  dspark::cli::register_bench(app);
  dspark::cli::register_plot(app);
  dspark::cli::register_perplexity(app);
  dspark::cli::register_quantize(app);
  dspark::cli::register_chat_template(app);
  dspark::cli::register_block_bound(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const dspark::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
