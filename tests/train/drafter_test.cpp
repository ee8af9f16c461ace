// The libtorch block drafter: one masked forward over many anchor blocks against a naive
// per-block reference (double precision, one block at a time, full attention over the
// context before the anchor and the block itself; f32 tolerance 2e-5), the attention mask
// on a tiny case, block independence, the DSpark heads (vanilla and contextual Markov), the
// DFlash slot offset, and growing a drafter (drafter_grow.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "spec/drafter_config.h"
#include "core/check.h"
#include "train/draft/drafter.h"
#include "train/draft/drafter_grow.h"

namespace dspark::train {
namespace {

using Vec = std::vector<double>;

ModelConfig layer_config(bool qwen3) {
  ModelConfig c;
  c.model_type = qwen3 ? ModelType::kQwen3 : ModelType::kLlama;
  c.model_type_name = qwen3 ? "qwen3" : "llama";
  c.vocab_size = 40;
  c.hidden_size = 24;
  c.intermediate_size = 40;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 128;
  c.rms_norm_eps = 1e-6f;
  c.rope_theta = 10000.0f;
  c.qk_norm = qwen3;
  return c;
}

DrafterConfig drafter_config(bool qwen3, DrafterKind kind) {
  DrafterConfig d;
  d.kind = kind;
  d.architecture = kind == DrafterKind::kDSpark ? "DSparkDraftModel" : "DFlashDraftModel";
  d.layer = layer_config(qwen3);
  d.block_size = 4;
  d.aux_hidden_state_layer_ids = {1, 3};
  d.mask_token_id = 2;
  d.target_hidden_size = 16;
  d.draft_vocab_size = 40;
  d.sample_from_anchor = kind == DrafterKind::kDSpark;
  d.markov_rank = kind == DrafterKind::kDSpark ? 6 : 0;
  d.enable_confidence_head = kind == DrafterKind::kDSpark;
  d.confidence_head_with_markov = kind == DrafterKind::kDSpark;
  d.speculative_tokens = d.num_drafts();
  return d;
}

std::shared_ptr<DrafterImpl> make(const DrafterConfig& c, uint64_t seed) {
  at::manual_seed(seed);
  auto embed = at::randn({c.layer.vocab_size, c.layer.hidden_size});
  auto head = at::randn({c.layer.vocab_size, c.layer.hidden_size}) * 0.2;
  auto d = std::make_shared<DrafterImpl>(c, embed, head);
  d->init_weights(0.2, seed + 1);
  at::NoGradGuard no_grad;
  // Non-trivial norms, heads and biases so the reference sees every weight.
  for (auto& item : d->named_parameters()) {
    const std::string& name = item.key();
    if (name.find("norm") != std::string::npos) item.value().uniform_(0.5, 1.5);
    if (name.find("markov_w2") != std::string::npos || name.find("context_out") != std::string::npos ||
        name.find("bias") != std::string::npos)
      item.value().normal_(0.0, 0.3);
  }
  return d;
}

DrafterConfig contextual(DrafterConfig c, int64_t width) {
  c.markov_head_type = "contextual";
  c.markov_context_size = width;
  return c;
}

std::map<std::string, Vec> weights_of(const DrafterImpl& d) {
  std::map<std::string, Vec> out;
  for (const auto& item : d.named_parameters()) {
    auto t = item.value().detach().to(at::kDouble).contiguous();
    out[item.key()] = Vec(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  }
  return out;
}

Vec to_vec(const torch::Tensor& t) {
  auto c = t.detach().to(at::kDouble).contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

Vec matvec(const Vec& w, const Vec& x, int64_t rows) {
  const int64_t cols = static_cast<int64_t>(x.size());
  Vec y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
  return y;
}

Vec rms(const Vec& x, const Vec& w, double eps, size_t off = 0, size_t n = 0) {
  if (n == 0) n = x.size();
  double ms = 0;
  for (size_t i = 0; i < n; ++i) ms += x[off + i] * x[off + i];
  const double inv = 1.0 / std::sqrt(ms / static_cast<double>(n) + eps);
  Vec y(n);
  for (size_t i = 0; i < n; ++i) y[i] = x[off + i] * inv * w[i];
  return y;
}

// Rotate-half RoPE of one head vector at a position.
void rope(double* v, int64_t d, int64_t pos, double theta) {
  const int64_t half = d / 2;
  Vec out(d);
  for (int64_t i = 0; i < d; ++i) {
    const int64_t f = i % half;
    const double inv = 1.0 / std::pow(theta, static_cast<double>(2 * f) / static_cast<double>(d));
    const double ang = static_cast<double>(static_cast<float>(pos)) * inv;
    const double rot = i < half ? -v[i + half] : v[i - half];
    out[i] = v[i] * std::cos(ang) + rot * std::sin(ang);
  }
  std::copy(out.begin(), out.end(), v);
}

// Final-norm states of one block anchored at a: [γ][H]. ctx: rows 0..a−1 of [T][H].
std::vector<Vec> reference_block(const DrafterConfig& dc, const std::map<std::string, Vec>& w, const Vec& embed,
                                 const std::vector<Vec>& ctx, const std::vector<int64_t>& ids, int64_t a) {
  const ModelConfig& c = dc.layer;
  const int64_t h = c.hidden_size, nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int64_t g = dc.block_size, f = c.intermediate_size;
  std::vector<Vec> x(g);
  for (int64_t r = 0; r < g; ++r) {
    const int64_t tok = r == 0 ? ids[a] : dc.mask_token_id;
    x[r] = Vec(embed.begin() + tok * h, embed.begin() + (tok + 1) * h);
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    auto W = [&](const std::string& n) -> const Vec& { return w.at(p + n); };
    std::vector<Vec> n(g), q(g);
    std::vector<Vec> k, v;  // keys: context rows then block rows
    std::vector<int64_t> kpos;
    auto head_norm = [&](Vec& vec, const std::string& name, int64_t heads) {
      if (!c.qk_norm) return;
      for (int64_t hh = 0; hh < heads; ++hh) {
        Vec y = rms(vec, W(name), c.rms_norm_eps, hh * hd, hd);
        std::copy(y.begin(), y.end(), vec.begin() + hh * hd);
      }
    };
    for (int64_t i = 0; i < a; ++i) {
      k.push_back(matvec(W("self_attn.k_proj.weight"), ctx[i], nkv * hd));
      v.push_back(matvec(W("self_attn.v_proj.weight"), ctx[i], nkv * hd));
      kpos.push_back(i);
    }
    for (int64_t r = 0; r < g; ++r) {
      n[r] = rms(x[r], W("input_layernorm.weight"), c.rms_norm_eps);
      q[r] = matvec(W("self_attn.q_proj.weight"), n[r], nh * hd);
      k.push_back(matvec(W("self_attn.k_proj.weight"), n[r], nkv * hd));
      v.push_back(matvec(W("self_attn.v_proj.weight"), n[r], nkv * hd));
      kpos.push_back(a + r);
      head_norm(q[r], "self_attn.q_norm.weight", nh);
      for (int64_t hh = 0; hh < nh; ++hh) rope(q[r].data() + hh * hd, hd, a + r, c.rope_theta);
    }
    for (size_t i = 0; i < k.size(); ++i) {
      head_norm(k[i], "self_attn.k_norm.weight", nkv);
      for (int64_t hh = 0; hh < nkv; ++hh) rope(k[i].data() + hh * hd, hd, kpos[i], c.rope_theta);
    }
    for (int64_t r = 0; r < g; ++r) {
      Vec attn(nh * hd, 0.0);
      for (int64_t hh = 0; hh < nh; ++hh) {
        const int64_t kh = hh / (nh / nkv);
        Vec s(k.size());
        double mx = -1e300;
        for (size_t i = 0; i < k.size(); ++i) {
          double dot = 0;
          for (int64_t e = 0; e < hd; ++e) dot += q[r][hh * hd + e] * k[i][kh * hd + e];
          s[i] = dot / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, s[i]);
        }
        double z = 0;
        for (double& e : s) z += (e = std::exp(e - mx));
        for (size_t i = 0; i < k.size(); ++i)
          for (int64_t e = 0; e < hd; ++e) attn[hh * hd + e] += s[i] / z * v[i][kh * hd + e];
      }
      Vec o = matvec(W("self_attn.o_proj.weight"), attn, h);
      for (int64_t e = 0; e < h; ++e) x[r][e] += o[e];
      Vec m = rms(x[r], W("post_attention_layernorm.weight"), c.rms_norm_eps);
      Vec gt = matvec(W("mlp.gate_proj.weight"), m, f), up = matvec(W("mlp.up_proj.weight"), m, f);
      for (int64_t e = 0; e < f; ++e) gt[e] = gt[e] / (1.0 + std::exp(-gt[e])) * up[e];
      Vec dn = matvec(W("mlp.down_proj.weight"), gt, h);
      for (int64_t e = 0; e < h; ++e) x[r][e] += dn[e];
    }
  }
  for (int64_t r = 0; r < g; ++r) x[r] = rms(x[r], w.at("norm.weight"), c.rms_norm_eps);
  return x;
}

class DrafterForwardTest : public ::testing::TestWithParam<bool> {};

TEST_P(DrafterForwardTest, MatchesPerBlockReference) {
  const bool qwen3 = GetParam();
  const DrafterConfig dc = drafter_config(qwen3, DrafterKind::kDSpark);
  auto d = make(dc, 7);
  const auto w = weights_of(*d);
  const int64_t t = 12, h = dc.layer.hidden_size, k_in = 2 * dc.target_hidden_size;
  at::manual_seed(3);
  auto aux = at::randn({1, t, k_in});
  auto ids = at::randint(3, dc.layer.vocab_size, {1, t}, at::TensorOptions().dtype(at::kLong));
  auto anchors = at::tensor(std::vector<int64_t>{0, 2, 5, 11}, at::kLong).view({1, 4});
  at::NoGradGuard no_grad;
  auto ctx = d->context(aux);
  auto states = d->block_states(ctx, ids, anchors);  // [1, 4, γ, H]
  ASSERT_EQ(states.sizes(), (std::vector<int64_t>{1, 4, dc.block_size, h}));

  // Context features: RMSNorm_h(fc(aux)).
  std::vector<Vec> ctx_ref;
  const Vec aux_v = to_vec(aux);
  for (int64_t i = 0; i < t; ++i) {
    Vec row(aux_v.begin() + i * k_in, aux_v.begin() + (i + 1) * k_in);
    ctx_ref.push_back(rms(matvec(w.at("fc.weight"), row, h), w.at("hidden_norm.weight"), dc.layer.rms_norm_eps));
  }
  const Vec ctx_v = to_vec(ctx);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t e = 0; e < h; ++e) ASSERT_NEAR(ctx_v[i * h + e], ctx_ref[i][e], 2e-5) << "ctx row " << i;

  const Vec embed = to_vec(d->embed_tokens());
  std::vector<int64_t> id_v(t);
  for (int64_t i = 0; i < t; ++i) id_v[i] = ids[0][i].item<int64_t>();
  const Vec got = to_vec(states);
  double max_err = 0;
  for (int64_t n = 0; n < 4; ++n) {
    const int64_t a = anchors[0][n].item<int64_t>();
    const auto ref = reference_block(dc, w, embed, ctx_ref, id_v, a);
    for (int64_t r = 0; r < dc.block_size; ++r)
      for (int64_t e = 0; e < h; ++e) {
        const double g = got[((n * dc.block_size) + r) * h + e];
        max_err = std::max(max_err, std::abs(g - ref[r][e]));
        ASSERT_NEAR(g, ref[r][e], 2e-5) << "anchor " << a << " slot " << r << " dim " << e;
      }
  }
  EXPECT_LT(max_err, 2e-5);
}

INSTANTIATE_TEST_SUITE_P(LlamaAndQwen3, DrafterForwardTest, ::testing::Values(false, true));

TEST(DrafterMaskTest, ContextStrictlyBeforeAnchorAndBidirectionalInBlock) {
  // T = 5, γ = 2, anchors 1 and 3: rows are (block 0: q0, q1), (block 1: q2, q3);
  // columns 0..4 context, 5..8 block rows. 1 = may attend.
  auto anchors = at::tensor(std::vector<int64_t>{1, 3}, at::kLong).view({1, 2});
  auto mask = block_attention_mask(anchors, 5, 2);
  ASSERT_EQ(mask.sizes(), (std::vector<int64_t>{1, 1, 4, 9}));
  const int allowed[4][9] = {
      {1, 0, 0, 0, 0, 1, 1, 0, 0},
      {1, 0, 0, 0, 0, 1, 1, 0, 0},
      {1, 1, 1, 0, 0, 0, 0, 1, 1},
      {1, 1, 1, 0, 0, 0, 0, 1, 1},
  };
  for (int q = 0; q < 4; ++q)
    for (int k = 0; k < 9; ++k)
      EXPECT_EQ(!mask[0][0][q][k].item<bool>(), allowed[q][k] == 1) << "query " << q << " key " << k;
}

TEST(DrafterMaskTest, BlockInputsAreAnchorThenMasks) {
  auto ids = at::tensor(std::vector<int64_t>{10, 11, 12, 13, 14}, at::kLong).view({1, 5});
  auto anchors = at::tensor(std::vector<int64_t>{1, 3}, at::kLong).view({1, 2});
  auto block = block_input_ids(ids, anchors, 3, 2);
  const std::vector<int64_t> expected = {11, 2, 2, 13, 2, 2};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(block[0][i].item<int64_t>(), expected[i]);
}

TEST(DrafterMaskTest, BlocksDoNotSeeEachOther) {
  const DrafterConfig dc = drafter_config(true, DrafterKind::kDSpark);
  auto d = make(dc, 11);
  at::manual_seed(5);
  auto aux = at::randn({1, 10, 2 * dc.target_hidden_size});
  auto ids = at::randint(3, dc.layer.vocab_size, {1, 10}, at::TensorOptions().dtype(at::kLong));
  at::NoGradGuard no_grad;
  auto ctx = d->context(aux);
  auto many = d->block_states(ctx, ids, at::tensor(std::vector<int64_t>{1, 4, 7}, at::kLong).view({1, 3}));
  auto one = d->block_states(ctx, ids, at::tensor(std::vector<int64_t>{4}, at::kLong).view({1, 1}));
  EXPECT_LT((many.select(1, 1) - one.select(1, 0)).abs().max().item<double>(), 1e-6);
  // Context after the anchor must not matter: change every feature from position 4 on.
  auto aux2 = aux.clone();
  aux2.narrow(1, 4, 6).normal_();
  auto one2 = d->block_states(d->context(aux2), ids, at::tensor(std::vector<int64_t>{4}, at::kLong).view({1, 1}));
  EXPECT_LT((one2 - one).abs().max().item<double>(), 1e-6);
  // ... while context before it does.
  auto aux3 = aux.clone();
  aux3.narrow(1, 3, 1).normal_();
  auto one3 = d->block_states(d->context(aux3), ids, at::tensor(std::vector<int64_t>{4}, at::kLong).view({1, 1}));
  EXPECT_GT((one3 - one).abs().max().item<double>(), 1e-3);
}

TEST(DrafterHeadsTest, MarkovAndConfidenceFollowTheirDefinitions) {
  const DrafterConfig dc = drafter_config(false, DrafterKind::kDSpark);
  auto d = make(dc, 21);
  const auto w = weights_of(*d);
  at::manual_seed(9);
  auto h = at::randn({3, dc.layer.hidden_size});
  auto prev = at::tensor(std::vector<int64_t>{0, 5, 39}, at::kLong);
  at::NoGradGuard no_grad;
  const Vec logits = to_vec(d->draft_logits(h, prev));
  const Vec z = to_vec(d->confidence_logits(h, prev));
  const Vec hv = to_vec(h), head = to_vec(d->lm_head());
  const int64_t hs = dc.layer.hidden_size, v = dc.layer.vocab_size, r = dc.markov_rank;
  const Vec& w1 = w.at("markov_head.markov_w1.weight");
  const Vec& w2 = w.at("markov_head.markov_w2.weight");  // [V, r]
  const Vec& cw = w.at("confidence_head.proj.weight");   // [1, H + r]
  const double cb = w.at("confidence_head.proj.bias")[0];
  for (int i = 0; i < 3; ++i) {
    const int64_t x = prev[i].item<int64_t>();
    for (int64_t t = 0; t < v; ++t) {
      double u = 0, m = 0;
      for (int64_t e = 0; e < hs; ++e) u += head[t * hs + e] * hv[i * hs + e];
      for (int64_t e = 0; e < r; ++e) m += w2[t * r + e] * w1[x * r + e];
      ASSERT_NEAR(logits[i * v + t], u + m, 1e-4);
    }
    double s = cb;
    for (int64_t e = 0; e < hs; ++e) s += cw[e] * hv[i * hs + e];
    for (int64_t e = 0; e < r; ++e) s += cw[hs + e] * w1[x * r + e];
    EXPECT_NEAR(z[i], s, 1e-5);
  }
}

// f_j = W₁[x] + W_out·SiLU(W_in·[h ; W₁[x]]), logits = U + W₂·f_j; the confidence head
// still sees W₁[x] (spec/dspark_heads.h).
TEST(DrafterHeadsTest, ContextualMarkovFollowsItsDefinition) {
  const DrafterConfig dc = contextual(drafter_config(true, DrafterKind::kDSpark), 10);
  auto d = make(dc, 23);
  const auto w = weights_of(*d);
  at::manual_seed(11);
  auto h = at::randn({3, dc.layer.hidden_size});
  auto prev = at::tensor(std::vector<int64_t>{1, 7, 39}, at::kLong);
  at::NoGradGuard no_grad;
  const Vec logits = to_vec(d->draft_logits(h, prev));
  const Vec hv = to_vec(h), head = to_vec(d->lm_head());
  const int64_t hs = dc.layer.hidden_size, v = dc.layer.vocab_size, r = dc.markov_rank, m = dc.markov_context_size;
  const Vec& w1 = w.at("markov_head.markov_w1.weight");
  const Vec& w2 = w.at("markov_head.markov_w2.weight");        // [V, r]
  const Vec& w_in = w.at("markov_head.context_in.weight");     // [m, H + r]
  const Vec& w_out = w.at("markov_head.context_out.weight");   // [r, m]
  double largest_context_term = 0;
  for (int i = 0; i < 3; ++i) {
    const int64_t x = prev[i].item<int64_t>();
    Vec in(hv.begin() + i * hs, hv.begin() + (i + 1) * hs);
    in.insert(in.end(), w1.begin() + x * r, w1.begin() + (x + 1) * r);
    Vec mid(m), f(w1.begin() + x * r, w1.begin() + (x + 1) * r);
    for (int64_t a = 0; a < m; ++a) {
      double s = 0;
      for (int64_t e = 0; e < hs + r; ++e) s += w_in[a * (hs + r) + e] * in[e];
      mid[a] = s / (1 + std::exp(-s));
    }
    for (int64_t e = 0; e < r; ++e) {
      double s = 0;
      for (int64_t a = 0; a < m; ++a) s += w_out[e * m + a] * mid[a];
      f[e] += s;
      largest_context_term = std::max(largest_context_term, std::abs(s));
    }
    for (int64_t t = 0; t < v; ++t) {
      double u = 0, bias = 0;
      for (int64_t e = 0; e < hs; ++e) u += head[t * hs + e] * hv[i * hs + e];
      for (int64_t e = 0; e < r; ++e) bias += w2[t * r + e] * f[e];
      ASSERT_NEAR(logits[i * v + t], u + bias, 1e-4);
    }
  }
  EXPECT_GT(largest_context_term, 0.05);  // the MLP term is not negligible in this check
  // The confidence head is the vanilla one's: h and W₁[x] only.
  auto vanilla = make(drafter_config(true, DrafterKind::kDSpark), 23);
  for (auto& item : vanilla->named_parameters()) item.value().copy_(d->named_parameters()[item.key()]);
  EXPECT_TRUE(at::equal(vanilla->confidence_logits(h, prev), d->confidence_logits(h, prev)));
}

TEST(DrafterHeadsTest, DFlashDraftsFromTheSlotsAfterTheAnchor) {
  const DrafterConfig dc = drafter_config(false, DrafterKind::kDFlash);
  auto d = make(dc, 31);
  EXPECT_FALSE(d->has_markov());
  EXPECT_FALSE(d->has_confidence());
  EXPECT_EQ(d->num_drafts(), dc.block_size - 1);
  auto states = at::randn({1, 2, dc.block_size, dc.layer.hidden_size});
  auto drafting = d->drafting_states(states);
  ASSERT_EQ(drafting.size(2), dc.block_size - 1);
  EXPECT_TRUE(at::equal(drafting.select(2, 0), states.select(2, 1)));
  // Parameter names are the speculators layout: no Markov / confidence tensors.
  for (const auto& item : d->named_parameters()) {
    EXPECT_EQ(item.key().find("markov"), std::string::npos);
    EXPECT_EQ(item.key().find("confidence"), std::string::npos);
  }
}


// A grown drafter computes what its source computes (drafter_grow.h): block states bit for
// bit, logits and z_j up to the longer Markov sums; the additions take gradient; shrinking
// is refused.
TEST(DrafterLayerIndexTest, ReadsTheLayerOfLayerParametersOnly) {
  EXPECT_EQ(decoder_layer_index("layers.0.self_attn.q_proj.weight"), 0);
  EXPECT_EQ(decoder_layer_index("layers.12.mlp.down_proj.weight"), 12);
  EXPECT_EQ(decoder_layer_index("fc.weight"), -1);
  EXPECT_EQ(decoder_layer_index("markov_w2.weight"), -1);
  EXPECT_EQ(decoder_layer_index("layers."), -1);
  EXPECT_EQ(decoder_layer_index("layers.3"), -1);
  EXPECT_EQ(decoder_layer_index("layers..weight"), -1);
  EXPECT_EQ(decoder_layer_index("layers.x.weight"), -1);
  EXPECT_EQ(decoder_layer_index("layers.1a.weight"), -1);
  EXPECT_EQ(decoder_layer_index("norm.layers.1.weight"), -1);
}

TEST(DrafterGrowTest, StartsAsItsSourceAndLearnsThroughTheAdditions) {
  const DrafterConfig dc = drafter_config(false, DrafterKind::kDSpark);
  auto source = make(dc, 41);
  auto grown = grow_drafter(*source, DrafterGrowth{dc.layer.num_hidden_layers + 1, dc.markov_rank + 5}, 0.2, 3);
  EXPECT_EQ(grown->config().layer.num_hidden_layers, dc.layer.num_hidden_layers + 1);
  EXPECT_EQ(grown->config().markov_rank, dc.markov_rank + 5);
  EXPECT_GT(grown->num_parameters(), source->num_parameters());

  const int64_t t = 12, k_in = 2 * dc.target_hidden_size;
  at::manual_seed(5);
  auto aux = at::randn({2, t, k_in});
  auto ids = at::randint(3, dc.layer.vocab_size, {2, t}, at::TensorOptions().dtype(at::kLong));
  auto anchors = at::tensor(std::vector<int64_t>{0, 3, 7, 1, 6, 10}, at::kLong).view({2, 3});
  auto prev = at::randint(0, dc.layer.vocab_size, {2, 3, dc.num_drafts()}, at::TensorOptions().dtype(at::kLong));
  {
    at::NoGradGuard no_grad;
    auto hs = source->drafting_states(source->block_states(source->context(aux), ids, anchors));
    auto hg = grown->drafting_states(grown->block_states(grown->context(aux), ids, anchors));
    EXPECT_TRUE(at::equal(hs, hg));
    EXPECT_TRUE(at::allclose(source->draft_logits(hs, prev), grown->draft_logits(hg, prev), 1e-6, 1e-6));
    EXPECT_TRUE(at::allclose(source->confidence_logits(hs, prev), grown->confidence_logits(hg, prev), 1e-6, 1e-6));
  }

  // The new layer's residual outputs, the new Markov columns and their confidence weights
  // all receive gradient from a loss on the drafts.
  auto hg = grown->drafting_states(grown->block_states(grown->context(aux), ids, anchors));
  (grown->draft_logits(hg, prev).logsumexp(-1).sum() + grown->confidence_logits(hg, prev).sum()).backward();
  const std::string last = "layers." + std::to_string(dc.layer.num_hidden_layers) + ".";
  for (const auto& item : grown->named_parameters()) {
    const std::string& name = item.key();
    const bool watched = name == last + "self_attn.o_proj.weight" || name == last + "mlp.down_proj.weight" ||
                         name == "markov_head.markov_w2.weight" || name == "confidence_head.proj.weight";
    if (!watched) continue;
    ASSERT_TRUE(item.value().grad().defined()) << name;
    EXPECT_GT(item.value().grad().abs().sum().item<double>(), 0.0) << name;
  }
  auto w2_grad = grown->named_parameters()["markov_head.markov_w2.weight"].grad();
  EXPECT_GT(w2_grad.narrow(1, dc.markov_rank, 5).abs().sum().item<double>(), 0.0);

  EXPECT_THROW(grow_drafter(*source, DrafterGrowth{dc.layer.num_hidden_layers - 1, dc.markov_rank}, 0.2, 3), Error);
  EXPECT_THROW(grow_drafter(*source, DrafterGrowth{dc.layer.num_hidden_layers, dc.markov_rank - 1}, 0.2, 3), Error);
  auto dflash = make(drafter_config(false, DrafterKind::kDFlash), 43);
  EXPECT_THROW(grow_drafter(*dflash, DrafterGrowth{dc.layer.num_hidden_layers, 4}, 0.2, 3), Error);
}

// An aux layer appended: fc's new columns start at zero, so the context and everything after
// it are unchanged; the new columns take gradient; the source's ids must come first.
TEST(DrafterGrowTest, AnAppendedAuxLayerStartsInert) {
  const DrafterConfig dc = drafter_config(true, DrafterKind::kDSpark);  // aux ids {1, 3}
  auto source = make(dc, 49);
  const int64_t layers = dc.layer.num_hidden_layers, r = dc.markov_rank, ht = dc.target_hidden_size;
  DrafterGrowth to{layers, r, 0, {1, 3, 4}};
  auto grown = grow_drafter(*source, to, 0.2, 3);
  EXPECT_EQ(grown->config().aux_hidden_state_layer_ids, (std::vector<int32_t>{1, 3, 4}));
  EXPECT_EQ(grown->capture_layers(), (std::vector<int64_t>{0, 2, 3}));

  const int64_t t = 10;
  at::manual_seed(8);
  auto aux = at::randn({2, t, 2 * ht});
  auto extra = at::randn({2, t, ht});
  auto ids = at::randint(3, dc.layer.vocab_size, {2, t}, at::TensorOptions().dtype(at::kLong));
  auto anchors = at::tensor(std::vector<int64_t>{1, 5, 2, 8}, at::kLong).view({2, 2});
  auto grown_ctx = grown->context(at::cat({aux, extra}, -1));
  {
    at::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(source->context(aux), grown_ctx));
  }
  grown->block_states(grown_ctx, ids, anchors).pow(2).sum().backward();
  auto fc_grad = grown->named_parameters()["fc.weight"].grad();
  ASSERT_TRUE(fc_grad.defined());
  EXPECT_GT(fc_grad.narrow(1, 2 * ht, ht).abs().sum().item<double>(), 0.0);

