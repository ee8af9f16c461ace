#include "data/bpe_model.h"

#include <fstream>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/byte_level.h"

namespace dspark::train {
namespace {

using OrderedJson = nlohmann::ordered_json;

void write_json(const std::filesystem::path& path, const OrderedJson& j) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  DSPARK_CHECK(out.good(), "cannot write {}", path.string());
  out << j.dump(2) << '\n';
  out.close();
  DSPARK_CHECK(out.good(), "failed writing {}", path.string());
}

OrderedJson added_token_json(const std::string& content) {
  OrderedJson t;
  t["content"] = content;
  t["single_word"] = false;
  t["lstrip"] = false;
  t["rstrip"] = false;
  t["normalized"] = false;
  t["special"] = true;
  return t;
}

// The byte-level string of token id (special tokens are stored as their text).
std::string vocab_string(const BpeModel& model, int32_t id) {
  if (id < model.num_special()) return model.tokens[id];
  return bytes_to_byte_level(model.tokens[id]);
}

std::string find_special(const BpeModel& model, std::string_view name) {
  for (const auto& s : model.special_tokens)
    if (s == name) return s;
  return {};
}

}  // namespace

void write_tokenizer_files(const BpeModel& model, const std::filesystem::path& dir) {
  DSPARK_CHECK(model.vocab_size() == model.first_merge_id() + static_cast<int64_t>(model.merges.size()),
               "BPE model is inconsistent: {} tokens, {} special, {} merges", model.vocab_size(),
               model.num_special(), model.merges.size());
  std::filesystem::create_directories(dir);

  OrderedJson tok;
  tok["version"] = "1.0";
  tok["truncation"] = nullptr;
  tok["padding"] = nullptr;
  OrderedJson added = OrderedJson::array();
  for (int32_t id = 0; id < model.num_special(); ++id) {
    OrderedJson t;
    t["id"] = id;
    t.update(added_token_json(model.special_tokens[id]));
    added.push_back(std::move(t));
  }
  tok["added_tokens"] = added;
  tok["normalizer"] = nullptr;
  OrderedJson split;
  split["type"] = "Split";
  split["pattern"] = {{"Regex", model.pattern}};
  split["behavior"] = "Isolated";
  split["invert"] = false;
  OrderedJson byte_level;
  byte_level["type"] = "ByteLevel";
  byte_level["add_prefix_space"] = false;
  byte_level["trim_offsets"] = true;
  byte_level["use_regex"] = false;
  OrderedJson pre;
  pre["type"] = "Sequence";
  pre["pretokenizers"] = {split, byte_level};
  tok["pre_tokenizer"] = pre;
  OrderedJson post;
  post["type"] = "ByteLevel";
  post["add_prefix_space"] = false;
  post["trim_offsets"] = false;
  post["use_regex"] = false;
  tok["post_processor"] = post;
  OrderedJson decoder;
  decoder["type"] = "ByteLevel";
  decoder["add_prefix_space"] = false;
  decoder["trim_offsets"] = false;
  decoder["use_regex"] = false;
  tok["decoder"] = decoder;

  OrderedJson bpe;
  bpe["type"] = "BPE";
  bpe["dropout"] = nullptr;
  bpe["unk_token"] = nullptr;
  bpe["continuing_subword_prefix"] = nullptr;
  bpe["end_of_word_suffix"] = nullptr;
  bpe["fuse_unk"] = false;
  bpe["byte_fallback"] = false;
  bpe["ignore_merges"] = false;
  OrderedJson vocab = OrderedJson::object();
  for (int32_t id = 0; id < model.vocab_size(); ++id) {
    const std::string key = vocab_string(model, id);
    DSPARK_CHECK(!vocab.contains(key), "token string '{}' appears twice in the vocabulary", key);
    vocab[key] = id;
  }
  bpe["vocab"] = std::move(vocab);
  OrderedJson merges = OrderedJson::array();
  for (const auto& [left, right] : model.merges)
    merges.push_back(vocab_string(model, left) + " " + vocab_string(model, right));
  bpe["merges"] = std::move(merges);
  tok["model"] = std::move(bpe);
  write_json(dir / "tokenizer.json", tok);

  const std::string eos = find_special(model, kEndOfTextToken);
  const std::string pad = find_special(model, kPadToken);
  const std::string mask = find_special(model, kMaskToken);
  auto name_or_null = [](const std::string& s) { return s.empty() ? OrderedJson(nullptr) : OrderedJson(s); };

  OrderedJson config;
  config["add_bos_token"] = false;
  config["add_eos_token"] = false;
  OrderedJson decoder_map = OrderedJson::object();
  for (int32_t id = 0; id < model.num_special(); ++id)
    decoder_map[std::to_string(id)] = added_token_json(model.special_tokens[id]);
  config["added_tokens_decoder"] = decoder_map;
  config["bos_token"] = nullptr;
  config["eos_token"] = name_or_null(eos);
  config["pad_token"] = name_or_null(pad);
  config["mask_token"] = name_or_null(mask);
  config["unk_token"] = nullptr;
  config["clean_up_tokenization_spaces"] = false;
  config["model_max_length"] = 1000000000;
  config["tokenizer_class"] = "PreTrainedTokenizerFast";
  write_json(dir / "tokenizer_config.json", config);

  OrderedJson special_map = OrderedJson::object();
  if (!eos.empty()) special_map["eos_token"] = eos;
  if (!pad.empty()) special_map["pad_token"] = pad;
  if (!mask.empty()) special_map["mask_token"] = mask;
  write_json(dir / "special_tokens_map.json", special_map);
}

