#include "core/row_labels.h"

namespace gpureap::core {

std::string user_label(const ProcessRow& row) {
  if (row.process && row.process->details) {
    const auto& d = *row.process->details;
    if (d.user) return *d.user;
    if (d.uid) return std::to_string(*d.uid);
  }
  return "unknown";
}

std::string container_label(const ProcessRow& row) {
  const auto* c = row.process ? row.process->verified_container() : nullptr;
  return c ? c->id.value_or(c->runtime) : "";
}

}  // namespace gpureap::core
