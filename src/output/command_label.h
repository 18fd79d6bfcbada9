#pragma once
// The short command a person tells processes apart by, the same in `ps`, `kill`'s plan and
// `top`: the program's name (argv[0] without its directory), the first argument that says what
// it runs (an interpreter's script or module, a launcher's script, a shell's -c code; an
// interpreter's own flags such as python's -u are left out), the name the process gave itself
// when it differs from both (a worker's `pt_data_worker`; right after the program when it runs
// no script), then the remaining arguments. A long path among the first words is shown by its
// last two parts (`…/s1/scenario.json`): jobs started from one directory differ at its end:
//   /usr/bin/python3 -u /opt/jobs/train.py --lr 3e-4   python3 train.py --lr 3e-4
//   /usr/bin/python3 /usr/local/bin/torchrun --nproc_per_node 8 /opt/train.py
//                                                      torchrun … train.py
//   env CUDA_VISIBLE_DEVICES=0 python3 eval.py         env … python3 eval.py
//   /opt/sim/mkscenario /tmp/newcomer/runs/s1/scenario.json   (comm: sim-s1)
//                                                      mkscenario (sim-s1) …/s1/scenario.json
// A table cuts it from the end, so what tells two jobs apart comes first. A process without a
// command line (a kernel thread, a zombie) is [comm]. Every word is made terminal-safe; the
// full command line stays in the JSON and CSV.
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::output {

std::string command_label(const std::vector<std::string>& argv, std::string_view comm);

// The whole command line: the program's name without its directory, then every argument, and
// the name the process gave itself when it differs; terminal-safe. For filters and details.
std::string command_line_text(const std::vector<std::string>& argv, std::string_view comm);

}  // namespace gpureap::output
