// A few seconds of mixed traffic against one server — streaming and whole responses,
// greedy and sampled, stop strings, chat, clients vanishing mid-stream, bad requests, an
// oversized stop list, clients dripping their headers a byte at a time, overload — then:
// every greedy answer equal to the offline one, every accepted request finished exactly
// once, all KV blocks free, nothing running or waiting, resident memory within 20% of its
// value after a warm-up round of the same traffic, and a greedy request answered as before.
#include <atomic>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "server/raw_connection.h"
#include "server/test_server.h"

namespace dspark {
namespace {

using nlohmann::json;
using namespace testing;

TEST(ServerSoak, MixedTrafficLeavesNothingBehind) {
  TestServerOptions o;
  o.speculator = "ngram";
  o.max_running = 4;
  o.max_waiting = 3;  // 10 clients: some requests find the queue full
  o.configure_http = [](HttpServerOptions& h) { h.request_read_timeout_seconds = 1.0; };
  TestServer server(o);
  const int port = server.port();

  const std::vector<std::string> prompts = {"Once upon a time", "The dog ran and ran and ran", "Lily saw a bird",
                                            "Ben was sad"};
  OfflineReference offline;
  std::vector<std::string> greedy_text, stop_text;
  for (const auto& p : prompts) {
    greedy_text.push_back(offline.run(offline.encode(p), greedy_options(24)).text);
    stop_text.push_back(offline.run(offline.encode(p), greedy_options(40, {"the", "."})).text);
  }

  std::atomic<int64_t> accepted{0}, rejected{0}, mismatches{0}, unexpected{0}, requests{0}, dripped{0};
  auto deadline = std::chrono::steady_clock::now();
  auto worker = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    while (std::chrono::steady_clock::now() < deadline) {
      const size_t p = rng() % prompts.size();
      const int kind = static_cast<int>(rng() % 8);
      json body = {{"prompt", prompts[p]}, {"max_tokens", 24}, {"temperature", 0}};
      ++requests;
      int status = 0;
      switch (kind) {
        case 0: {  // whole, greedy
          const auto r = http_post(port, "/v1/completions", body.dump());
          status = r.status;
          if (status == 200 && r.json["choices"][0]["text"] != greedy_text[p]) ++mismatches;
          break;
        }
        case 1: {  // streamed, greedy
          body["stream"] = true;
          const auto r = http_stream(port, "/v1/completions", body.dump());
          status = r.status;
          if (status == 200 && (!r.done || r.text != greedy_text[p])) ++mismatches;
          break;
        }
        case 2: {  // streamed, sampled
          body.update({{"stream", true}, {"temperature", 0.8}, {"top_p", 0.9}, {"top_k", 20},
                       {"seed", static_cast<int64_t>(rng() % 1000)}});
          const auto r = http_stream(port, "/v1/completions", body.dump());
          status = r.status;
          if (status == 200 && (!r.done || (r.finish_reason != "stop" && r.finish_reason != "length"))) ++unexpected;
          break;
        }
        case 3: {  // a client that goes away
          body.update({{"stream", true}, {"max_tokens", 300}, {"ignore_eos", true}});
          const int keep = 1 + static_cast<int>(rng() % 3);
          int seen = 0;
          status = http_stream(port, "/v1/completions", body.dump(), [&](const json&) { return ++seen < keep; }).status;
          break;
        }
        case 4: {  // bad request
          body["top_p"] = 0;
          const auto r = http_post(port, "/v1/completions", body.dump());
          if (r.status != 400) ++unexpected;
          continue;  // never reaches the engine
        }
        case 7: {  // more stop strings than allowed (64): refused before the engine
          body["stop"] = std::vector<std::string>(65, "x");
          if (http_post(port, "/v1/completions", body.dump()).status != 400) ++unexpected;
          continue;
        }
        case 5: {  // stop strings
          body.update({{"stop", {"the", "."}}, {"max_tokens", 40}});
          const auto r = http_post(port, "/v1/completions", body.dump());
          status = r.status;
          if (status == 200 && r.json["choices"][0]["text"] != stop_text[p]) ++mismatches;
          break;
        }
        default: {  // chat, streamed
          const json chat = {{"messages", {{{"role", "user"}, {"content", prompts[p]}}}},
                             {"max_tokens", 16}, {"temperature", 0}, {"stream", true}};
          const auto r = http_stream(port, "/v1/chat/completions", chat.dump());
          status = r.status;
          if (status == 200 && !r.done) ++unexpected;
        }
      }
      if (status == 200) ++accepted;
      else if (status == 429) {
        ++rejected;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // back off, as a client should
      } else {
        ++unexpected;
      }
    }
  };
  // A client that drips a request's headers a byte every 20 ms: the server closes it at
  // its read deadline (1 s) without answering, and nobody else waits for it.
  auto dripper = [&] {
    const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
    while (std::chrono::steady_clock::now() < deadline) {
      RawConnection c(port);
      for (size_t i = 0; i < head.size() && c.send(head.substr(i, 1)); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      const std::string got = c.read_until([](const std::string&) { return false; }, std::chrono::seconds(2));
      if (!c.closed_by_peer() || got.find("200 OK") != std::string::npos) ++unexpected;
      ++dripped;
    }
  };
  auto run_traffic = [&](std::chrono::milliseconds length, uint64_t seed) {
    deadline = std::chrono::steady_clock::now() + length;
    std::vector<std::thread> clients;
    for (uint64_t t = 0; t < 10; ++t) clients.emplace_back(worker, seed + t);
    clients.emplace_back(dripper);
    for (auto& c : clients) c.join();
    EXPECT_TRUE(wait_until_idle(port, std::chrono::milliseconds(5000)));
  };
  run_traffic(std::chrono::milliseconds(1500), 10);  // warm-up: arenas, buffers, kernels
  const int64_t warm_rss = rss_bytes();
  accepted = rejected = requests = 0;
  const double rejected_before = *server_metric(port, "dspark:num_requests_rejected");
  const double finished_before = [&] {
    double f = 0;
    const std::string page = http_get(port, "/metrics").body;
    for (const char* reason : {"stop", "length", "cancelled", "error"}) {
      f += *metric(page, std::string("dspark:num_requests_finished{finished_reason=\"") + reason + "\"}");
    }
    return f;
  }();
  run_traffic(std::chrono::milliseconds(4000), 100);

  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(unexpected, 0);
  EXPECT_GT(accepted, 20) << "too little traffic to mean anything";
  EXPECT_GT(rejected, 0) << "the queue limit was never reached";
  EXPECT_GT(dripped, 1);
  const std::string page = http_get(port, "/metrics").body;
  double finished = 0;
  for (const char* reason : {"stop", "length", "cancelled", "error"}) {
    finished += *metric(page, std::string("dspark:num_requests_finished{finished_reason=\"") + reason + "\"}");
  }
  EXPECT_EQ(finished - finished_before, static_cast<double>(accepted));
  EXPECT_EQ(*metric(page, "dspark:num_requests_finished{finished_reason=\"error\"}"), 0.0);
  EXPECT_EQ(*metric(page, "dspark:num_requests_rejected") - rejected_before, static_cast<double>(rejected));
  EXPECT_EQ(*metric(page, "dspark:kv_cache_blocks_used"), 0.0);
  const int64_t end_rss = rss_bytes();
  EXPECT_LE(end_rss, warm_rss + warm_rss / 5) << "resident memory grew from " << warm_rss << " to " << end_rss;
  EXPECT_GT(*metric(page, "dspark:num_requests_finished{finished_reason=\"cancelled\"}"), 0.0);
  EXPECT_EQ(server.loop().stats().in_flight, 0);
  const auto after = http_post(port, "/v1/completions", json{{"prompt", prompts[0]}, {"max_tokens", 24}, {"temperature", 0}}.dump());
  ASSERT_EQ(after.status, 200);
  EXPECT_EQ(after.json["choices"][0]["text"], greedy_text[0]);
  std::printf("[soak] %lld requests: %lld accepted, %lld refused (429), %lld dripping clients; RSS %.1f -> %.1f MB\n",
              static_cast<long long>(requests.load()), static_cast<long long>(accepted.load()),
              static_cast<long long>(rejected.load()), static_cast<long long>(dripped.load()), warm_rss / 1e6,
              end_rss / 1e6);
}

}  // namespace
}  // namespace dspark
