// ripple-llm's engine: the model's weights, KV cache and activations on the GPU (or in
// pinned host memory), and the decode step, the VLM request and the probes over them.
// Host code only here: its methods are in engine.cu (beside the kernels they launch) and
// checks.cu (--check); main.cc drives it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/engines/ripple-llm/common.h"
#include "tools/engines/ripple-llm/model.h"

namespace ripple::llm {

enum class Place { kDevice, kHost };
enum class Stream { kCopy, kZeroCopy };

struct Options {
  std::string preset = "qwen3-8b";
  Place weights = Place::kDevice;
  Stream stream = Stream::kCopy;
  Place kv = Place::kDevice;
  int context = 1024;
  int tokens = 32;
  double duration_s = 0;
  double spill_mb = 0;
  int device = 0;
  bool frames = false;
  double period_ms = 5000, deadline_ms = 0;
  int image_tokens = 1024, prompt_tokens = 64, frame_decode_tokens = 16, requests = 5;
  std::string frame_log;  // --frame-log: one CSV line per frame, as it ends
  std::string token_log;  // --token-log: one CSV line per decoded token, as it ends
  bool probe = true;
  bool per_unit = false;
  int warmup = 2;
  bool graph = false;
  bool pdl = true;
  bool fuse = true;          // fused decode kernels (--no-fuse: the unfused reference path)
  double prefetch_mb = 0;    // o-projection weights prefetched into L2 during attention (MB; 0: off)
  bool check = false;        // --check: fused against unfused kernels on random inputs, then exit
};

struct Counters {
  double weight = 0, kv_read = 0, kv_write = 0, embed = 0, spill = 0;
  double total() const { return weight + kv_read + kv_write + embed; }
};

class Engine {
 public:
  Engine(const Preset& p, const Options& o) : p_(p), o_(o) {}

  void init();

  // One decode step at position pos: T = 1 through every layer and the LM head.
  // Where the weights are read in place, each layer's down projection also runs the next
  // unit's input norm (the next layer's, or the LM head's final norm), with that unit's norm
  // weights: so those weights are read, and counted, inside the previous unit's NVTX range.
  void decode_step(int pos, Counters* c, std::vector<Counters>* per_unit);

  // A VLM request: vision encoder over the patches, prefill over merged image tokens and
  // the prompt, then a short decode.
  void frame_request(Counters* c);

  // --graph: one decode step captured once and replayed; the position is read from
  // device memory and advanced inside the graph. Only for weights the kernels read in
  // place (device or zero-copy): no per-layer copies. Counts the captured step's bytes.
  void capture_step(int pos, Counters* step);
  void set_pos(int pos);
  void replay();
  // K/V bytes of one step at position pos (read pos + 1 positions, write one), per the
  // attention kernel's reads: what decode_step counts eagerly.
  double kv_read_at(int pos) const { return p_.llm.layers * 2.0 * (pos + 1) * p_.llm.kv_heads * p_.llm.head_dim * sizeof(bf16); }

  // Times the pieces of one decode layer in place (device weights): the gate/up GEMV's
  // achieved read bandwidth, the attention kernel at position pos, and the whole layer as it
  // runs in decode (fused: its input norm ran in the previous repetition's down projection,
  // layer 0 standing in for its own successor).
  void kernel_probe(int pos);

  // --check: the fused decode kernels against the unfused ones, on the GPU, on random inputs
  // with layer 0's weights and KV cache: whole layers (residual stream, down projection,
  // SiLU output, post-attention norm, appended K/V rows) at two positions, with the position
  // on the host and in device memory (graph replay), each once as with --stream copy (the
  // residual left pending) and once with the next unit's input norm in the down projection
  // (random norm weights; against the unfused layer followed by add_rmsnorm: the residual
  // stream and the normalized input too); attention alone (q/k norm, RoPE, append, split
  // merge) at positions covering 1 to 16 splits; and one whole decode step (all layers and
  // the LM head as decode runs them in this mode: logits and greedy token). Prints each
  // comparison's largest absolute difference and that difference relative to the largest
  // reference value. Returns true when every difference is within 1e-2 relative and the
  // layers with the next norm and the decode step are bit-identical (the fused kernels are
  // meant to be bit-identical throughout; anything else may change the greedy fingerprint).
  bool check();

  int last_token() const;
  bool pdl() const { return pdl_; }
  bool fused() const { return fuse_; }

  cudaStream_t stream() const { return cs_; }
  int max_ctx() const { return max_ctx_; }
  size_t weight_bytes() const { return (layer_elems_ * p_.llm.layers + head_elems_) * sizeof(bf16); }

