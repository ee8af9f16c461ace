#include "data/commands.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/check.h"
#include "core/clock.h"
#include "data/bpe_trainer.h"
#include "data/prepare.h"
#include "tokenizer/tokenizer.h"

#ifndef DSPARK_DATA_DEFAULT_SHARED_DIR
#define DSPARK_DATA_DEFAULT_SHARED_DIR "../shared"
#endif
#ifndef DSPARK_DATA_DEFAULT_TOKENIZER_DIR
#define DSPARK_DATA_DEFAULT_TOKENIZER_DIR "models/tiny-target"
#endif

namespace dspark::train {
namespace {

struct TokenizerArgs {
  std::string out_dir;
  std::string shared_dir = std::filesystem::path(DSPARK_DATA_DEFAULT_SHARED_DIR).lexically_normal().string();
  std::string scratch_dir;
  std::vector<std::string> sources = kCorpusSources;
  std::vector<std::string> inputs;
  double val_fraction = 0.02;
  int64_t prose_document_chars = 3000;
  BpeTrainerOptions trainer;
};

struct PrepareArgs {
  std::string out_dir;
  std::string tokenizer_dir = DSPARK_DATA_DEFAULT_TOKENIZER_DIR;
  std::string shared_dir = std::filesystem::path(DSPARK_DATA_DEFAULT_SHARED_DIR).lexically_normal().string();
  std::string scratch_dir;
  std::vector<std::string> sources = kCorpusSources;
  double val_fraction = 0.02;
  int64_t prose_document_chars = 3000;
};

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot open input {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void run_tokenizer(const TokenizerArgs& args) {
  const double t0 = now_seconds();
  BpeTrainStats stats;
  BpeModel model;
  if (!args.inputs.empty()) {
    BpeTrainer trainer(args.trainer);
    for (const auto& path : args.inputs) trainer.add_document(read_text_file(path));
    model = trainer.train();
    stats = trainer.stats();
  } else {
    CorpusOptions corpus{args.shared_dir, args.prose_document_chars, args.scratch_dir};
    model = train_corpus_tokenizer(corpus, args.sources, args.val_fraction, args.trainer, &stats);
  }
  write_tokenizer_files(model, args.out_dir);

  // The files must load in the engine and reproduce text exactly.
  const Tokenizer tokenizer = Tokenizer::from_dir(args.out_dir);
  const std::string probe = "Question: 12 + 30 = 42?\n    def f(x):\n        return x  # <|endoftext|>";
  const std::vector<int32_t> ids = tokenizer.encode(probe);
  DSPARK_CHECK(tokenizer.decode(ids) == probe, "written tokenizer does not round-trip '{}'", probe);

  fmt::print("tokenizer: {} tokens ({} special, 256 bytes, {} merges, {} skipped duplicates) -> {}\n",
             model.vocab_size(), model.num_special(), model.merges.size(),
             stats.num_skipped_duplicates, args.out_dir);
  fmt::print("text: {} documents, {} bytes, {} pre-tokens, {} distinct words\n", stats.num_documents,
             stats.num_bytes, stats.num_pretokens, stats.num_words);
  fmt::print("time: pre-tokenize {:.2f} s, merges {:.2f} s, total {:.2f} s\n",
             stats.pretokenize_seconds, stats.merge_seconds, now_seconds() - t0);
}

void run_prepare(const PrepareArgs& args) {
  const double t0 = now_seconds();
  const Tokenizer tokenizer = Tokenizer::from_dir(args.tokenizer_dir);
  PrepareOptions options;
  options.corpus = CorpusOptions{args.shared_dir, args.prose_document_chars, args.scratch_dir};
  options.sources = args.sources;
  options.val_fraction = args.val_fraction;
  options.tokenizer_dir = args.tokenizer_dir;
  options.out_dir = args.out_dir;
  const auto prepared = prepare_corpus(options, engine_corpus_encoder(tokenizer));
  fmt::print("{:<8} {:>9} {:>11} {:>9} {:>12} {:>12}\n", "source", "documents", "train tok",
             "val tok", "chars/token", "bytes/token");
  for (const auto& p : prepared) {
    const double tokens = static_cast<double>(p.train_tokens + p.val_tokens);
    fmt::print("{:<8} {:>9} {:>11} {:>9} {:>12.3f} {:>12.3f}\n", p.name, p.documents, p.train_tokens,
               p.val_tokens, static_cast<double>(p.train_chars + p.val_chars) / tokens,
               static_cast<double>(p.train_bytes + p.val_bytes) / tokens);
  }
  fmt::print("wrote {} ({:.1f} s)\n", args.out_dir, now_seconds() - t0);
}

}  // namespace

void register_data_commands(CLI::App& app) {
  auto tok_args = std::make_shared<TokenizerArgs>();
  CLI::App* tok = app.add_subcommand(
      "tokenizer", "Train a byte-level BPE tokenizer on the corpus train split (or --input files)");
  tok->add_option("--out", tok_args->out_dir, "Output directory for tokenizer.json etc.")->required();
  tok->add_option("--vocab-size", tok_args->trainer.vocab_size,
                  "Vocabulary size including 256 bytes and special tokens")
      ->capture_default_str();
  tok->add_option("--min-frequency", tok_args->trainer.min_frequency,
                  "Stop when the best pair occurs fewer times")
      ->capture_default_str();
  tok->add_option("--shared-dir", tok_args->shared_dir, "Folder holding data/corpus and data/eval")
      ->capture_default_str();
  tok->add_option("--sources", tok_args->sources, "Corpus sources (gsm8k,code,prose)")
      ->delimiter(',')
      ->capture_default_str();
  tok->add_option("--val-fraction", tok_args->val_fraction,
                  "Held-out fraction per source (excluded from the tokenizer text)")
      ->capture_default_str();
  tok->add_option("--prose-doc-chars", tok_args->prose_document_chars,
                  "Approximate size of a prose document")
      ->capture_default_str();
  tok->add_option("--scratch-dir", tok_args->scratch_dir,
                  "Where to unpack archives (default: a temp dir)");
  tok->add_option("--input", tok_args->inputs,
                  "Train on these text files instead of the corpus (one document each)");
  tok->callback([tok_args] { run_tokenizer(*tok_args); });

  auto prep_args = std::make_shared<PrepareArgs>();
  CLI::App* prep = app.add_subcommand(
      "prepare", "Tokenize the corpus into per-source train/validation token shards");
  prep->add_option("--out", prep_args->out_dir, "Output shard directory")->required();
  prep->add_option("--tokenizer", prep_args->tokenizer_dir, "Directory with tokenizer.json")
      ->capture_default_str();
  prep->add_option("--shared-dir", prep_args->shared_dir, "Folder holding data/corpus and data/eval")
      ->capture_default_str();
  prep->add_option("--sources", prep_args->sources, "Corpus sources (gsm8k,code,prose)")
      ->delimiter(',')
      ->capture_default_str();
  prep->add_option("--val-fraction", prep_args->val_fraction, "Held-out fraction per source")
      ->capture_default_str();
  prep->add_option("--prose-doc-chars", prep_args->prose_document_chars,
                   "Approximate size of a prose document")
      ->capture_default_str();
  prep->add_option("--scratch-dir", prep_args->scratch_dir,
                   "Where to unpack archives (default: a temp dir)");
  prep->callback([prep_args] { run_prepare(*prep_args); });
}

}  // namespace dspark::train
