#pragma once
// The tables of the daemon's config besides its top-level keys: [[policy]]
// (config_policy.cpp), [[alert]] and [[sink]] (config_alert.cpp). Each reads every key of
// every table and reports every problem at its line.
#include <toml++/toml.h>

#include "daemon/config.h"
#include "daemon/config_reader.h"

namespace gpureap::daemon {

void read_policies(const toml::node& node, DaemonConfig& c, config::Problems& p);
void read_alerts(const toml::node& node, DaemonConfig& c, config::Problems& p);
void read_sinks(const toml::node& node, DaemonConfig& c, config::Problems& p);

// Rules between a policy's keys, and against the top-level keys (idle within history).
void check_policies(const toml::table& root, const DaemonConfig& c, config::Problems& p);

// Rules across tables, once all are read: names are unique, an alert names only sinks and
// policies that exist.
void check_references(const toml::table& root, const DaemonConfig& c, config::Problems& p);

}  // namespace gpureap::daemon
