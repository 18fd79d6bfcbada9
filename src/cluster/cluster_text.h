#pragma once
// The cluster view for people (a table, each line followed by the command to run on its node)
// and for scripts (the gpureap.cluster/v1 JSON). Every label value from Prometheus is escaped
// here: terminal-safe in the table, valid UTF-8 in the JSON, shell-quoted in a command.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_view.h"
#include "output/style.h"

namespace gpureap::cluster {

// What a line says, one piece per problem: "ghost PID 4242 (python): 8.0 GiB kept by 4250".
std::string describe(const ClusterView& view, const Line& line);
// A job split across nodes: "job exp-7 (alice): 1 rank gone on node-a; node-b's 4 ranks still
// hold 96 GiB".
std::string describe_split_job(const ClusterView& view, const SplitJob& job);
// The command words, shell-quoted, as one line; "" when there is none.
std::string command_text(const std::vector<std::string>& words);
std::string command_text(const Line& line);

std::string render_text(const ClusterView& view, const output::Style& style,
                        std::optional<size_t> width);
nlohmann::json to_json(const ClusterView& view, const std::string& prometheus,
                       const ViewSettings& settings);

}  // namespace gpureap::cluster
