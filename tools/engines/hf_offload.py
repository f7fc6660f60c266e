#!/usr/bin/env python3
"""Batch-1 generation with a Hugging Face transformers decoder whose weights are
offloaded to pinned host memory: the "unmodified real engine" target for Ripple's
interposer (it knows nothing of Ripple; LD_PRELOAD=libripple-cuhook.so goes in front).

The model is built from a config with random weights (no downloads): Qwen3 shapes by
default (the same presets as ripple-llm). Offload, the way PyTorch users do it:
  --offload pinned      each decoder layer's parameters live in pinned host memory and
                        are copied to the GPU in a forward pre-hook (non_blocking), then
                        dropped after the layer: per-layer H2D streaming, like FlexGen /
                        llama.cpp partial offload;
  --offload accelerate  accelerate.cpu_offload(model, execution_device) (its hooks);
  --offload none        everything on the GPU (the HBM-only reference).
Embeddings, the final norm and the LM head stay on the GPU; the KV cache is on the GPU.

Prints tokens/s and the weight bytes streamed per token, then one RESULT line.
--token-log FILE: one "token,end_ns" line per generated token (CLOCK_MONOTONIC, when the
token reached the host), as ripple-llm writes it: ripple-bench --llm-engine hf counts the
tokens of its scored window from it.
"""
import argparse
import hashlib
import sys
import time

PRESETS = {
    # hidden, intermediate, layers, heads, kv_heads, head_dim (Qwen3 config.json values)
    "qwen3-0.6b": (1024, 3072, 28, 16, 8, 128),
    "qwen3-1.7b": (2048, 6144, 28, 16, 8, 128),
    "qwen3-4b": (2560, 9728, 36, 32, 8, 128),
    "qwen3-8b": (4096, 12288, 36, 32, 8, 128),
}


