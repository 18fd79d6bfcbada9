// The cluster view from canned Prometheus answers: the lines, their ranking and commands, the
// filters, and answers that are huge, malformed or hostile.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cluster/cluster_text.h"
#include "cluster/cluster_view.h"
#include "cluster/prom_answer.h"
#include "cluster/prometheus_client.h"
#include "report/cluster_page.h"
#include "report/html_page.h"

namespace gpureap::cluster {
namespace {

using nlohmann::json;
constexpr double kNow = 1'800'000'000;
constexpr double GiB = 1073741824.0;

struct S {
  Labels labels;
  double value;
};

std::string vector_answer(const std::vector<S>& series) {
  json result = json::array();
  for (const auto& s : series) {
    json metric = json::object();
    for (const auto& [k, v] : s.labels) metric[k] = v;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", s.value);
    result.push_back({{"metric", metric}, {"value", {kNow, buf}}});
  }
  return json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}}
      .dump();
}

Labels at(const std::string& name, const std::string& instance, Labels more = {}) {
  more["__name__"] = name;
  more["instance"] = instance;
  more["job"] = "gpureap";
  return more;
}

// A node whose daemon answers, with one GPU of `used` of 80 GiB, `ghost` and `unattributed`.
std::vector<S> node(const std::string& instance, double used, double ghost = 0,
                    double unattributed = 0, unsigned gpu = 0) {
  Labels g{{"gpu", std::to_string(gpu)}, {"uuid", "GPU-" + instance}};
  return {{at("up", instance), 1},
          {at("gpureap_up", instance), 1},
          {at("gpureap_sample_timestamp_seconds", instance), kNow - 1},
          {at("gpureap_gpu_memory_used_bytes", instance, g), used},
          {at("gpureap_gpu_memory_total_bytes", instance, g), 80 * GiB},
          {at("gpureap_gpu_memory_ghost_bytes", instance, g), ghost},
          {at("gpureap_gpu_memory_unattributed_bytes", instance, g), unattributed}};
}

S problem(const std::string& instance, const std::string& kind, int pid, double bytes,
          const std::string& keepers = "", Labels more = {}) {
  Labels l{{"gpu", "0"},          {"pid", std::to_string(pid)},
           {"problem", kind},     {"keepers", keepers},
           {"comm", "python"},    {"user", "alice"},
           {"pod_namespace", ""}, {"pod_name", ""}};
  for (auto& [k, v] : more) l[k] = v;
  return {at("gpureap_problem_process_memory_bytes", instance, l), bytes};
}

