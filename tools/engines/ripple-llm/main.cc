// ripple-llm: a batch-1 transformer decoder in CUDA C++ with the layer shapes of a
// chosen model and random bf16 weights (no downloads): the inference engine whose memory
// traffic Ripple schedules.
//
//   --weights device   all weights in GPU memory (what a UMA device sees: every byte read
//                      per token comes from the one memory);
//   --weights host     weights in pinned host memory, streamed per layer: --stream copy
//                      (double-buffered cudaMemcpyAsync H2D, overlapped with compute) or
//                      --stream zerocopy (kernels read the mapped host pages over PCIe);
//   --kv host          the KV cache in pinned host memory: attention reads it over PCIe
//                      (H2D) and new K/V are stored to it (D2H);
//   --spill-mb N       per layer, also copy N MB D2H into pinned memory (an emulation of
//                      activation/KV spill at larger batch, labelled as such).
// A unit is one layer (plus the LM head as the last unit); each unit is an NVTX range
// named like its module ("model.layers.N", "lm_head", "visual.blocks.N") so the
// interposer finds the boundaries with its default pattern. It counts the bytes each
// unit moves and prints them beside the model's analytic weight + KV bytes.
//
// --frames runs a VLM-like deadline-bound request every period instead: a vision
// encoder over image patches, a prefill over the merged image tokens and the prompt,
// and a short decode; it reports the request latency against the deadline.
//
// Decode runs five fused kernels per layer (six with --stream copy; fused_kernels.cuh);
// --no-fuse runs the ten unfused ones (kernels.cu), which compute the same values; --check
// compares the two on the GPU (checks.cu).
//
// This file is the command line (CLI11) and the run loops; engine.h the engine, whose methods
// are in engine.cu; model.h the shapes and the analytic byte model.
#include "tools/engines/ripple-llm/engine.h"

#include "ripple/cli.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace ripple::llm {

// Measured ceilings: a large device-to-device copy (bytes read + written) and a pinned
// host-to-device copy.
struct Ceilings {
  double hbm_gbs = 0, h2d_gbs = 0, d2h_gbs = 0;
};

Ceilings probe() {
  Ceilings c;
  const size_t n = size_t(2) << 30;
  void *a, *b, *h;
  CUDA_CHECK(cudaMalloc(&a, n));
  CUDA_CHECK(cudaMalloc(&b, n));
  CUDA_CHECK(cudaHostAlloc(&h, n / 2, cudaHostAllocDefault));
  CUDA_CHECK(cudaMemset(a, 1, n));
  std::memset(h, 1, n / 2);
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  auto time = [&](auto&& f, int reps) {
    f();
    CUDA_CHECK(cudaEventRecord(e0));
    for (int i = 0; i < reps; ++i) f();
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return ms / reps / 1e3;
  };
  c.hbm_gbs = 2.0 * n / time([&] { CUDA_CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); }, 10) / 1e9;
  c.h2d_gbs = (n / 2) / time([&] { CUDA_CHECK(cudaMemcpyAsync(a, h, n / 2, cudaMemcpyHostToDevice)); }, 5) / 1e9;
  c.d2h_gbs = (n / 2) / time([&] { CUDA_CHECK(cudaMemcpyAsync(h, a, n / 2, cudaMemcpyDeviceToHost)); }, 5) / 1e9;
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFreeHost(h));
  return c;
}

[[noreturn]] void usage_error(const std::string& m) {
  std::fprintf(stderr, "ripple-llm: error: %s (see --help)\n", m.c_str());
  std::exit(2);
}

