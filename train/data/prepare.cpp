#include "data/prepare.h"

#include <bit>
#include <fstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/check.h"
#include "core/clock.h"
#include "tokenizer/tokenizer.h"

namespace dspark::train {
namespace {

static_assert(std::endian::native == std::endian::little, "token files are little-endian int32");

int64_t count_chars(std::string_view s) {
  int64_t n = 0;
  for (const char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

void write_tokens(const std::filesystem::path& path, const std::vector<int32_t>& tokens) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  DSPARK_CHECK(out.good(), "cannot write {}", path.string());
  out.write(reinterpret_cast<const char*>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * sizeof(int32_t)));
  out.close();
  DSPARK_CHECK(out.good(), "failed writing {}", path.string());
}

int32_t required_id(const Tokenizer& tokenizer, std::string_view name) {
  const auto id = tokenizer.token_to_id(name);
  DSPARK_CHECK(id.has_value(), "the tokenizer has no '{}' token", name);
  return *id;
}

}  // namespace

CorpusEncoder engine_corpus_encoder(const Tokenizer& tokenizer) {
  CorpusEncoder e;
  e.encode = [&tokenizer](std::string_view text) { return tokenizer.encode(text, false); };
  e.vocab_size = tokenizer.vocab_size();
  e.eos_id = required_id(tokenizer, kEndOfTextToken);
  e.pad_id = required_id(tokenizer, kPadToken);
  e.mask_id = required_id(tokenizer, kMaskToken);
  return e;
}

std::vector<PreparedSource> prepare_corpus(const PrepareOptions& options, const CorpusEncoder& encoder) {
  DSPARK_CHECK(!options.sources.empty(), "prepare needs at least one source");
  DSPARK_CHECK(encoder.eos_id >= 0 && encoder.eos_id < encoder.vocab_size,
               "eos id {} outside the vocabulary of {}", encoder.eos_id, encoder.vocab_size);
  std::filesystem::create_directories(options.out_dir);
  std::vector<PreparedSource> prepared;
  for (const auto& name : options.sources) {
    const double t0 = now_seconds();
    const std::vector<std::string> docs = load_source_documents(name, options.corpus);
    const DocumentSplit split =
        split_documents(static_cast<int64_t>(docs.size()), options.val_fraction, name);
    PreparedSource p;
    p.name = name;
    p.train_file = name + ".train.bin";
    p.val_file = name + ".val.bin";
    p.documents = static_cast<int64_t>(docs.size());
    p.train_documents = static_cast<int64_t>(split.train.size());
    p.val_documents = static_cast<int64_t>(split.val.size());
    auto encode_part = [&](const std::vector<int64_t>& indices, int64_t& bytes, int64_t& chars) {
      std::vector<int32_t> tokens;  // [num_tokens]
      for (const int64_t i : indices) {
        const std::string& doc = docs[i];
        std::vector<int32_t> ids = encoder.encode(doc);
        for (const int32_t id : ids) {
          DSPARK_CHECK(id >= 0 && id < encoder.vocab_size,
                       "{} document {}: token id {} outside the vocabulary of {}", name, i, id,
                       encoder.vocab_size);
          if (id == encoder.eos_id || id == encoder.pad_id || id == encoder.mask_id) {
            ++p.special_in_text;
            break;
          }
        }
        tokens.insert(tokens.end(), ids.begin(), ids.end());
        tokens.push_back(encoder.eos_id);
        bytes += static_cast<int64_t>(doc.size());
        chars += count_chars(doc);
      }
      return tokens;
    };
    const auto train = encode_part(split.train, p.train_bytes, p.train_chars);
    const auto val = encode_part(split.val, p.val_bytes, p.val_chars);
    p.train_tokens = static_cast<int64_t>(train.size());
    p.val_tokens = static_cast<int64_t>(val.size());
    write_tokens(options.out_dir / p.train_file, train);
    write_tokens(options.out_dir / p.val_file, val);
    if (p.special_in_text > 0)
      spdlog::warn("{}: {} documents contain special-token text (encoded as the special id)", name,
                   p.special_in_text);
    spdlog::info("{}: {} documents ({} train, {} val), {} + {} tokens, {:.2f} chars/token, {:.1f} s",
                 name, p.documents, p.train_documents, p.val_documents, p.train_tokens, p.val_tokens,
                 p.train_tokens > 0 ? static_cast<double>(p.train_chars) / p.train_tokens : 0.0,
                 now_seconds() - t0);
    prepared.push_back(std::move(p));
  }

  nlohmann::ordered_json meta;
  meta["tokenizer_dir"] = options.tokenizer_dir.empty()
                              ? std::string()
                              : std::filesystem::absolute(options.tokenizer_dir).lexically_normal().string();
  meta["vocab_size"] = encoder.vocab_size;
  meta["eos_id"] = encoder.eos_id;
  meta["pad_id"] = encoder.pad_id;
  meta["mask_id"] = encoder.mask_id;
  meta["val_fraction"] = options.val_fraction;
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  for (const auto& p : prepared) {
    nlohmann::ordered_json s;
    s["name"] = p.name;
    s["train_file"] = p.train_file;
    s["val_file"] = p.val_file;
    s["train_tokens"] = p.train_tokens;
    s["val_tokens"] = p.val_tokens;
    s["documents"] = p.documents;
    s["train_documents"] = p.train_documents;
    s["val_documents"] = p.val_documents;
    s["train_bytes"] = p.train_bytes;
    s["val_bytes"] = p.val_bytes;
    s["train_chars"] = p.train_chars;
    s["val_chars"] = p.val_chars;
    sources.push_back(std::move(s));
  }
  meta["sources"] = std::move(sources);
  const auto meta_path = options.out_dir / "meta.json";
  std::ofstream out(meta_path, std::ios::binary | std::ios::trunc);
  DSPARK_CHECK(out.good(), "cannot write {}", meta_path.string());
  out << meta.dump(2) << '\n';
  out.close();
  DSPARK_CHECK(out.good(), "failed writing {}", meta_path.string());
  return prepared;
}

BpeModel train_corpus_tokenizer(const CorpusOptions& corpus, const std::vector<std::string>& sources,
                                double val_fraction, const BpeTrainerOptions& trainer_options,
                                BpeTrainStats* stats) {
  DSPARK_CHECK(!sources.empty(), "tokenizer training needs at least one source");
  BpeTrainer trainer(trainer_options);
  for (const auto& name : sources) {
    const std::vector<std::string> docs = load_source_documents(name, corpus);
    const DocumentSplit split = split_documents(static_cast<int64_t>(docs.size()), val_fraction, name);
    int64_t bytes = 0;
    for (const int64_t i : split.train) {
      trainer.add_document(docs[i]);
      bytes += static_cast<int64_t>(docs[i].size());
    }
    spdlog::info("tokenizer text: {} train documents of {}, {} bytes", split.train.size(), name, bytes);
  }
  BpeModel model = trainer.train();
  if (stats) *stats = trainer.stats();
  return model;
}

}  // namespace dspark::train