std::vector<S> join(std::vector<std::vector<S>> parts) {
  std::vector<S> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

ClusterView view_of(const std::vector<S>& facts, const std::vector<S>& missing = {},
                    const Filters& filters = {}, const ViewSettings& settings = {}) {
  auto f = parse_vector_answer(vector_answer(facts));
  auto m = parse_vector_answer(vector_answer(missing));
  EXPECT_TRUE(f) << (f ? "" : f.error().text());
  EXPECT_TRUE(m);
  return build_view(*f, *m, kNow, settings, filters);
}

ViewSettings via(CommandForm form) {
  ViewSettings settings;
  settings.via = form;
  return settings;
}

std::string text_of(const ClusterView& v) {
  return render_text(v, output::Style(false), std::nullopt);
}

// Three nodes: a healthy one, one with a ghost (4242 kept by 4250), one with a leak; a fourth
// whose daemon Prometheus cannot scrape.
std::vector<S> three_and_down() {
  return join({node("node-a:9842", 5 * GiB),
               node("node-b:9842", 13 * GiB, 8 * GiB),
               node("node-c:9842", 6 * GiB, 2 * GiB),
               {problem("node-b:9842", "ghost", 4242, 8 * GiB, "4250"),
                problem("node-c:9842", "leaked", 5002, 2 * GiB),
                {at("up", "node-d:9842"), 0}}});
}

TEST(ClusterView, LinesRankedByMemoryAtStakeEachWithItsCommand) {
  auto v = view_of(three_and_down());
  EXPECT_EQ(text_of(v),
            "NODE    GPU  AT STAKE  PROBLEM\n"
            "node-b  0    8.0 GiB   ghost PID 4242 (python): 8.0 GiB kept by 4250\n"
            "        run: ssh -t node-b sudo gpureap doctor --gpu 0\n"
            "node-c  0    2.0 GiB   leaked PID 5002 (python, alice): 2.0 GiB, nothing holds it\n"
            "        run: ssh -t node-c sudo gpureap doctor --gpu 0\n"
            "node-d  -    -         down: Prometheus cannot scrape its daemon (up == 0)\n"
            "        run: ssh -t node-d systemctl status gpureap\n"
            "Doctor on the node names each problem's remedy: it needs the node's process tree, "
            "which Prometheus does not hold.\n"
            "1 node healthy: 1 GPU, 5.0 GiB of 80 GiB used.\n");
}

// The scene doctor answers with three remedies in an order (end the ghost's keeper; resume or
// end the paused job, a person's choice; then reset for the leak, which the paused job blocks):
// the view names all three problems and sends the user to doctor, never a kill of its own.
TEST(ClusterView, AGhostAPausedJobAndALeakOnOneGpuGetDoctorNeverAKill) {
  auto facts = join({node("node-b:9842", 13 * GiB, 10 * GiB),
                     {problem("node-b:9842", "ghost", 4242, 8 * GiB, "4250"),
                      problem("node-b:9842", "stopped", 6001, 1 * GiB),
                      problem("node-b:9842", "leaked", 5002, 2 * GiB)}});
  auto v = view_of(facts);
  EXPECT_EQ(text_of(v),
            "NODE    GPU  AT STAKE  PROBLEM\n"
            "node-b  0    11 GiB    ghost PID 4242 (python): 8.0 GiB kept by 4250; leaked PID 5002 "
            "(python, alice): 2.0 GiB, nothing holds it; stopped PID 6001 (python, alice): 1.0 "
            "GiB\n"
            "        run: ssh -t node-b sudo gpureap doctor --gpu 0\n"
            "Doctor on the node names each problem's remedy: it needs the node's process tree, "
            "which Prometheus does not hold.\n");
  ASSERT_EQ(v.lines.size(), 1u);
  // No command anywhere (text, JSON, the page) names the paused job, or any PID.
  auto j = to_json(v, "http://prom:9090", ViewSettings{});
  EXPECT_EQ(j["lines"][0]["argv"],
            json::array({"ssh", "-t", "node-b", "sudo", "gpureap", "doctor", "--gpu", "0"}));
  for (const auto& w : v.lines[0].command) {
    EXPECT_EQ(w.find("6001"), std::string::npos) << w;
    EXPECT_NE(w, "kill");
    EXPECT_NE(w, "reset");
  }
  // --pod narrows to the paused job's pod: still doctor, still no PID.
  for (auto& x : facts)
    if (x.labels["pid"] == "6001") {
      x.labels["pod_namespace"] = "ml";
      x.labels["pod_name"] = "eval-0";
    }
  auto pod = view_of(facts, {}, Filters{{}, {}, {"ml/eval-0"}});
  ASSERT_EQ(pod.lines.size(), 1u);
  EXPECT_EQ(command_text(pod.lines[0]), "ssh -t node-b sudo gpureap doctor --gpu 0");
}

TEST(ClusterView, JsonCarriesTheSameLinesExactly) {
  auto v = view_of(three_and_down());
  auto j = to_json(v, "http://prom:9090", ViewSettings{});
  EXPECT_EQ(j["schema"], "gpureap.cluster/v1");
  ASSERT_EQ(j["lines"].size(), 3u);
  EXPECT_EQ(j["lines"][0]["node"], "node-b");
  EXPECT_EQ(j["lines"][0]["at_stake_bytes"], 8 * 1073741824ull);
  EXPECT_EQ(j["lines"][0]["processes"][0]["pid"], 4242);
  EXPECT_EQ(j["lines"][0]["processes"][0]["keepers"], json::array({4250}));
  EXPECT_EQ(j["lines"][0]["command"], "ssh -t node-b sudo gpureap doctor --gpu 0");
  EXPECT_EQ(j["lines"][2]["state"], "down");
  // Why a line has the command it has, or none, as the text view says it.
  for (size_t i = 0; i < v.lines.size(); ++i)
    EXPECT_EQ(j["lines"][i]["command_note"], v.lines[i].command_note) << i;
  EXPECT_EQ(j["healthy"]["nodes"], 1);
}

TEST(ClusterView, FiltersOnlyNarrow) {
  auto only_c = view_of(three_and_down(), {}, Filters{{"node-c"}, {}, {}});
  ASSERT_EQ(only_c.lines.size(), 1u);
  EXPECT_EQ(only_c.nodes[only_c.lines[0].node].name, "node-c");
  EXPECT_EQ(only_c.healthy.nodes, 0u);
  // --gpu 1: no node has one with something to say; the down node still reads as down.
  auto gpu1 = view_of(three_and_down(), {}, Filters{{}, {1}, {}});
  ASSERT_EQ(gpu1.lines.size(), 1u);
  EXPECT_EQ(gpu1.lines[0].state, "down");
  // --pod: only the lines of that pod's processes; the GPU's figures stay the GPU's.
  auto facts = join({node("node-b:9842", 13 * GiB, 8 * GiB),
                     {problem("node-b:9842", "ghost", 4242, 8 * GiB, "4250",
                              {{"pod_namespace", "ml"}, {"pod_name", "bert-0"}}),
                      problem("node-b:9842", "stopped", 6001, 1 * GiB)}});
  auto pod = view_of(facts, {}, Filters{{}, {}, {"ml/bert-0"}});
  ASSERT_EQ(pod.lines.size(), 1u);
  ASSERT_EQ(pod.lines[0].processes.size(), 1u);
  EXPECT_EQ(pod.lines[0].processes[0].pid, 4242);
  EXPECT_EQ(*pod.lines[0].at_stake, static_cast<uint64_t>(9 * GiB));
  EXPECT_EQ(command_text(pod.lines[0]), "ssh -t node-b sudo gpureap doctor --gpu 0");
  auto none = view_of(facts, {}, Filters{{}, {}, {"other"}});
  EXPECT_TRUE(none.lines.empty());
}

TEST(ClusterView, AMistypedNodeOrJobIsAnErrorNeverNothingToShow) {
  const ViewSettings settings;
  auto all = view_of(three_and_down());
  EXPECT_FALSE(unknown_scope(all, settings, {}));
  // A node by its name or by its instance is known; a typo among them is named alone.
  EXPECT_FALSE(unknown_scope(all, settings, Filters{{"node-a", "node-b:9842"}, {}, {}}));
  const Filters typo{{"node-a", "node-typo"}, {}, {}};
  auto e = unknown_scope(view_of(three_and_down(), {}, typo), settings, typo);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("no node node-typo"), std::string::npos) << e->text();
  EXPECT_EQ(e->message.find("node-a"), std::string::npos) << e->text();
  EXPECT_NE(e->hint.find("node-a, node-b, node-c, node-d"), std::string::npos) << e->text();
  // A job Prometheus has no series of: nothing to show would read as a healthy cluster.
  ViewSettings other;
  other.job = "typo";
  auto none = view_of({});
  auto j = unknown_scope(none, other, {});
  ASSERT_TRUE(j);
  EXPECT_NE(j->message.find("\"typo\""), std::string::npos) << j->text();
}