  EXPECT_THROW(grow_drafter(*source, DrafterGrowth{layers, r, 0, {3, 1, 4}}, 0.2, 3), Error);
  EXPECT_THROW(grow_drafter(*source, DrafterGrowth{layers, r, 0, {1}}, 0.2, 3), Error);
}

// A vanilla Markov head grown into a contextual one (and a contextual one widened) drafts
// exactly as before; the MLP's output layer takes gradient; narrowing is refused.
TEST(DrafterGrowTest, AVanillaMarkovHeadBecomesContextualUnchanged) {
  const DrafterConfig dc = drafter_config(true, DrafterKind::kDSpark);
  auto source = make(dc, 45);
  const int64_t layers = dc.layer.num_hidden_layers, r = dc.markov_rank;
  auto grown = grow_drafter(*source, DrafterGrowth{layers, r, 12}, 0.2, 3);
  EXPECT_TRUE(grown->config().contextual_markov());
  EXPECT_EQ(grown->config().markov_context_size, 12);

  at::manual_seed(6);
  auto h = at::randn({2, 3, dc.num_drafts(), dc.layer.hidden_size});
  auto prev = at::randint(0, dc.layer.vocab_size, {2, 3, dc.num_drafts()}, at::TensorOptions().dtype(at::kLong));
  {
    at::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(source->draft_logits(h, prev), grown->draft_logits(h, prev)));
    EXPECT_TRUE(at::equal(source->confidence_logits(h, prev), grown->confidence_logits(h, prev)));
  }
  grown->draft_logits(h, prev).logsumexp(-1).sum().backward();
  auto out_grad = grown->named_parameters()["markov_head.context_out.weight"].grad();
  ASSERT_TRUE(out_grad.defined());
  EXPECT_GT(out_grad.abs().sum().item<double>(), 0.0);

  // Widening a trained contextual head (W_out no longer zero) in rank and width: the new W₁
  // columns must not reach the old MLP units.
  {
    at::NoGradGuard no_grad;
    grown->named_parameters()["markov_head.context_out.weight"].normal_(0.0, 0.3);
    auto wider = grow_drafter(*grown, DrafterGrowth{layers, r + 2, 20}, 0.2, 4);
    EXPECT_EQ(wider->config().markov_context_size, 20);
    EXPECT_EQ(wider->config().markov_rank, r + 2);
    EXPECT_TRUE(at::allclose(grown->draft_logits(h, prev), wider->draft_logits(h, prev), 1e-5, 1e-5));
    EXPECT_THROW(grow_drafter(*wider, DrafterGrowth{layers, r + 2, 16}, 0.2, 3), Error);
  }

  auto dflash = make(drafter_config(true, DrafterKind::kDFlash), 47);
  EXPECT_THROW(grow_drafter(*dflash, DrafterGrowth{layers, 0, 8}, 0.2, 3), Error);
}

}  // namespace
}  // namespace dspark::train
