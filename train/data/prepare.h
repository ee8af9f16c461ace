// Corpus preparation: documents of each source (corpus_sources.h) -> token ids -> shard
// files, and tokenizer training on the same documents.
//
// Output directory (read back by TokenShards, and by the pretraining code):
//   <source>.train.bin, <source>.val.bin   int32 little-endian token ids: each document's
//                                          tokens followed by eos_id, documents concatenated
//   meta.json  {"tokenizer_dir", "vocab_size", "eos_id", "pad_id", "mask_id", "val_fraction",
//               "sources": [{"name", "train_file", "val_file", "train_tokens", "val_tokens",
//                            "documents", "train_documents", "val_documents",
//                            "train_bytes", "val_bytes", "train_chars", "val_chars"}]}
// The train/validation split is split_documents(), the same one the tokenizer is trained on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/bpe_trainer.h"
#include "data/corpus_sources.h"

namespace dspark {
class Tokenizer;
}

namespace dspark::train {

struct PrepareOptions {
  CorpusOptions corpus;                              // where the data is, prose document size
  std::vector<std::string> sources = kCorpusSources;  // which sources, in this order
  double val_fraction = 0.02;                        // held-out documents per source
  std::filesystem::path tokenizer_dir;               // recorded in meta.json
  std::filesystem::path out_dir;                     // created if missing
};

// What prepare needs from a tokenizer (so a test can plug in another encoder).
struct CorpusEncoder {
  std::function<std::vector<int32_t>(std::string_view)> encode;  // no BOS/EOS added
  int64_t vocab_size = 0;
  int32_t eos_id = -1;
  int32_t pad_id = -1;
  int32_t mask_id = -1;
};

// Uses dspark::Tokenizer; eos/pad/mask ids are looked up by their reserved names.
CorpusEncoder engine_corpus_encoder(const Tokenizer& tokenizer);

struct PreparedSource {
  std::string name;
  std::string train_file;  // file names inside out_dir
  std::string val_file;
  int64_t documents = 0;
  int64_t train_documents = 0;
  int64_t val_documents = 0;
  int64_t train_tokens = 0;  // EOS separators included
  int64_t val_tokens = 0;
  int64_t train_bytes = 0;   // UTF-8 bytes of the documents
  int64_t val_bytes = 0;
  int64_t train_chars = 0;   // Unicode characters of the documents
  int64_t val_chars = 0;
  int64_t special_in_text = 0;  // documents whose text contained a special token's text
};

// Builds the shards and meta.json; returns per-source counts.
std::vector<PreparedSource> prepare_corpus(const PrepareOptions& options, const CorpusEncoder& encoder);

// Trains a BPE tokenizer on the train split of the given sources (the documents prepare
// tokenizes). stats, when given, receives the trainer's counters and timings.
BpeModel train_corpus_tokenizer(const CorpusOptions& corpus, const std::vector<std::string>& sources,
                                double val_fraction, const BpeTrainerOptions& trainer_options,
                                BpeTrainStats* stats = nullptr);

}  // namespace dspark::train
