// The dspark command line: each subcommand registers its options on the CLI11 app and
// runs when selected. main() only dispatches.
#pragma once

#include <CLI/CLI.hpp>

namespace dspark::cli {

void register_generate(CLI::App& app);
void register_eval(CLI::App& app);
void register_profile(CLI::App& app);
void register_serve(CLI::App& app);
void register_bench(CLI::App& app);
void register_plot(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_quantize(CLI::App& app);
void register_chat_template(CLI::App& app);
void register_block_bound(CLI::App& app);

}  // namespace dspark::cli