void usage() {
  std::printf(
      "ripple-llm: batch-1 transformer decoder with random bf16 weights (no downloads)\n"
      "  --preset NAME        model shapes (default qwen3-8b): ");
  for (const auto& p : kPresets) std::printf("%s ", p.name);
  std::printf(
      "\n  --weights device|host  where the weights live (default device)\n"
      "  --stream copy|zerocopy  host weights: async H2D per layer, or kernels read host memory\n"
      "  --kv device|host     where the KV cache lives (default device)\n"
      "  --spill-mb N         per layer, also copy N MB D2H (spill emulation; labelled)\n"
      "  --context N          KV positions already in the cache (default 1024)\n"
      "  --tokens N           decode tokens to time (default 32)\n"
      "  --duration-s S       decode continuously for S seconds instead (interference mode)\n"
      "  --per-unit           print every unit's counted bytes\n"
      "  --warmup N           untimed decode steps first (default 2)\n"
      "  --no-pdl             plain launches (default: programmatic dependent launch where\n"
      "                       weights are read in place)\n"
      "  --no-fuse            decode with the unfused kernels (ten per layer instead of five;\n"
      "                       the same arithmetic, the reference for --check)\n"
      "  --prefetch-mb N      during attention, prefetch up to N MB of the o projection's weights\n"
      "                       into L2 (device weights; default 0: off, it measured slower)\n"
      "  --check              compare the fused decode kernels with the unfused ones on the GPU\n"
      "                       (random inputs, one layer), print the differences, PASS/FAIL, exit\n"
      "  --graph              replay one captured decode step (CUDA graph) instead of eager\n"
      "                       launches; device or zerocopy weights only. Eager is what Ripple\n"
      "                       gates; the graph shows the bandwidth-bound rate\n"
      "  --no-probe           skip the bandwidth ceilings\n"
      "  --device N           CUDA device\n"
      "  --frames             VLM-like mode: one request (vision encoder, prefill, short decode)\n"
      "                       per --period-ms, checked against --deadline-ms (default: period)\n"
      "  --requests N --image-tokens N --prompt-tokens N --frame-decode-tokens N\n"
      "  --token-log FILE     decode: write token,end_ns (CLOCK_MONOTONIC) per timed token as it\n"
      "                       ends (the stream is synchronised after every token then)\n"
      "  --frame-log FILE     write frame,release_ns,start_ns,end_ns (CLOCK_MONOTONIC) per frame\n"
      "                       as it ends, warm-up frame 0 included; release = its scheduled time\n");
}

