#pragma once
// The `model:` key: a config name, or an inline mapping (optionally `base:
// NAME` plus the config keys to change). The config itself is read by
// nsa::model_config_from_yaml; its issues are mapped back onto our positions.
#include "harness/scenario/checker.h"
#include "harness/scenario/settings.h"

namespace harness {

void parse_model(const YEntry& e, Checker& check, ModelLibrary& models, CellDraft& base);

}  // namespace harness