// Prometheus's sums stand for a node's GPUs in the healthy summary; a node with something to
// say is left out of it, sums or not.
TEST(ClusterView, HealthyNodesAreSummedFromPrometheusTotals) {
  auto sum = [](const std::string& instance, const std::string& of, double v) {
    return S{{{"instance", instance}, {"sum", of}}, v};
  };
  auto facts = join({three_and_down(),
                     {sum("node-a:9842", "gpus", 8), sum("node-a:9842", "used", 40 * GiB),
                      sum("node-a:9842", "total", 640 * GiB), sum("node-b:9842", "gpus", 8),
                      sum("node-b:9842", "used", 99 * GiB), sum("node-b:9842", "total", 640 * GiB),
                      sum("node-a:9842", "bogus", 1)}});
  auto v = view_of(facts);
  EXPECT_EQ(v.healthy.nodes, 1u);
  EXPECT_EQ(v.healthy.gpus, 8u);
  EXPECT_EQ(v.healthy.used, static_cast<uint64_t>(40 * GiB));
  EXPECT_EQ(v.healthy.total, static_cast<uint64_t>(640 * GiB));
  EXPECT_EQ(v.lines.size(), 3u);
  EXPECT_EQ(v.skipped_series, 1u);
}

TEST(ClusterView, StaleMissingAndDriverDownNodes) {
  auto facts = join({node("node-a:9842", GiB), node("node-e:9842", GiB)});
  for (auto& s : facts)
    if (s.labels["__name__"] == "gpureap_sample_timestamp_seconds" &&
        s.labels["instance"] == "node-e:9842")
      s.value = kNow - 600;
  facts.push_back({at("gpureap_up", "node-a:9842"), 0});
  facts.erase(std::find_if(facts.begin(), facts.end(), [](const S& s) {
    return s.labels.at("__name__") == "gpureap_up" && s.labels.at("instance") == "node-a:9842";
  }));
  Labels gone{{"instance", "node-f:9842"}, {"job", "gpureap"}};
  auto v = view_of(facts, {{gone, 1}});
  ASSERT_EQ(v.lines.size(), 3u);
  EXPECT_EQ(v.lines[0].state, "driver-down");
  EXPECT_EQ(v.lines[1].state, "stale");
  EXPECT_EQ(v.lines[2].state, "missing");
  EXPECT_NE(text_of(v).find("stale: the daemon's last sample is 10m old"), std::string::npos);
}

