// Row builders for the scenario schema table (scenario_schema_*.cpp): one call per key.
#pragma once
#include "config/schema.hpp"

namespace stacksim::config::rows {

using sim::Dimension;
inline constexpr double kMaxCount = 1 << 24;  // the largest size a count may take (products stay in range)

// One row, field by field (designated initializers would warn about the fields left at their defaults).
inline KeySpec row(std::string_view p, KeyType t, std::string_view unit, std::string_view def, double lo, double hi,
                   bool lo_exclusive, std::string_view values, std::string_view doc) {
  KeySpec k;
  k.path = p, k.type = t, k.unit = unit, k.def = def, k.min = lo, k.max = hi, k.min_exclusive = lo_exclusive;
  k.values = values, k.doc = doc;
  return k;
}

inline KeySpec section(std::string_view p, std::string_view doc, std::string_view keys_of = "") {
  return row(p, KeyType::Map, "", "", -kNoLimit, kNoLimit, false, keys_of, doc);
}
inline KeySpec integer(std::string_view p, std::string_view unit, std::string_view def, double lo, double hi,
                       std::string_view doc) {
  return row(p, KeyType::Int, unit, def, lo, hi, false, "", doc);
}
inline KeySpec count(std::string_view p, std::string_view unit, std::string_view def, std::string_view doc) {
  return integer(p, unit, def, 1, kMaxCount, doc);
}
inline KeySpec number(std::string_view p, std::string_view unit, std::string_view def, double lo, double hi,
                      std::string_view doc) {
  return row(p, KeyType::Number, unit, def, lo, hi, false, "", doc);
}
inline KeySpec positive(std::string_view p, std::string_view unit, std::string_view def, std::string_view doc) {
  return row(p, KeyType::Number, unit, def, 0, kNoLimit, true, "", doc);
}
inline KeySpec flag(std::string_view p, std::string_view def, std::string_view doc) {
  return row(p, KeyType::Bool, "", def, -kNoLimit, kNoLimit, false, "", doc);
}
inline KeySpec text(std::string_view p, std::string_view def, std::string_view doc) {
  return row(p, KeyType::String, "", def, -kNoLimit, kNoLimit, false, "", doc);
}
inline KeySpec choice(std::string_view p, std::string_view values, std::string_view def, std::string_view doc) {
  return row(p, KeyType::Enum, "", def, -kNoLimit, kNoLimit, false, values, doc);
}
inline KeySpec list(std::string_view p, std::string_view values, std::string_view doc) {
  return row(p, KeyType::List, "", "", -kNoLimit, kNoLimit, false, values, doc);
}
// A quantity with its unit: `unit` names the unit a bare number is read in (bare_scale > 0), or a
// typical unit when the unit must be written. Its range is in base units (s, B, B/s).
inline KeySpec quantity(std::string_view p, Dimension dim, double bare_scale, std::string_view unit,
                        std::string_view def, double lo, bool lo_exclusive, double hi, std::string_view doc) {
  KeySpec k = row(p, KeyType::Quantity, unit, def, lo, hi, lo_exclusive, "", doc);
  k.dim = dim, k.bare_scale = bare_scale;
  return k;
}
inline KeySpec typed(std::string_view p, KeyType t, std::string_view values, std::string_view def, std::string_view doc,
                     double lo = -kNoLimit, double hi = kNoLimit, bool lo_exclusive = false) {
  return row(p, t, "", def, lo, hi, lo_exclusive, values, doc);
}

void add_training_rows(std::vector<KeySpec>& out);
void add_plan_rows(std::vector<KeySpec>& out);
void add_serving_rows(std::vector<KeySpec>& out);

}  // namespace stacksim::config::rows