def die(msg):
    print(f"hf_offload: error: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="qwen3-1.7b", help="model shapes: " + ", ".join(PRESETS))
    ap.add_argument("--layers", type=int, default=0, help="override the layer count (0: the preset's)")
    ap.add_argument("--offload", default="pinned", choices=["pinned", "accelerate", "none"])
    ap.add_argument("--prompt-tokens", type=int, default=32)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--duration-s", type=float, default=0, help="generate repeatedly for this long")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--token-log", help="append token,end_ns (CLOCK_MONOTONIC) per generated token")
    ap.add_argument("--count-launches", action="store_true",
                    help="run the timed generation under torch.profiler and print the kernel launches and "
                         "copies it saw beside the interposer's counters for the same region (when preloaded)")
    args = ap.parse_args()
    if args.preset not in PRESETS:
        die(f"unknown preset '{args.preset}' (known: {', '.join(PRESETS)})")
    if args.prompt_tokens < 1 or args.new_tokens < 1:
        die("--prompt-tokens and --new-tokens must be at least 1")

    import torch
    if not torch.cuda.is_available():
        print("hf_offload: error: no CUDA device found", file=sys.stderr)
        sys.exit(1)
    from transformers import Qwen3Config, Qwen3ForCausalLM

    h, inter, layers, heads, kv, hd = PRESETS[args.preset]
    cfg = Qwen3Config(hidden_size=h, intermediate_size=inter, num_hidden_layers=args.layers or layers,
                      num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd, vocab_size=151936,
                      max_position_embeddings=40960, rope_theta=1e6, tie_word_embeddings=False)
    dev = torch.device(args.device)
    torch.manual_seed(0)
    # Random init on the GPU (fast), in bf16.
    with torch.device(dev):
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16).eval()

    streamed = 0
    decoder_layers = model.model.layers
    if args.offload == "pinned":
        for layer in decoder_layers:
            params = list(layer.parameters())
            cpu = [p.data.cpu().pin_memory() for p in params]
            for p, c in zip(params, cpu):
                p.data = c
            streamed += sum(c.numel() * c.element_size() for c in cpu)

            def pre(mod, _inp, params=params, cpu=cpu):
                for p, c in zip(params, cpu):
                    p.data = c.to(dev, non_blocking=True)

            def post(mod, _inp, _out, params=params, cpu=cpu):
                for p, c in zip(params, cpu):
                    p.data = c

            layer.register_forward_pre_hook(pre)
            layer.register_forward_hook(post)
    elif args.offload == "accelerate":
        from accelerate import cpu_offload
        for layer in decoder_layers:
            layer.to("cpu")
            streamed += sum(p.numel() * p.element_size() for p in layer.parameters())
            cpu_offload(layer, execution_device=dev)
    torch.cuda.synchronize()

    ids = torch.randint(0, cfg.vocab_size, (1, args.prompt_tokens), device=dev)
    gen = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, do_sample=False, use_cache=True)
    if args.token_log:
        gen["streamer"] = TokenLog(args.token_log)
    prof, hook0 = None, None
    with torch.inference_mode():
        model.generate(ids, **dict(gen, max_new_tokens=2, min_new_tokens=2))  # warm-up
        torch.cuda.synchronize()
        if args.count_launches:
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CUDA])
            prof.__enter__()
            hook0 = hook_stats()
        t0 = time.perf_counter()
        runs = 0
        while True:
            out = model.generate(ids, **gen)
            runs += 1
            torch.cuda.synchronize()
            if time.perf_counter() - t0 >= args.duration_s:
                break
        dt = time.perf_counter() - t0
        if prof is not None:
            hook1 = hook_stats()
            prof.__exit__(None, None, None)
    # The generated tokens' fingerprint: the same weights (seeded) must give the same tokens.
    toks = out[0, args.prompt_tokens:].tolist()
    fp = hashlib.sha256(",".join(map(str, toks)).encode()).hexdigest()[:16]
    if prof is not None:
        kernels = copies = 0
        for e in prof.events():
            if e.device_type != torch.autograd.DeviceType.CUDA:
                continue
            n = e.name.lower()
            if n.startswith("memcpy") or n.startswith("memset"):
                copies += 1
            else:
                kernels += 1
        hl = hc = "n/a"
        if hook0 is not None and hook1 is not None:
            hl, hc = hook1[0] - hook0[0], hook1[1] - hook0[1]
        print(f"LAUNCHES profiler_kernels={kernels} profiler_copies={copies} hook_launches={hl} hook_copies={hc}")
    # Each generate = one prefill + (new_tokens - 1) decode steps; each streams every layer once.
    passes = runs * args.new_tokens
    tps = passes / dt
    wgb = (streamed if args.offload != "none" else sum(p.numel() * p.element_size() for p in decoder_layers.parameters())) / 1e9
    print(f"hf_offload: preset {args.preset}, {cfg.num_hidden_layers} layers, offload {args.offload}: "
          f"{passes} tokens in {dt:.2f} s = {tps:.2f} tokens/s; decoder-layer weights {wgb:.2f} GB per forward pass "
          f"({'streamed H2D' if args.offload != 'none' else 'read from HBM'}), {wgb * tps:.1f} GB/s")
    print(f"RESULT engine=hf_offload preset={args.preset} offload={args.offload} tok_s={tps:.3f} "
          f"layer_gb={wgb:.3f} gbs={wgb * tps:.1f} tokens_fp={fp}")


class TokenLog:
    """A generate() streamer: one line per generated token, at the time it reached the host
    (generate hands each new token over as a host tensor, after the step's sync)."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        if self.f.tell() == 0:
            self.f.write("token,end_ns\n")
        self.n = 0
        self.prompt = True

    def put(self, value):
        if self.prompt:   # the first call hands over the prompt
            self.prompt = False
            return
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        for _ in range(value.numel()):
            self.n += 1
            self.f.write(f"{self.n},{now}\n")

    def end(self):
        self.prompt = True


def hook_stats():
    """(launches, copies) from libripple-cuhook.so when it is preloaded, else None. The
    engine does not need Ripple: this only reads the interposer's counters for the check."""
    import ctypes
    try:
        f = ctypes.CDLL(None).ripple_cuhook_get_stats
    except AttributeError:
        return None
    buf = (ctypes.c_uint64 * 24)()
    f(buf, ctypes.sizeof(buf))
    return buf[0], buf[1]


if __name__ == "__main__":
    main()