// auto: kubectl exec where the target labels name the node's gpureap pod, else ssh. A `node`
// label names the node and chooses no form; --via chooses any form for every node.
TEST(ClusterView, CommandFormIsTheLabelsPodElseSshOrWhatViaSays) {
  auto facts = join({node("gpu-1", 13 * GiB, 8 * GiB),
                     {problem("gpu-1", "ghost", 4242, 8 * GiB, "4250")},
                     {{at("up", "gpu-2"), 0}}});
  for (auto& s : facts) {
    s.labels["namespace"] = "gpureap";
    s.labels["pod"] = s.labels["instance"] == "gpu-1" ? "gpureap-x7k2p" : "gpureap-q9z4m";
  }
  auto commands = [](const ClusterView& v) {
    std::vector<std::string> out;
    for (const auto& line : v.lines)
      out.push_back(line.command.empty() ? "(" + line.command_note + ")" : command_text(line));
    return out;
  };
  const std::vector<std::string> in_pod{
      "kubectl exec -it -n gpureap gpureap-x7k2p -- gpureap doctor --gpu 0",
      "kubectl get pods -A -o wide --field-selector spec.nodeName=gpu-2"};
  EXPECT_EQ(commands(view_of(facts)), in_pod);
  EXPECT_EQ(commands(view_of(facts, {}, {}, via(CommandForm::KubectlExec))), in_pod);
  const std::vector<std::string> by_ssh{"ssh -t gpu-1 sudo gpureap doctor --gpu 0",
                                        "ssh -t gpu-2 systemctl status gpureap"};
  EXPECT_EQ(commands(view_of(facts, {}, {}, via(CommandForm::Ssh))), by_ssh);
  const std::vector<std::string> debug{
      "kubectl debug node/gpu-1 -it --profile=sysadmin --image=busybox -- chroot /host "
      "gpureap doctor --gpu 0",
      "kubectl get pods -A -o wide --field-selector spec.nodeName=gpu-2"};
  EXPECT_EQ(commands(view_of(facts, {}, {}, via(CommandForm::KubectlDebug))), debug);

  // A `node` label (bare metal that names its nodes) and no pod: ssh, as without the label.
  for (auto& s : facts) {
    s.labels.erase("namespace");
    s.labels.erase("pod");
    s.labels["node"] = s.labels["instance"];
  }
  EXPECT_EQ(commands(view_of(facts)), by_ssh);
  EXPECT_EQ(commands(view_of(facts, {}, {}, via(CommandForm::KubectlDebug))), debug);
  // kubectl exec needs the pod: without it the line says so and gives no command.
  EXPECT_EQ(commands(view_of(facts, {}, {}, via(CommandForm::KubectlExec))),
            (std::vector<std::string>{
                "(the target labels name no gpureap pod (pod, namespace) to exec into)",
                "kubectl get pods -A -o wide --field-selector spec.nodeName=gpu-2"}));
  for (const char* name : {"auto", "ssh", "kubectl-exec", "kubectl-debug"})
    EXPECT_TRUE(parse_command_form(name)) << name;
  EXPECT_FALSE(parse_command_form("kubectl"));
}

