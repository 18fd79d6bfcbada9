// The short command every table shows (src/output/command_label.cpp): the program, what it
// runs, the name the process gave itself, then the rest; so two jobs of one interpreter read
// apart at 80 columns.
#include <gtest/gtest.h>

#include "output/command_label.h"
#include "text/display_width.h"

namespace gpureap::output {
namespace {

TEST(CommandLabel, PythonShowsItsScriptNotItsPathOrFlags) {
  EXPECT_EQ(
      command_label({"/usr/bin/python3", "-u", "/opt/jobs/train.py", "--lr", "3e-4"}, "python3"),
      "python3 train.py --lr 3e-4");
  // Flags with a value (-W ignore, -X dev) are skipped with it; clustered flags too.
  EXPECT_EQ(
      command_label({"python3.11", "-W", "ignore", "-X", "dev", "-uB", "eval.py"}, "python3.11"),
      "python3.11 eval.py");
  // Two jobs of one interpreter differ at once, however long their common path.
  auto a = command_label({"/usr/bin/python3", "/opt/jobs/nightly/train_resnet.py"}, "python3");
  auto b = command_label({"/usr/bin/python3", "/opt/jobs/nightly/eval_bert.py"}, "python3");
  EXPECT_EQ(a, "python3 train_resnet.py");
  EXPECT_EQ(b, "python3 eval_bert.py");
}

TEST(CommandLabel, AModuleOrCodeIsWhatRuns) {
  EXPECT_EQ(
      command_label({"python3", "-m", "vllm.entrypoints.api_server", "--model", "m"}, "python3"),
      "python3 -m vllm.entrypoints.api_server --model m");
  EXPECT_EQ(command_label({"python3", "-um", "http.server"}, "python3"), "python3 -m http.server");
  EXPECT_EQ(command_label({"python3", "-c", "import torch; torch.cuda.init()"}, "python3"),
            "python3 -c import torch; torch.cuda.init()");
  EXPECT_EQ(command_label({"java", "-Xmx4g", "-jar", "/opt/app/server.jar", "--port", "1"}, "java"),
            "java -jar server.jar --port 1");
}

TEST(CommandLabel, LaunchersShowTheScriptTheyRun) {
  // torchrun is a Python script: its #! line makes python3 argv[0].
  EXPECT_EQ(command_label({"/usr/bin/python3", "/usr/local/bin/torchrun", "--nproc_per_node", "8",
                           "/opt/jobs/train.py", "--epochs", "90"},
                          "torchrun"),
            "torchrun … train.py --epochs 90");
  EXPECT_EQ(command_label({"torchrun", "--standalone", "finetune.py"}, "torchrun"),
            "torchrun … finetune.py");
  EXPECT_EQ(
      command_label({"python3", "-m", "torch.distributed.run", "--nproc_per_node", "8", "train.py"},
                    "python3"),
      "python3 -m torch.distributed.run … train.py");
  EXPECT_EQ(
      command_label({"accelerate", "launch", "--config_file", "c.yaml", "sft.py"}, "accelerate"),
      "accelerate … sft.py");
  // A launcher without a script is shown as it is.
  EXPECT_EQ(command_label({"mpirun", "-np", "4", "./bench"}, "mpirun"), "mpirun -np 4 ./bench");
}

TEST(CommandLabel, ShellsShowTheirScriptOrTheirCode) {
  EXPECT_EQ(command_label({"/bin/bash", "-c", "python3 train.py --x"}, "bash"),
            "bash -c python3 train.py --x");
  EXPECT_EQ(command_label({"/bin/bash", "-lc", "nvidia-smi"}, "bash"), "bash -c nvidia-smi");
  EXPECT_EQ(command_label({"/bin/sh", "-e", "/srv/jobs/run_eval.sh", "fast"}, "sh"),
            "sh run_eval.sh fast");
  // /bin/sh is dash here: the kernel's name for it is no news.
  EXPECT_EQ(command_label({"/bin/sh", "/srv/jobs/run_eval.sh"}, "dash"), "sh run_eval.sh");
  EXPECT_EQ(command_label({"-bash"}, "bash"), "-bash");
}

TEST(CommandLabel, WrappersKeepTheirNameAndShowWhatTheyRun) {
  EXPECT_EQ(command_label({"/usr/bin/env", "CUDA_VISIBLE_DEVICES=0", "-u", "HOME", "python3", "-u",
                           "eval.py"},
                          "env"),
            "env … python3 eval.py");
  EXPECT_EQ(command_label({"nohup", "python3", "serve.py"}, "nohup"), "nohup python3 serve.py");
  EXPECT_EQ(command_label({"timeout", "-s", "KILL", "3600", "nice", "-n", "5", "python3", "t.py"},
                          "timeout"),
            "timeout … nice … python3 t.py");
  // A wrapper with nothing after its options is shown as it is.
  EXPECT_EQ(command_label({"env", "-i"}, "env"), "env -i");
}

TEST(CommandLabel, TheNameAProcessGaveItselfFollowsWhatItRuns) {
  EXPECT_EQ(command_label({"/usr/bin/python3", "train.py", "--epochs", "90"}, "pt_data_worker"),
            "python3 train.py (pt_data_worker) --epochs 90");
  // comm is argv[0] cut to 15 bytes, or the script's name when run through its #! line: no news.
  EXPECT_EQ(command_label({"/usr/bin/python3", "/opt/jobs/train.py"}, "train.py"),
            "python3 train.py");
  EXPECT_EQ(command_label({"/opt/bin/a-very-long-program-name", "x"}, "a-very-long-pro"),
            "a-very-long-program-name x");
  EXPECT_EQ(command_label({"python", "t.py"}, "python3.11"), "python t.py");
}

TEST(CommandLabel, KernelThreadsAndZombiesHaveNoCommandLine) {
  EXPECT_EQ(command_label({}, "kworker/0:1"), "[kworker/0:1]");
  EXPECT_EQ(command_label({}, "python3"), "[python3]");
  EXPECT_EQ(command_label({"", ""}, "defunct"), "[defunct]");
}

TEST(CommandLabel, ATitleWrittenOverArgvIsSplitIntoWords) {
  EXPECT_EQ(command_label({"nginx: worker process"}, "nginx"), "nginx: worker process");
  EXPECT_EQ(command_label({"/usr/bin/python3 /opt/jobs/train.py --x"}, "python3"),
            "python3 train.py --x");
}

TEST(CommandLabel, HostileTextIsEscaped) {
  auto label = command_label({"/tmp/\x1b]0;owned\x07", "a\nb",
                              "\xe2\x80\xae"
                              "txt.sh"},
                             "x\x1b[2J");
  for (unsigned char c : label) EXPECT_FALSE(c < 0x20 || c == 0x7f) << label;
  EXPECT_EQ(label.find("\u202e"), std::string::npos) << label;
  EXPECT_NE(label.find("\\x1b"), std::string::npos) << label;
  EXPECT_NE(label.find("a\\nb"), std::string::npos) << label;
  EXPECT_NE(label.find("(x\\x1b[2J)"), std::string::npos) << label;
  // A script named with a slash-free escape stays one word; a path's directory is dropped
  // before escaping, so an escape in it never reaches the label.
  EXPECT_EQ(command_label({"python3", "/a/\x1b[31m/t.py"}, "python3"), "python3 t.py");
}

TEST(CommandLabel, WideCharactersAreKept) {
  auto label = command_label({"/opt/训练/训练脚本", "工作进程"}, "训练脚本");
  EXPECT_EQ(label, "训练脚本 工作进程");
  EXPECT_EQ(text::text_width(label), 17u);
  EXPECT_EQ(command_label({"python3", "/数据/训练.py"}, "python3"), "python3 训练.py");
}

TEST(CommandLine, TheWholeCommandLineForFiltersAndCsv) {
  EXPECT_EQ(command_line_text({"/usr/bin/python3", "-u", "/opt/jobs/train.py"}, "pt_data_worker"),
            "python3 -u /opt/jobs/train.py (pt_data_worker)");
  EXPECT_EQ(command_line_text({}, "kworker/0:1"), "[kworker/0:1]");
}

TEST(CommandLabel, WhatTellsJobsFromOneLongDirectoryApartComesFirst) {
  // A program that runs no script: its own name right after it, the long path by its end.
  EXPECT_EQ(command_label({"/opt/sim/bin/mkscenario",
                           "/tmp/newcomer/runs/2026-01-01/s1/scenario.json", "--seed", "7"},
                          "sim-s1"),
            "mkscenario (sim-s1) …/s1/scenario.json --seed 7");
  EXPECT_EQ(
      command_label({"mkscenario", "/tmp/newcomer/runs/2026-01-01/s2/scenario.json"}, "mkscenario"),
      "mkscenario …/s2/scenario.json");
  // A script's name and the name after it stay as they were.
  EXPECT_EQ(command_label({"sh", "/tmp/newcomer/runs/2026-01-01/jobs/pretrain_gpt.sh", "--worker"},
                          "pt_data_worker"),
            "sh pretrain_gpt.sh (pt_data_worker) --worker");
  // Short paths, words that are no path, and the arguments after the first are left whole.
  EXPECT_EQ(command_label({"mkscenario", "/tmp/s1/scenario.json"}, "mkscenario"),
            "mkscenario /tmp/s1/scenario.json");
  EXPECT_EQ(command_label({"bash", "-c", "cd /srv/a/very/long/directory/name && ./run"}, "bash"),
            "bash -c cd /srv/a/very/long/directory/name && ./run");
  EXPECT_EQ(command_label({"tool", "x", "/tmp/newcomer/runs/2026-01-01/s1/scenario.json"}, "tool"),
            "tool x /tmp/newcomer/runs/2026-01-01/s1/scenario.json");
}

}  // namespace
}  // namespace gpureap::output