BpeModel read_tokenizer_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  DSPARK_CHECK(in.good(), "cannot open {}", path.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    DSPARK_FAIL("{} is not valid JSON: {}", path.string(), e.what());
  }
  const std::string where = path.string();
  DSPARK_CHECK(j.contains("model") && j["model"].value("type", "") == "BPE",
               "{}: model.type is not BPE", where);
  const auto& pre = j["pre_tokenizer"];
  DSPARK_CHECK(pre.is_object() && pre.value("type", "") == "Sequence" &&
                   pre["pretokenizers"].size() == 2 &&
                   pre["pretokenizers"][0].value("type", "") == "Split" &&
                   pre["pretokenizers"][1].value("type", "") == "ByteLevel",
               "{}: pre_tokenizer is not Sequence[Split(Regex), ByteLevel]", where);
  BpeModel model;
  model.pattern = pre["pretokenizers"][0]["pattern"].at("Regex").get<std::string>();

  std::map<int32_t, std::string> specials;
  for (const auto& t : j.value("added_tokens", nlohmann::json::array()))
    specials[t.at("id").get<int32_t>()] = t.at("content").get<std::string>();
  for (const auto& [id, content] : specials) {
    DSPARK_CHECK(id == model.num_special(), "{}: added token ids must be 0..n-1, got {} for '{}'",
                 where, id, content);
    model.special_tokens.push_back(content);
  }

  const auto& vocab = j["model"].at("vocab");
  model.tokens.assign(vocab.size(), std::string());
  std::vector<bool> filled(vocab.size(), false);
  for (const auto& [key, value] : vocab.items()) {
    const auto id = value.get<int64_t>();
    DSPARK_CHECK(id >= 0 && id < static_cast<int64_t>(vocab.size()) && !filled[id],
                 "{}: vocabulary ids are not 0..{} (token '{}' has {})", where, vocab.size() - 1,
                 key, id);
    filled[id] = true;
    model.tokens[id] = id < model.num_special() ? key : byte_level_to_bytes(key);
  }
  for (int32_t id = 0; id < model.num_special(); ++id)
    DSPARK_CHECK(model.tokens[id] == model.special_tokens[id],
                 "{}: vocabulary id {} is '{}', added token says '{}'", where, id, model.tokens[id],
                 model.special_tokens[id]);
  for (int b = 0; b < 256; ++b)
    DSPARK_CHECK(model.tokens[model.byte_id(b)] == std::string(1, static_cast<char>(b)),
                 "{}: id {} is not the single byte 0x{:02X}", where, model.byte_id(b), b);

  std::unordered_map<std::string, int32_t> id_of;
  for (int32_t id = model.num_special(); id < model.vocab_size(); ++id) id_of[model.tokens[id]] = id;
  for (const auto& m : j["model"].at("merges")) {
    std::string left;
    std::string right;
    if (m.is_string()) {
      const auto s = m.get<std::string>();
      const size_t space = s.find(' ');
      DSPARK_CHECK(space != std::string::npos, "{}: merge '{}' has no space", where, s);
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else {
      left = m.at(0).get<std::string>();
      right = m.at(1).get<std::string>();
    }
    const auto l = id_of.find(byte_level_to_bytes(left));
    const auto r = id_of.find(byte_level_to_bytes(right));
    DSPARK_CHECK(l != id_of.end() && r != id_of.end(), "{}: merge '{} {}' uses an unknown token",
                 where, left, right);
    const int32_t expected = model.first_merge_id() + static_cast<int32_t>(model.merges.size());
    const auto result = id_of.find(l->first + r->first);
    DSPARK_CHECK(result != id_of.end() && result->second == expected,
                 "{}: merge {} '{} {}' does not produce id {}", where, model.merges.size(), left,
                 right, expected);
    model.merges.emplace_back(l->second, r->second);
  }
  DSPARK_CHECK(model.vocab_size() == model.first_merge_id() + static_cast<int64_t>(model.merges.size()),
               "{}: {} tokens but {} merges", where, model.vocab_size(), model.merges.size());
  return model;
}

}  // namespace dspark::train