// Two daemons on one host (two ports) are two nodes of one name: each line says which.
TEST(ClusterView, TwoDaemonsOnOneHostStayApart) {
  auto facts = join({node("node-b:9842", 13 * GiB, 8 * GiB),
                     node("node-b:9843", 6 * GiB, 2 * GiB),
                     node("node-a:9842", 5 * GiB),
                     {problem("node-b:9842", "ghost", 4242, 8 * GiB, "4250"),
                      problem("node-b:9843", "leaked", 5002, 2 * GiB)}});
  auto v = view_of(facts);
  EXPECT_EQ(text_of(v),
            "NODE                  GPU  AT STAKE  PROBLEM\n"
            "node-b (node-b:9842)  0    8.0 GiB   ghost PID 4242 (python): 8.0 GiB kept by 4250\n"
            "                      run: ssh -t node-b sudo gpureap doctor --gpu 0\n"
            "node-b (node-b:9843)  0    2.0 GiB   leaked PID 5002 (python, alice): 2.0 GiB, "
            "nothing holds it\n"
            "                      run: ssh -t node-b sudo gpureap doctor --gpu 0\n"
            "Doctor on the node names each problem's remedy: it needs the node's process tree, "
            "which Prometheus does not hold.\n"
            "1 node healthy: 1 GPU, 5.0 GiB of 80 GiB used.\n");
  // --node takes the shared name (both) or one instance.
  EXPECT_EQ(view_of(facts, {}, Filters{{"node-b"}, {}, {}}).lines.size(), 2u);
  auto one = view_of(facts, {}, Filters{{"node-b:9843"}, {}, {}});
  ASSERT_EQ(one.lines.size(), 1u);
  EXPECT_EQ(one.nodes[one.lines[0].node].instance, "node-b:9843");
}

TEST(ClusterView, HostileLabelValuesAreEscapedAndNeverBecomeOptionsOrCommands) {
  const std::string evil = "-oProxyCommand=sh -c 'x'\x1b[31m";
  auto facts = join(
      {node(evil + ":9842", 13 * GiB, 8 * GiB),
       {problem(evil + ":9842", "ghost", 4242, 8 * GiB, "4250",
                {{"comm", "py\x1b]0;pwned\x07\xe2\x80\xae"}, {"user", "al\xe2\x80\xaeice"}})}});
  auto v = view_of(facts);
  ASSERT_EQ(v.lines.size(), 1u);
  EXPECT_TRUE(v.lines[0].command.empty());
  auto text = text_of(v);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos);  // no right-to-left override
  EXPECT_NE(text.find("no host name"), std::string::npos);
  // JSON: valid UTF-8, dumpable without throwing.
  EXPECT_NO_THROW(to_json(v, "http://p", ViewSettings{}).dump());
  // A PID or keeper list that is no number is skipped, counted, never shown.
  auto bad =
      join({node("node-b:9842", 13 * GiB, 8 * GiB),
            {problem("node-b:9842", "ghost", 4242, 8 * GiB, "4250;rm -rf /"),
             problem("node-b:9842", "ghost", 4243, 8 * GiB, "4250", {{"pid", "4243 && reboot"}}),
             problem("node-b:9842", "pwn", 4244, GiB)}});
  auto vb = view_of(bad);
  EXPECT_EQ(vb.skipped_series, 3u);
  EXPECT_EQ(text_of(vb).find("rm -rf"), std::string::npos);
  EXPECT_EQ(text_of(vb).find("reboot"), std::string::npos);
}

TEST(ClusterView, AnOlderDaemonsGhostMemoryIsShownWithoutPids) {
  // No sample time, no problem processes: a daemon from before those metrics.
  auto facts = node("old:9842", 13 * GiB, 8 * GiB, 3 * GiB);
  std::erase_if(facts, [](const S& s) {
    return s.labels.at("__name__") == "gpureap_sample_timestamp_seconds";
  });
  auto v = view_of(facts);
  ASSERT_EQ(v.lines.size(), 1u);
  EXPECT_EQ(*v.lines[0].at_stake, static_cast<uint64_t>(11 * GiB));
  EXPECT_EQ(describe(v, v.lines[0]),
            "ghost 8.0 GiB (its daemon exports no PIDs: an older gpureap); unattributed 3.0 GiB "
            "that no listed process holds");
  EXPECT_EQ(command_text(v.lines[0]), "ssh -t old sudo gpureap doctor --gpu 0");
}

