// Unit catalogs from a model directory (config.json + *.safetensors headers): the bytes
// one batch-1 decode step moves through each unit — embeddings (one row), every dense or
// MoE decoder layer (MoE: the shared weights plus top-k experts), the output head — and
// the KV-cache bytes per context token. Pure: reads only the headers.
// catalog_from_gguf: the same units from a GGUF file (llama.cpp), `layers.N` from `blk.N.`;
// catalog_from_model: a regular file is read as GGUF, a directory as safetensors.
#pragma once

#include <string>

#include "ripple/status.h"
#include "cuhooks/profile.h"

namespace ripple::cuhook {

Result<Profile> catalog_from_model_dir(const std::string& dir);
Result<Profile> catalog_from_gguf(const std::string& file);
Result<Profile> catalog_from_model(const std::string& path);

}  // namespace ripple::cuhook
