// A checkpoint's tensor names and shapes, as config detection reads them: the
// inverse of the tensor list (model/tensor_list.h). Each family reads its own
// config back from them (model/<family>_detect.cpp); weights/config_detect.cpp
// asks every family in the table whether the names are its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace pola {

// name -> shape of every tensor in a checkpoint.
using ShapeMap = std::map<std::string, std::vector<int64_t>>;

// Every refusal throws InputError(context + ": " + what), so all families'
// detection messages share one form.
class ShapeReader {
 public:
  ShapeReader(const ShapeMap &shapes, std::string context) : shapes_(shapes), context_(std::move(context)) {}

  [[noreturn]] void fail(const std::string &what) const;
  bool has(const std::string &name) const { return shapes_.count(name) != 0; }
  // The shape of `name`, refused ("cannot detect the <why>: ...") when it is
  // missing, of another rank or has an empty dimension.
  const std::vector<int64_t> &shape(const std::string &name, size_t rank, const char *why) const;
  // Highest `j` + 1 over keys "<prefix><j>." (block counts per stage).
  int64_t count_indexed(const std::string &prefix) const;
  // The whole square root of a row count (token grids are square at the
  // checkpoint's own size); `what` names the tensor in the refusal.
  int64_t exact_sqrt(int64_t v, const std::string &what) const;
  const ShapeMap &shapes() const { return shapes_; }

 private:
  const ShapeMap &shapes_;
  std::string context_;
};

// One family's checkpoint detector (FamilyRules::detect).
struct FamilyDetector {
  const char *title;   // how messages name the family ("PVT")
  const char *marker;  // a tensor its checkpoints always hold, named when no family claims a checkpoint
  // Whether the names are this family's (cheap: names only).
  bool (*claims)(const ShapeReader &in);
  // The config the shapes imply; check_config and the tensor-by-tensor
  // comparison with expected_tensors() follow in weights/.
  ModelConfig (*read)(const ShapeReader &in);
};

// Every family's detector, in the order of the family table (model/family.cpp).
std::vector<const FamilyDetector *> family_detectors();

} // namespace pola