TEST(PromAnswer, MalformedAndErrorAnswersAreErrorsNeverCrashes) {
  for (const char* body :
       {"", "null", "[]", "{", "{\"status\":\"success\"}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":{}}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{"
        "\"a\":1},\"value\":[1,\"1\"]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},"
        "\"value\":[\"x\",\"1\"]}]}}"})
    EXPECT_FALSE(parse_vector_answer(body)) << body;
  auto refused = parse_vector_answer(
      R"({"status":"error","errorType":"bad_data","error":"parse error \u001b[31m"})");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("bad_data"), std::string::npos);
  EXPECT_EQ(refused.error().message.find('\x1b'), std::string::npos);
}

TEST(PromAnswer, DeepNestingHugeAnswersAndLongLabelsAreRefused) {
  std::string deep(1'000'000, '[');
  EXPECT_FALSE(parse_vector_answer(deep));
  std::string deep_inside =
      R"({"status":"success","data":{"resultType":"vector","x":)" + std::string(1'000, '[');
  auto d = parse_vector_answer(deep_inside);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("deeper than 16"), std::string::npos) << d.error().message;
  // Brackets inside strings are no nesting.
  EXPECT_TRUE(parse_vector_answer(
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"[[[[[[[[[[[[[[[[[[["},"value":[1,"1"]}]}})"));
  AnswerLimits small;
  small.max_series = 2;
  auto three = vector_answer(node("n:1", GiB)).substr(0);
  EXPECT_FALSE(parse_vector_answer(three, small));
  auto long_label = vector_answer({{at("up", std::string(5000, 'x')), 1}});
  EXPECT_FALSE(parse_vector_answer(long_label));
  // Non-finite values are skipped, not believed.
  auto nan = parse_vector_answer(
      R"({"status":"success","data":{"resultType":"vector","result":[)"
      R"({"metric":{"__name__":"up"},"value":[1,"NaN"]},{"metric":{},"value":[1,"+Inf"]},)"
      R"({"metric":{},"value":[1,"2"]}]}})");
  ASSERT_TRUE(nan);
  EXPECT_EQ(nan->skipped, 2u);
  ASSERT_EQ(nan->series.size(), 1u);
  EXPECT_EQ(nan->series[0].value, 2);
}

TEST(PromAnswer, MatrixAnswerReadsPoints) {
  auto m =
      parse_matrix_answer(R"({"status":"success","data":{"resultType":"matrix","result":[)"
                          R"({"metric":{"instance":"a"},"values":[[1,"1"],[2,"NaN"],[3,"3"]]}]}})");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->series.size(), 1u);
  EXPECT_EQ(m->series[0].points.size(), 2u);
}

TEST(PrometheusUrl, CredentialsInTheUrlAreRefusedAndPrefixesKept) {
  EXPECT_FALSE(parse_prometheus_url("http://user:pw@prom:9090"));
  EXPECT_FALSE(parse_prometheus_url("ftp://prom"));
  EXPECT_FALSE(parse_prometheus_url("prom:9090"));
  EXPECT_FALSE(parse_prometheus_url("http://prom:9090/?x=1"));
  auto t = parse_prometheus_url("https://prom.example:8443/prometheus/");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->authority, "prom.example:8443");
  EXPECT_EQ(t->base_path, "/prometheus");
  auto v6 = parse_prometheus_url("http://[::1]:9090");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(url_encode("up{job=\"a b\"}"), "up%7Bjob%3D%22a%20b%22%7D");
}

