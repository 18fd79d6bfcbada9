#pragma once
// What a rule sees in one sample, before any timing: for each instance of the rule (a GPU for
// the memory rules, a finding code on a set of GPUs for finding rules) whether its condition
// holds, and the labels and readable annotations an alert about it carries. Pure.
#include <string>
#include <vector>

#include "alert/alert.h"
#include "alert/rule.h"
#include "sample/sample.h"

namespace gpureap::alert {

enum class Holds { Yes, No, Unknown };

struct Observation {
  std::string key;  // the instance within the rule: "gpu=0", "code=no-such-process gpu=0"
  Holds holds = Holds::No;
  Labels labels;
  Labels annotations;
  std::string generator_path;  // below the daemon's URL: "api/v1/history?gpu=0"
};

struct Observations {
  std::vector<Observation> items;
  // Nothing can be known this time (the GPU backend is down): firing alerts stay firing and
  // nothing new starts. Otherwise an instance missing from `items` is gone (a GPU that left,
  // a finding that cleared).
  bool all_unknown = false;
};

// Labels every alert of `rule` carries: alertname, severity, instance (the host).
Labels base_labels(const Rule& rule, const std::string& hostname);

// For every condition but PolicyAction (which is not observed: it is handed records).
Observations observe(const Rule& rule, const sample::Sample& sample, const std::string& hostname);

// "97%", "95.5%": a ratio as a readable percentage.
std::string percent(double ratio);

}  // namespace gpureap::alert
