// An int8 copy of a real model file (models/fashion_pola_pvt.pola with two
// weights stored as I8, their scales and input scales, and the `quantization`
// metadata): what `pola info` reads accepts it, `pola convert` refuses it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "model/model_config.h"
#include "test_util.h"
#include "weights/converter.h"
#include "weights/error.h"
#include "weights/int8_summary.h"
#include "weights/model_file.h"
#include "weights/model_metadata.h"
#include "weights/model_summary.h"

using pola::InputError;
using pola::test::ScratchFile;
using namespace pola::weights;

namespace {

const std::string kModel = std::string(POLA_TEST_MODELS) + "/fashion_pola_pvt.pola";
const std::vector<std::string> kQuantized = {"head.weight", "patch_embed1.proj.weight"};

// Writes the float model with kQuantized stored as I8 (symmetric, one scale
// per row: max |w| / 127), each with `<prefix>.input_scale` = `input_scale`
// (shape `input_scale_shape`).
void write_int8_copy(const std::string &out, std::vector<int64_t> input_scale_shape = {1}) {
  const ModelFile src = ModelFile::open(kModel);
  std::map<std::string, std::vector<float>> floats;
  std::map<std::string, std::vector<int8_t>> ints;
  std::vector<TensorToWrite> tensors;
  for (const auto &t : src.tensors()) {
    std::vector<float> &v = floats[t.name] = tensor_as_f32(t);
    if (std::find(kQuantized.begin(), kQuantized.end(), t.name) == kQuantized.end()) {
      tensors.push_back({t.name, t.shape, v.data()});
      continue;
    }
    const int64_t rows = t.shape[0], row = t.numel / rows;
    std::vector<float> &scale = floats[t.name + "_scale"];
    std::vector<int8_t> &q = ints[t.name];
    q.resize(v.size());
    for (int64_t r = 0; r < rows; ++r) {
      float m = 0;
      for (int64_t i = 0; i < row; ++i) m = std::max(m, std::fabs(v[r * row + i]));
      scale.push_back(m > 0 ? m / 127 : 1.0f);
      for (int64_t i = 0; i < row; ++i) q[r * row + i] = static_cast<int8_t>(std::lround(v[r * row + i] / scale.back()));
    }
    const std::string prefix = t.name.substr(0, t.name.size() - std::string(".weight").size());
    std::vector<float> &in = floats[prefix + ".input_scale"] = std::vector<float>(input_scale_shape[0], 0.05f);
    tensors.push_back({t.name, t.shape, nullptr, StoredDtype::i8, q.data()});
    tensors.push_back({t.name + "_scale", {rows}, scale.data()});
    tensors.push_back({prefix + ".input_scale", input_scale_shape, in.data()});
  }
  std::map<std::string, std::string> md = src.metadata();
  md["quantization"] = R"({"weights":"int8 symmetric, per output channel","images":0})";
  write_model_file(out, md, tensors);
}

} // namespace

TEST_CASE("int8 model file: the tensor check and the summary accept it") {
  ScratchFile f(".pola");
  write_int8_copy(f.path());
  const ModelFile mf = ModelFile::open(f.path());
  const pola::ModelConfig cfg = read_model_config(mf);
  CHECK_NOTHROW(check_model_tensors(mf, cfg));
  const nlohmann::json j = model_summary(mf);
  REQUIRE(j["stored_dtypes"].contains("I8"));
  CHECK(j["stored_dtypes"]["I8"].get<int64_t>() == 10 * 192 + 32 * 1 * 4 * 4);
  CHECK(j["tensors"].get<size_t>() == ModelFile::open(kModel).tensors().size() + 2 * kQuantized.size());
}

TEST_CASE("int8 model file: an input scale of the wrong shape is named by the tensor check") {
  ScratchFile f(".pola");
  write_int8_copy(f.path(), {2});
  const ModelFile mf = ModelFile::open(f.path());
  CHECK_THROWS_WITH_AS(check_model_tensors(mf, read_model_config(mf)),
                       doctest::Contains("head.input_scale: (2), expected (1)"), InputError);
}

TEST_CASE("int8 model file: pola convert refuses to re-convert it, naming the file") {
  ScratchFile f(".pola"), out(".pola");
  write_int8_copy(f.path());
  CHECK_THROWS_WITH_AS(convert_checkpoint(f.path(), out.path(), {}),
                       doctest::Contains((f.path() + ": an int8 (quantized) model file").c_str()), InputError);
  CHECK_FALSE(pola::test::file_exists(out.path()));
  // The float model it came from still converts.
  CHECK_NOTHROW(convert_checkpoint(kModel, out.path(), {}));
}

TEST_CASE("int8 model file: the summary counts its int8 layers per kind with their scale ranges") {
  CHECK(layer_kind("block1.0.attn.qg.weight") == "attn.qg");
  CHECK(layer_kind("layers.2.blocks.11.mlp.fc1.weight") == "mlp.fc1");
  CHECK(layer_kind("layers.0.downsample.reduction.weight") == "downsample.reduction");
  CHECK(layer_kind("head.weight") == "head");
  CHECK(layer_kind("patch_embed1.proj.weight") == "patch_embed1.proj");
  ScratchFile f(".pola");
  write_int8_copy(f.path());
  const ModelFile mf = ModelFile::open(f.path());
  const nlohmann::json q = model_summary(mf)["int8"];
  REQUIRE(q.is_object());
  CHECK(q["layers"].get<int64_t>() == 2);
  CHECK(q["scheme"]["weights"] == "int8 symmetric, per output channel");
  REQUIRE(q["kinds"].contains("head"));
  CHECK(q["kinds"]["head"]["layers"].get<int64_t>() == 1);
  CHECK(q["kinds"]["head"]["input_scale"][0].get<float>() == 0.05f);
  const TensorView *scale = mf.find("head.weight_scale");
  REQUIRE(scale);
  const auto [lo, hi] = std::minmax_element(scale->data, scale->data + scale->numel);
  CHECK(q["kinds"]["head"]["weight_scale"][0].get<float>() == *lo);
  CHECK(q["kinds"]["head"]["weight_scale"][1].get<float>() == *hi);
  CHECK(model_summary(ModelFile::open(kModel)).contains("int8") == false);
}