TEST(ClusterQueries, JobIsQuotedForPromQL) {
  std::vector<std::string> all{targets_query("a\"b"), problems_query("a\"b"),
                               unattributed_query("a\"b", {}), gpu_memory_query("a\"b", {"x"})};
  for (const auto& q : totals_queries("a\"b", {1, 3})) all.push_back(q);
  for (const auto& q : all) EXPECT_NE(q.find("job=\"a\\\"b\""), std::string::npos) << q;
  for (const auto& q : totals_queries("gpureap", {1, 3}))
    EXPECT_NE(q.find("gpu=~\"1|3\""), std::string::npos) << q;
  for (const auto& q : totals_queries("gpureap", {}))
    EXPECT_EQ(q.find("gpu=~"), std::string::npos) << q;
  EXPECT_NE(unattributed_query("gpureap", {}).find(" > 1073741824"), std::string::npos);
  // Instances are matched literally, whatever they hold.
  EXPECT_NE(gpu_memory_query("gpureap", {"node-a.lab:9842", "x|y\""})
                .find(R"(instance=~"node-a\\.lab:9842|x\\|y\"")"),
            std::string::npos)
      << gpu_memory_query("gpureap", {"node-a.lab:9842", "x|y\""});
  EXPECT_EQ(missing_query("gpureap"),
            "max_over_time(up{job=\"gpureap\"}[1h]) unless on(instance) up{job=\"gpureap\"}");
}

// The nodes whose GPUs are asked one by one: a problem, unattributed memory, or a daemon too
// old to export its sample time; never the healthy ones.
TEST(ClusterQueries, OnlyTheNodesWithSomethingToSayAreAskedForEveryGpu) {
  auto parse = [](const std::vector<S>& series) {
    return *parse_vector_answer(vector_answer(series));
  };
  std::vector<S> targets;
  for (const char* n : {"node-a:9842", "node-b:9842", "node-c:9842", "node-old:9842"}) {
    targets.push_back({at("up", n), 1});
    targets.push_back({at("gpureap_up", n), 1});
    if (std::string(n) != "node-old:9842")
      targets.push_back({at("gpureap_sample_timestamp_seconds", n), kNow});
  }
  auto asked = ask_gpus_of(
      parse(targets), parse({problem("node-b:9842", "ghost", 4242, GiB)}),
      parse(
          {{at("gpureap_gpu_memory_unattributed_bytes", "node-c:9842", {{"gpu", "3"}}), 5 * GiB}}));
  EXPECT_EQ(asked, (std::vector<std::string>{"node-b:9842", "node-c:9842", "node-old:9842"}));
}

}  // namespace
}  // namespace gpureap::cluster