int main_impl(int argc, char** argv) {
  Options o;
  auto num = [&](const std::string& v, const char* flag, double lo, double hi) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(d >= lo && d <= hi))
      usage_error(std::string(flag) + " '" + v + "' is not a number in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
    return d;
  };
  // CLI11 reads the command line; each value is checked by the callbacks below with the
  // messages the tool has always given (usage() is the --help text).
  CLI::App app{"ripple-llm", "ripple-llm"};
  cli::configure(app);
  bool help = false;
  app.add_flag("-h,--help", help);
  auto number = [&](const char* flag, double lo, double hi, auto set) {
    app.add_option_function<std::string>(flag, [&num, flag, lo, hi, set](const std::string& v) { set(num(v, flag, lo, hi)); });
  };
  app.add_option("--preset", o.preset);
  auto place = [&](const char* flag, Place* where) {
    app.add_option_function<std::string>(flag, [flag, where](const std::string& v) {
      if (v != "device" && v != "host") usage_error(std::string(flag) + " must be device or host, not '" + v + "'");
      *where = v == "host" ? Place::kHost : Place::kDevice;
    });
  };
  place("--weights", &o.weights);
  place("--kv", &o.kv);
  app.add_option_function<std::string>("--stream", [&o](const std::string& v) {
    if (v != "copy" && v != "zerocopy") usage_error("--stream must be copy or zerocopy, not '" + v + "'");
    o.stream = v == "copy" ? Stream::kCopy : Stream::kZeroCopy;
  });
  number("--context", 1, 32000, [&o](double d) { o.context = int(d); });
  number("--tokens", 1, 1e6, [&o](double d) { o.tokens = int(d); });
  number("--duration-s", 0.001, 1e6, [&o](double d) { o.duration_s = d; });
  number("--spill-mb", 0, 1e5, [&o](double d) { o.spill_mb = d; });
  number("--device", 0, 64, [&o](double d) { o.device = int(d); });
  app.add_flag("--frames", o.frames);
  number("--period-ms", 1, 1e7, [&o](double d) { o.period_ms = d; });
  number("--deadline-ms", 1, 1e7, [&o](double d) { o.deadline_ms = d; });
  app.add_option("--token-log", o.token_log);
  app.add_option("--frame-log", o.frame_log);
  number("--requests", 1, 1e6, [&o](double d) { o.requests = int(d); });
  number("--image-tokens", 4, 16384, [&o](double d) { o.image_tokens = int(d); });
  number("--prompt-tokens", 1, 8192, [&o](double d) { o.prompt_tokens = int(d); });
  number("--frame-decode-tokens", 0, 4096, [&o](double d) { o.frame_decode_tokens = int(d); });
  bool no_pdl = false, no_fuse = false, no_probe = false;
  app.add_flag("--no-pdl", no_pdl);
  app.add_flag("--no-fuse", no_fuse);
  number("--prefetch-mb", 0, 1e5, [&o](double d) { o.prefetch_mb = d; });
  app.add_flag("--check", o.check);
  app.add_flag("--graph", o.graph);
  number("--warmup", 0, 1000, [&o](double d) { o.warmup = int(d); });
  app.add_flag("--per-unit", o.per_unit);
  app.add_flag("--no-probe", no_probe);
  if (auto bad = cli::parse(app, argv, 1, argc))
    usage_error(bad->needs_value.empty() ? bad->message : bad->needs_value + " needs a value");
  if (help) {
    usage();
    return 0;
  }
  if (!app.remaining().empty()) usage_error("unknown option '" + app.remaining().front() + "'");
  o.pdl = !no_pdl;
  o.fuse = !no_fuse;
  o.probe = !no_probe;
  const Preset* preset = nullptr;
  for (const auto& p : kPresets)
    if (o.preset == p.name) preset = &p;
  if (preset == nullptr) {
    std::string names;
    for (const auto& p : kPresets) names += std::string(names.empty() ? "" : ", ") + p.name;
    usage_error("unknown preset '" + o.preset + "' (known: " + names + ")");
  }
  if (o.deadline_ms == 0) o.deadline_ms = o.period_ms;
  if (o.graph && (o.frames || o.spill_mb > 0 || (o.weights == Place::kHost && o.stream == Stream::kCopy)))
    usage_error("--graph needs --weights device or --stream zerocopy, and no --frames or --spill-mb");
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "ripple-llm: error: no CUDA device found\n");
    return 1;
  }
  if (o.device >= ndev) usage_error("--device " + std::to_string(o.device) + " out of range (" + std::to_string(ndev) + " devices)");

  const char* wname = o.weights == Place::kDevice ? "device" : (o.stream == Stream::kCopy ? "host (copy)" : "host (zerocopy)");
  Ceilings ceil;
  if (o.probe && !o.check) ceil = probe();
  Engine eng(*preset, o);
  eng.init();
  if (o.check) {
    std::printf("ripple-llm: check: preset %s, weights in %s memory, KV in %s memory, launches %s\n", preset->name, wname,
                o.kv == Place::kDevice ? "device" : "pinned host", eng.pdl() ? "PDL" : "plain");
    return eng.check() ? 0 : 3;
  }
  const Shape& s = preset->llm;
  std::printf("ripple-llm: preset %s: %d layers, hidden %d, weights %.2f GB bf16 in %s memory, KV in %s memory%s\n",
              preset->name, s.layers, s.hidden, eng.weight_bytes() / 1e9, wname,
              o.kv == Place::kDevice ? "device" : "pinned host",
              o.spill_mb > 0 ? " (+ D2H spill emulation)" : "");
  if (o.probe)
    std::printf("ripple-llm: measured ceilings: HBM copy %.0f GB/s (read+write), H2D %.1f GB/s, D2H %.1f GB/s\n",
                ceil.hbm_gbs, ceil.h2d_gbs, ceil.d2h_gbs);

  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));

  if (o.frames) {
    int hits = 0;
    std::vector<double> lat;
    Counters c;
    FILE* flog = nullptr;
    if (!o.frame_log.empty()) {
      flog = std::fopen(o.frame_log.c_str(), "w");
      if (!flog) {
        std::fprintf(stderr, "ripple-llm: error: --frame-log: cannot write %s: %s\n", o.frame_log.c_str(), std::strerror(errno));
        return 2;
      }
      std::fprintf(flog, "frame,release_ns,start_ns,end_ns\n");
      std::fflush(flog);
    }
    auto ns = [](std::chrono::steady_clock::time_point t) {  // steady_clock is CLOCK_MONOTONIC here
      return static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
    };
    auto next = std::chrono::steady_clock::now();
    for (int r = 0; r < o.requests + 1; ++r) {  // request 0 is warm-up
      std::this_thread::sleep_until(next);
      auto t0 = std::chrono::steady_clock::now();
      Counters rc;
      eng.frame_request(&rc);
      CUDA_CHECK(cudaStreamSynchronize(eng.stream()));
      CUDA_CHECK(cudaDeviceSynchronize());
      const auto t1 = std::chrono::steady_clock::now();
      if (flog) {
        std::fprintf(flog, "%d,%lld,%lld,%lld\n", r, ns(next), ns(t0), ns(t1));
        std::fflush(flog);
      }
      double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
      if (r > 0) {
        lat.push_back(ms);
        hits += ms <= o.deadline_ms;
        c = rc;
      }
      next += std::chrono::microseconds(int64_t(o.period_ms * 1e3));
    }
    std::sort(lat.begin(), lat.end());
    std::printf("ripple-llm: frames: %d requests every %.0f ms, deadline %.0f ms: %d hits; latency p50 %.1f ms, max %.1f ms; "
                "%.2f GB per request (weights %.2f, KV %.3f)\n",
                o.requests, o.period_ms, o.deadline_ms, hits, lat[lat.size() / 2], lat.back(), c.total() / 1e9,
                c.weight / 1e9, (c.kv_read + c.kv_write) / 1e9);
    std::printf("RESULT engine=ripple-llm mode=frames preset=%s weights=%s requests=%d hits=%d p50_ms=%.1f max_ms=%.1f\n",
                preset->name, wname, o.requests, hits, lat[lat.size() / 2], lat.back());
    return 0;
  }

  if (o.probe && o.weights == Place::kDevice) eng.kernel_probe(o.context);

  // Decode. Warm up, then count and time.
  int pos = o.context;
  Counters warm;
  for (int i = 0; i < o.warmup; ++i) eng.decode_step(pos++, &warm, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<Counters> units(s.layers + 1);
  Counters c;
  const int ctx_first = pos;
  int steps = 0;
  Counters captured;
  if (o.graph) {
    eng.decode_step(pos, &captured, &units);  // eager once more, for the per-unit table
    CUDA_CHECK(cudaDeviceSynchronize());
    captured = Counters();
    eng.capture_step(pos, &captured);
    eng.set_pos(pos);
  }
  FILE* tlog = nullptr;
  if (!o.token_log.empty()) {
    tlog = std::fopen(o.token_log.c_str(), "w");
    if (!tlog) {
      std::fprintf(stderr, "ripple-llm: error: --token-log: cannot write %s: %s\n", o.token_log.c_str(), std::strerror(errno));
      return 2;
    }
    std::fprintf(tlog, "token,end_ns\n");
    std::fflush(tlog);
  }
  auto wall0 = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaEventRecord(e0, eng.stream()));
  for (;;) {
    if (pos + 1 >= eng.max_ctx()) {  // interference mode: wrap the context
      pos = o.context;
      if (o.graph) eng.set_pos(pos);
    }
    if (o.graph) {
      eng.replay();
      c.weight += captured.weight, c.kv_write += captured.kv_write, c.embed += captured.embed;
      c.kv_read += eng.kv_read_at(pos);
      ++pos;
    } else {
      eng.decode_step(pos++, &c, steps == 0 ? &units : nullptr);
    }
    ++steps;
    if (tlog) {  // the engine's own progress, for throughput measured where it happens
      CUDA_CHECK(cudaStreamSynchronize(eng.stream()));
      const auto now = std::chrono::steady_clock::now();
      std::fprintf(tlog, "%d,%lld\n", steps,
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()));
      std::fflush(tlog);
    }
    if (o.duration_s > 0) {
      if (steps % 4 == 0) {
        CUDA_CHECK(cudaStreamSynchronize(eng.stream()));
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count() >= o.duration_s) break;
      }
    } else if (steps >= o.tokens) {
      break;
    }
  }
  CUDA_CHECK(cudaEventRecord(e1, eng.stream()));
  CUDA_CHECK(cudaEventSynchronize(e1));
  CUDA_CHECK(cudaDeviceSynchronize());
  float ms;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  const double tps = steps / (ms / 1e3);
  const double counted = c.total() / steps;
  // The model's bytes at the mean context of the timed steps (no wrap: exact).
  double model = 0;
  for (int k = 0; k < std::min(steps, eng.max_ctx() - ctx_first - 1); ++k) model += model_bytes_per_token(*preset, ctx_first + k);
  model /= std::min(steps, eng.max_ctx() - ctx_first - 1);
  if (o.per_unit) {
    std::printf("unit  weights_MB  kv_read_MB  kv_write_KB  spill_MB\n");
    for (int l = 0; l <= s.layers; ++l)
      std::printf("%-5s %10.3f %11.3f %12.1f %9.1f\n", l == s.layers ? "head" : std::to_string(l).c_str(),
                  units[l].weight / 1e6, units[l].kv_read / 1e6, units[l].kv_write / 1e3, units[l].spill / 1e6);
  } else {
    std::printf("ripple-llm: unit 0 (a layer): weights %.2f MB, KV read %.2f MB, KV write %.1f KB; unit %d (LM head): %.2f MB\n",
                units[0].weight / 1e6, units[0].kv_read / 1e6, units[0].kv_write / 1e3, s.layers,
                units[s.layers].weight / 1e6);
  }
  std::printf("ripple-llm: bytes per token: counted %.4f GB, model (weights + KV) %.4f GB, difference %+.3f%%\n",
              counted / 1e9, model / 1e9, 100.0 * (counted - model) / model);
  std::printf("ripple-llm: %d tokens in %.1f ms: %.2f tokens/s, %.1f GB/s of model bytes", steps, ms, tps,
              counted * tps / 1e9);
  if (c.spill > 0) std::printf(" (+ %.1f GB/s D2H spill)", c.spill / steps * tps / 1e9);
  std::printf("\n");
  double limit = 0;
  const char* limit_name = "";
  if (o.probe) {
    if (o.weights == Place::kDevice && o.kv == Place::kDevice) {
      // Decode reads each byte once: the read-only ceiling is the copy's read+write rate.
      limit = ceil.hbm_gbs * 1e9 / counted;
      limit_name = "HBM copy";
    } else {
      limit = ceil.h2d_gbs * 1e9 / counted;
      limit_name = "H2D copy";
    }
    std::printf("ripple-llm: %s-bandwidth limit %.2f tokens/s: measured/limit %.2f\n", limit_name, limit, tps / limit);
  }
  // The greedy token after the run: a fingerprint of the computation (same weights, same
  // steps, deterministic kernels: equal across launch modes when they compute the same).
  std::printf("ripple-llm: final token %d (launches: %s%s; %s decode kernels)\n", eng.last_token(), eng.pdl() ? "PDL" : "plain",
              o.graph ? ", graph" : "", eng.fused() ? "fused" : "unfused");
  std::printf("RESULT engine=ripple-llm preset=%s weights=%s%s kv=%s tokens=%d tok_s=%.3f counted_gb=%.4f model_gb=%.4f "
              "diff_pct=%.3f limit_tok_s=%.3f ratio=%.3f gbs=%.1f\n",
              preset->name, wname, o.graph ? " launch=graph" : "", o.kv == Place::kDevice ? "device" : "host", steps, tps,
              counted / 1e9, model / 1e9,
              100.0 * (counted - model) / model, limit, limit > 0 ? tps / limit : 0.0, counted * tps / 1e9);
  return 0;
}

}  // namespace ripple::llm

int main(int argc, char** argv) { return ripple::llm::main_impl(argc, argv); }
