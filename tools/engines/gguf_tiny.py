#!/usr/bin/env python3
"""Writes a random-weight llama-architecture model in GGUF with llama.cpp's own Python
GGUF writer (gguf-py), for running llama.cpp where no model hub can be reached.

    tools/engines/gguf_tiny.py OUT.gguf [--gguf-py DIR] [--layers 8] [--dim 2048] ...

--gguf-py: the gguf-py folder of the llama.cpp checkout the binaries were built from
(default: .llamacpp/src/gguf-py, the local checkout; on the GPU machine the copy that
tools/engines/llama-cpp-pack.sh carries), so the file is written by the version that
reads it.

The tokenizer is a small built-in SentencePiece-style ("llama") vocabulary: <unk>, <s>,
</s>, the 256 byte tokens, the printable ASCII characters, their "▁"-prefixed forms,
then filler pieces up to --vocab. Weights: N(0, 0.02) in f16 (norms 1.0 in f32), drawn
from --seed, so two runs write the same file. Prints one line: the file, its bytes and
its tensor count.
"""
import argparse
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def import_gguf(path: Path):
    sys.path.insert(0, str(path))
    try:
        import sentencepiece  # noqa: F401  (gguf/vocab.py imports it; the writer does not use it)
    except ImportError:
        stub = types.ModuleType("sentencepiece")
        stub.SentencePieceProcessor = object
        sys.modules["sentencepiece"] = stub
    import gguf
    return gguf


def vocab(n: int):
    toks, types_, scores = ["<unk>", "<s>", "</s>"], [2, 3, 3], [0.0, 0.0, 0.0]  # UNKNOWN, CONTROL
    for b in range(256):
        toks.append(f"<0x{b:02X}>")
        types_.append(6)  # BYTE
        scores.append(0.0)
    chars = [chr(c) for c in range(33, 127)]
    for piece in chars + ["\u2581"] + ["\u2581" + c for c in chars]:
        toks.append(piece)
        types_.append(1)  # NORMAL
        scores.append(-float(len(toks)))
    i = 0
    while len(toks) < n:
        toks.append(f"\u2581w{i}")
        types_.append(1)
        scores.append(-float(len(toks)))
        i += 1
    return toks[:n], types_[:n], scores[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--gguf-py", default=str(REPO / ".llamacpp" / "src" / "gguf-py"))
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--ff", type=int, default=5632)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.dim % a.heads or a.heads % a.kv_heads or a.vocab < 512:
        print("gguf_tiny: --dim must be a multiple of --heads, --heads of --kv-heads, --vocab >= 512", file=sys.stderr)
        return 2
    gguf = import_gguf(Path(a.gguf_py))
    import numpy as np

    rng = np.random.default_rng(a.seed)
    hd = a.dim // a.heads
    kvd = hd * a.kv_heads

    def w(*shape):  # numpy (rows, cols) = ggml ne [cols, rows]: (out features, in features)
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    wr = gguf.GGUFWriter(a.out, "llama")
    wr.add_name("ripple-tiny-llama")
    wr.add_context_length(a.ctx)
    wr.add_embedding_length(a.dim)
    wr.add_block_count(a.layers)
    wr.add_feed_forward_length(a.ff)
    wr.add_head_count(a.heads)
    wr.add_head_count_kv(a.kv_heads)
    wr.add_rope_dimension_count(hd)
    wr.add_layer_norm_rms_eps(1e-5)
    wr.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    wr.add_vocab_size(a.vocab)
    toks, types_, scores = vocab(a.vocab)
    wr.add_tokenizer_model("llama")
    wr.add_token_list(toks)
    wr.add_token_scores(scores)
    wr.add_token_types(types_)
    wr.add_bos_token_id(1)
    wr.add_eos_token_id(2)
    wr.add_unk_token_id(0)
    wr.add_add_bos_token(True)

    n = 0
    wr.add_tensor("token_embd.weight", w(a.vocab, a.dim)); n += 1
    for i in range(a.layers):
        p = f"blk.{i}."
        for name, t in (("attn_norm.weight", ones(a.dim)), ("attn_q.weight", w(a.dim, a.dim)),
                        ("attn_k.weight", w(kvd, a.dim)), ("attn_v.weight", w(kvd, a.dim)),
                        ("attn_output.weight", w(a.dim, a.dim)), ("ffn_norm.weight", ones(a.dim)),
                        ("ffn_gate.weight", w(a.ff, a.dim)), ("ffn_up.weight", w(a.ff, a.dim)),
                        ("ffn_down.weight", w(a.dim, a.ff))):
            wr.add_tensor(p + name, t)
            n += 1
    wr.add_tensor("output_norm.weight", ones(a.dim)); n += 1
    wr.add_tensor("output.weight", w(a.vocab, a.dim)); n += 1
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()
    print(f"gguf_tiny: wrote {a.out}: {Path(a.out).stat().st_size} bytes, {n} tensors, {a.layers} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