namespace gpureap::cluster {
namespace {

std::string matrix_sum(const std::vector<double>& values, double start, double step) {
  json points = json::array();
  for (size_t i = 0; i < values.size(); ++i)
    points.push_back({start + static_cast<double>(i) * step, std::to_string(values[i])});
  json result = json::array({{{"metric", json::object()}, {"values", points}}});
  return json{{"status", "success"}, {"data", {{"resultType", "matrix"}, {"result", result}}}}
      .dump();
}

report::PageSeries fleet_series() {
  report::PageSeries s;
  s.start = kNow - 120;
  s.end = kNow;
  s.step = 60;
  s.ghost = *parse_matrix_answer(matrix_sum({2 * GiB, 10 * GiB, 10 * GiB}, s.start, s.step));
  s.unattributed = *parse_matrix_answer(matrix_sum({0, 0, GiB}, s.start, s.step));
  return s;
}

// The page leads with the nodes with problems, worst first, each with what it has and the
// commands; one chart of the fleet's ghost and unattributed memory; the healthy nodes counted.
TEST(ClusterPage, ATableOfProblemNodesWorstFirstOneFleetChartHealthyCounted) {
  auto facts = three_and_down();
  facts.push_back(problem("node-c:9842", "stopped", 5100, GiB, "", {{"gpu", "1"}}));
  for (const auto& g : node("node-c:9842", 3 * GiB, 0, 0, 1))
    if (g.labels.count("gpu")) facts.push_back(g);
  auto v = view_of(facts);
  auto page = report::build_cluster_page(v, fleet_series(), "http://prom:9090", 100);
  EXPECT_EQ(page.subtitle.rfind("4 nodes, from http://prom:9090, ", 0), 0u) << page.subtitle;
  EXPECT_EQ(page.notes,
            (std::vector<std::string>{"1 node healthy now: 1 GPU, 5.0 GiB of 80 GiB used."}));
  ASSERT_TRUE(page.lead);
  EXPECT_EQ(page.lead->title, "Nodes with problems, worst first");
  EXPECT_EQ(page.lead->headers,
            (std::vector<std::string>{"node", "at stake", "problems", "run on the node"}));
  using Cells = std::vector<std::vector<std::string>>;
  ASSERT_EQ(page.lead->rows.size(), 3u);
  EXPECT_EQ(page.lead->rows[0], (Cells{{"node-b"},
                                       {"8.0 GiB"},
                                       {"GPU 0: ghost PID 4242 (python): 8.0 GiB kept by 4250"},
                                       {"ssh -t node-b sudo gpureap doctor --gpu 0"}}));
  EXPECT_EQ(page.lead->rows[1],
            (Cells{{"node-c"},
                   {"3.0 GiB"},
                   {"GPU 0: leaked PID 5002 (python, alice): 2.0 GiB, nothing holds it",
                    "GPU 1: stopped PID 5100 (python, alice): 1.0 GiB"},
                   {"ssh -t node-c sudo gpureap doctor --gpu 0",
                    "ssh -t node-c sudo gpureap doctor --gpu 1"}}));
  // A down node says it is down, never idle.
  EXPECT_EQ(page.lead->rows[2], (Cells{{"node-d"},
                                       {"-"},
                                       {"down: Prometheus cannot scrape its daemon (up == 0)"},
                                       {"ssh -t node-d systemctl status gpureap"}}));
  EXPECT_EQ(page.lead->note, "");

  ASSERT_EQ(page.gpus.size(), 1u);
  const auto& chart = page.gpus[0];
  EXPECT_EQ(chart.title, "Ghost and unattributed memory, the whole fleet");
  EXPECT_FALSE(chart.total_bytes);
  ASSERT_EQ(chart.bands.size(), 2u);
  EXPECT_EQ(chart.bands[0].kind, report::BandKind::Ghost);
  EXPECT_EQ(chart.bands[0].bytes, (std::vector<uint64_t>{2ull << 30, 10ull << 30, 10ull << 30}));
  EXPECT_EQ(chart.bands[1].kind, report::BandKind::Unattributed);
  EXPECT_EQ(chart.bands[1].bytes, (std::vector<uint64_t>{0, 0, 1ull << 30}));

  const std::string html = report::render_html(page);
  EXPECT_NE(html.find("<div class=\"lead\"><section class=\"lead-table\">"), std::string::npos);
  EXPECT_NE(html.find("<td>node-d</td><td>-</td><td>down: Prometheus cannot scrape its daemon "
                      "(up == 0)</td>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("class=\"gpu idle\""), std::string::npos);
  EXPECT_EQ(html.find("No process used it"), std::string::npos);
}

// At 1,000 nodes the page is the same size as at 10: the table lists the worst, a note counts
// the rest, the healthy are one count, and there is still one chart.
TEST(ClusterPage, AThousandNodesMakeOnePageOfBoundedSize) {
  std::vector<S> facts;
  for (int i = 0; i < 1000; ++i) {
    const std::string instance = "node-" + std::to_string(1000 + i) + ":9842";
    for (auto& s : node(instance, 10 * GiB)) facts.push_back(s);
    if (i % 10 == 0) facts.push_back(problem(instance, "ghost", 4242, (1 + i) * GiB, "4250"));
  }
  auto v = view_of(facts);
  auto page = report::build_cluster_page(v, fleet_series(), "http://prom:9090", 40);
  ASSERT_TRUE(page.lead);
  ASSERT_EQ(page.lead->rows.size(), 40u);
  EXPECT_EQ(page.lead->rows[0][0], std::vector<std::string>{"node-1990"});  // the most at stake
  EXPECT_EQ(page.lead->rows[1][0], std::vector<std::string>{"node-1980"});
  EXPECT_EQ(page.lead->note,
            "60 more nodes with problems, each with less at stake: `gpureap cluster` lists every "
            "one.");
  EXPECT_EQ(page.notes,
            (std::vector<std::string>{"900 nodes healthy now: 900 GPUs, 8.8 TiB of 70 TiB used."}));
  EXPECT_EQ(page.gpus.size(), 1u);
  EXPECT_LT(report::render_html(page).size(), size_t{64} << 10);
}

}  // namespace
}  // namespace gpureap::cluster
