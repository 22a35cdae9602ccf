// The engine's tensor list of one config (model/tensor_list.h), for
// check_tensors.py to compare with the PyTorch reference's state dict:
//   print_tensors PRESET_NAME|CONFIG_JSON
// prints {"config": <config JSON>, "tensors": [[name, [shape...], use], ...]}
// in list order, use being "required", "optional", "dropped" or "folded".
#include <cstdio>
#include <exception>
#include <string>

#include "model/config_json.h"
#include "model/presets.h"
#include "tests/model/config_arg.h"
#include "model/tensor_list.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: print_tensors PRESET_NAME|CONFIG_JSON\n");
    return 2;
  }
  try {
    const pola::ModelConfig cfg = pola::test::config_from_arg(argv[1]);
    nlohmann::json list = nlohmann::json::array();
    for (const pola::TensorSpec &t : pola::expected_tensors(cfg)) {
      const char *use = t.use == pola::TensorSpec::Use::Required   ? "required"
                        : t.use == pola::TensorSpec::Use::Optional ? "optional"
                        : t.use == pola::TensorSpec::Use::Folded   ? "folded"
                                                                   : "dropped";
      list.push_back({t.name, t.shape, use});
    }
    const nlohmann::json out{{"config", pola::config_to_json(cfg)}, {"tensors", list}};
    std::printf("%s\n", out.dump().c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "print_tensors: %s\n", e.what());
    return 1;
  }
  return 0;
}