 private:
  // Launches a kernel on the compute stream, with programmatic dependent launch when on.
  template <typename... KArgs, typename... Args>
  void launch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = cs_;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = pdl_ ? 1 : 0;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, k, static_cast<KArgs>(args)...));
  }

  // A unit's input norm (x_ += pending residual; xb_ = RMSNorm(x_) * w, its weights counted),
  // unless the previous unit's last kernel already ran it with these weights (normed_).
  void input_norm(const bf16* w, int T, int n, Counters* u);

  // The next unit's input norm runs in the down projection's epilogue (decode_step): with the
  // fused kernels, where the next unit's weights are read in place (device or zero-copy).
  bool fuse_next() const { return fuse_ && (o_.weights == Place::kDevice || o_.stream == Stream::kZeroCopy); }

  // x += pending residual (if any), then RMSNorm into xb_.
  void norm(float* x, const bf16* w, int T, int n);

  [[noreturn]] static void die(const std::string& m) {
    std::fprintf(stderr, "ripple-llm: error: %s\n", m.c_str());
    std::exit(2);
  }

  void* dalloc(size_t n);

  bf16* alloc(size_t bytes, Place where, const char* what);

  // Random init: on the device directly, or through a device staging chunk for host memory.
  void fill(bf16* p, size_t n, Place where, float scale, uint64_t seed);

  void set_ones(bf16* p, size_t n, Place where);

  void set_norms(bf16* base, const LayerLayout& ll, const Shape& s, Place where);

  bf16* layer_ptr(int l) const { return weights_ + layer_elems_ * l; }

  // Makes a unit's weight block readable by the compute stream. Device mode and
  // zero-copy: the block itself (a mapped host pointer works in kernels under UVA).
  // Copy mode: an async H2D copy into the staging buffer the unit before last used,
  // once that unit's compute is done; compute waits for the copy.
  const bf16* fetch(const bf16* src, size_t elems, uint64_t unit);
  void release();

  // The spill belongs to its layer, as a real KV/activation offload does: it starts once
  // the layer's kernels are done, and the next layer's kernels wait for it (the next
  // layer's weight copy on ms_ still overlaps it). Unbounded, the spill stream fell ever
  // further behind the layers it was issued in, so a layer's traffic happened long after
  // the layer, where no gate can place it.
  void spill(Counters* u);

  void linear(const bf16* w, const bf16* x, float* y, int T, int rows, int cols, Counters* u);

  // One layer over T tokens. next_norm (decode with the fused kernels only; ignored otherwise):
  // the next unit's input-norm weights, read in place; the layer's down projection then also
  // runs that norm (see layer_fused).
  void layer(const Shape& s, const bf16* w, int T, int pos0, bf16* kc, bf16* vc, int max_ctx, bool causal,
             Counters* u, const bf16* next_norm = nullptr);

  // Attention of T query rows at pos0 into xb_. Decode (T = 1) splits the positions over
  // up to 16 blocks per head and merges them; prefill rows are many blocks already.
  void attend(const Shape& s, bf16* kc, bf16* vc, int T, int pos0, int max_ctx, bool causal);

  // One decode layer (T = 1) with the fused kernels: five launches (six without next_norm, and
  // layer 0 adds its input norm) instead of ten, the same arithmetic and, per token, the same
  // bytes counted as layer()'s unfused path.
  void layer_fused(const Shape& s, const bf16* w, int pos0, bf16* kc, bf16* vc, int max_ctx, Counters* u,
                   const bf16* next_norm);

  // attention_fused for the decode position pos0 of the layer with weights w: reads the QKV
  // GEMV's output in big_, appends the new K/V row, leaves the attention output in xb_. The
  // same splits as attend(). With --prefetch-mb N it also prefetches up to N MB of the o
  // projection's weights into L2 (device weights only; off by default: it measured slower).
  void attend_fused(const Shape& s, const bf16* w, bf16* kc, bf16* vc, int pos0, int max_ctx);

  void fill_x(size_t n);

  static void add(Counters* c, const Counters& u);

  const Preset& p_;
  Options o_;
  cudaStream_t cs_{}, ms_{}, ss_{};
  cublasHandle_t blas_{};
  cudaEvent_t copied_[2]{}, used_[2]{};
  cudaEvent_t computed_{}, spilled_{};  // --spill-mb: the layer's kernels done; its spill done
  bf16* stage_[2]{};
  int cur_ = 0;
  uint64_t unit_ = 0;
  size_t layer_elems_ = 0, head_elems_ = 0, vlayer_elems_ = 0, kv_layer_elems_ = 0;
  int max_ctx_ = 0, max_t_ = 1;
  bf16 *weights_ = nullptr, *embed_ = nullptr, *kv_ = nullptr, *vweights_ = nullptr, *vkv_ = nullptr;
  float *x_ = nullptr, *tmp_ = nullptr, *big_ = nullptr;
  bf16 *xb_ = nullptr, *qb_ = nullptr;
  int* token_ = nullptr;
  bool pdl_ = false;
  bool pending_ = false;     // tmp_ holds a residual not yet added to x_
  bool normed_ = false;      // x_ is complete and xb_ holds the next unit's normalized input
  float* part_ = nullptr;    // split attention partials
  bool fuse_ = false;        // fused decode kernels
  int* tickets_ = nullptr;   // the fused kernels' cross-block tickets (zero between launches)
  static constexpr int kTicketAttn = 0, kTicketNorm = 256, kTicketDown = 384, kTickets = 512;
  bf16* nb_ = nullptr;       // fused path: the post-attention norm's output (gate/up input)
  size_t pf_cap_ = 0;
  bool wpf_ = false, kvpf_ = false;  // weights / KV cache in device memory: L2 prefetches allowed
  int* dpos_ = nullptr;      // non-null while capturing: kernels read the position here
  int* dpos_buf_ = nullptr;
  cudaGraphExec_t graph_{};
  size_t spill_bytes_ = 0;
  void *spill_src_ = nullptr, *spill_dst_ = nullptr;
};

}  // namespace ripple::llm
