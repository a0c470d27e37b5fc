#pragma once
// What the instrument shows for one study: the lenses and the head rule a study plan registered, printed
// as the display file beside the plan says. The release gate's display verdict (gate/display.h) compares
// exactly this; the audit (audit/) reads its plans and computes its rows with the same routines.
#include <filesystem>
#include <vector>

#include "instrument/display_spec.h"
#include "instrument/rows.h"
#include "runtime/lens.h"

namespace lenscheck {

struct Instrument {
  std::filesystem::path plan_file, display_file;  // where the head rule and lenses, and the printing, come from
  HeadRule head_rule;
  std::vector<Lens> lenses;
  DisplaySpec display;
  // The head (or layer) this instrument opens among one word's head_rows: the plan's rule, on its scores
  // as the display file says (DisplaySpec::head_decimals).
  size_t opened_head(const std::vector<WordRow>& rows, int heads) const {
    return lenscheck::opened_head(rows, head_rule, heads, display.head_decimals());
  }
};

}  // namespace lenscheck
