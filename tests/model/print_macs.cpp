// The engine's multiply-accumulate count of one config at one input size, for
// check_macs.py to compare with its independent count on the PyTorch reference:
//   print_macs PRESET_NAME|CONFIG_JSON HEIGHT WIDTH
// prints {"config": <config JSON>, "macs": <count>}.
#include <cstdio>
#include <exception>
#include <string>

#include "model/config_json.h"
#include "model/flops.h"
#include "model/geometry.h"
#include "model/presets.h"
#include "tests/model/config_arg.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: print_macs PRESET_NAME|CONFIG_JSON HEIGHT WIDTH\n");
    return 2;
  }
  try {
    const pola::ModelConfig cfg = pola::test::config_from_arg(argv[1]);
    const int64_t h = std::stoll(argv[2]), w = std::stoll(argv[3]);
    pola::check_input_size(cfg, h, w, "print_macs");
    const nlohmann::json out{{"config", pola::config_to_json(cfg)}, {"macs", pola::macs_per_image(cfg, h, w)}};
    std::printf("%s\n", out.dump().c_str());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "print_macs: %s\n", e.what());
    return 1;
  }
  return 0;
}
