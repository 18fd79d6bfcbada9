# fish completion for gpureap: commands, options, and the values gpureap knows: this machine's
# GPU indices, doctor's finding codes, signal names (`gpureap list KIND`). Installed in
# share/fish/vendor_completions.d.

set -l commands ps kill doctor reset daemon run top policy audit report cluster

# "VALUE<TAB>description" lines are what fish shows as a value and its description.
function __gpureap_values -a kind
    set -l cmd (commandline -opc)[1]
    $cmd --driver-timeout 2s list $kind 2>/dev/null
end

# Doctor's --only takes codes separated by commas: complete after the last one.
function __gpureap_finding_codes
    set -l token (commandline -ct | string replace -r '^--only=' '')
    set -l done (string match -r '^.*,' -- $token)
    for code in (__gpureap_values finding-codes)
        echo $done$code
    end
end

complete -c gpureap -f

# Global options, before or after the command.
complete -c gpureap -l proc-root -r -a '(__fish_complete_directories)' -d 'procfs to read'
complete -c gpureap -l dev-root -r -a '(__fish_complete_directories)' -d 'device directory to match'
complete -c gpureap -l sys-root -r -a '(__fish_complete_directories)' -d 'sysfs to read DRM GPUs and KFD from'
complete -c gpureap -l kmsg -r -F -d 'kernel log to read GPU errors from'
complete -c gpureap -l runtime-root -r -a '(__fish_complete_directories)' -d 'folder holding the container runtimes state'
complete -c gpureap -l nvml-library -r -F -d 'path of libnvidia-ml.so.1'
complete -c gpureap -l json -d 'print JSON'
complete -c gpureap -l csv -d 'print CSV'
complete -c gpureap -l driver-timeout -x -d 'give up on a driver that does not answer within this'
complete -c gpureap -l no-color -d 'no colour'
complete -c gpureap -l help -s h -d 'print the options'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -l version -d 'print the version'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -l tree -d 'same as ps --tree'

complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a ps -d 'show every process that holds GPU memory or GPU device files'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a kill -d 'reclaim GPU memory: plan, confirm, signal, verify'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a doctor -d 'explain every ghost, with evidence and the fix'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a reset -d 'reset a GPU whose memory nothing alive holds'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a daemon -d 'node agent: Prometheus metrics, findings and history'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a run -d 'run a command and leave nothing behind'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a top -d 'live view of GPU memory and its holders'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a policy -d "cleanup policies of the daemon's config"
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a audit -d 'what cleanup policies decided and did'
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a cluster -d "every node's ghosts and holders, from Prometheus"
complete -c gpureap -n "not __fish_seen_subcommand_from $commands" -a report -d 'GPU memory over time as one HTML page'

# ps
complete -c gpureap -n '__fish_seen_subcommand_from ps' -l tree -d 'show the holders inside their process tree'
complete -c gpureap -n '__fish_seen_subcommand_from ps' -l watch -d 're-render in place every INTERVAL'
complete -c gpureap -n '__fish_seen_subcommand_from ps' -l no-daemon -d 'scan here even when the daemon could answer'
complete -c gpureap -n '__fish_seen_subcommand_from ps' -l gpu -x -a '(__gpureap_values gpu-places)' -d 'only the processes on GPU N'
complete -c gpureap -n '__fish_seen_subcommand_from ps' -l user -x -a '(__fish_complete_users)' -d 'only the processes of this user'
complete -c gpureap -n '__fish_seen_subcommand_from ps' -l pid -x -a '(__fish_complete_pids)' -d 'only this process'
complete -c gpureap -n '__fish_seen_subcommand_from ps' -l sort -x -a 'pid memory age user' -d 'order within each GPU'
complete -c gpureap -n '__fish_seen_subcommand_from ps' -l compact -d 'one line per GPU'
complete -c gpureap -n '__fish_seen_subcommand_from ps' -s v -l verbose -d 'also the notes every run repeats'

# kill
complete -c gpureap -n '__fish_seen_subcommand_from kill' -a '(__fish_complete_pids)'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l gpu -x -a '(__gpureap_values gpu-places)' -d 'every holder of GPU N'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l user -x -a '(__fish_complete_users)' -d 'only processes of this user'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l ghosts -d 'the processes that keep ghost memory alive'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l stopped -d 'holders that are stopped (paused)'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l tree -d 'also every descendant of the targets'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l group -d "also every member of the targets' process groups"
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l signal -x -a '(__gpureap_values signals)' -d 'first signal'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l grace -x -d 'wait this long before SIGKILL'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l no-escalate -d 'never send SIGKILL'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l wait-release -x -d 'wait this long for the memory to be released'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l dry-run -d 'print the plan and stop'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -s y -l yes -d 'do not ask'
complete -c gpureap -n '__fish_seen_subcommand_from kill' -l no-daemon -d 'decide without the daemon record of the listed PIDs'

# doctor
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -l gpu -x -a '(__gpureap_values gpu-places)' -d 'only findings about this GPU'
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -l settle -x -d 'time between the two samples'
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -l only -x -a '(__gpureap_finding_codes)' -d 'only findings with these codes'
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -l unattributed-threshold -x -d 'report unattributed memory above this'
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -l fix -d 'apply the safe remedies through the reaper'
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -s y -l yes -d 'with --fix: do not ask'
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -s v -l verbose -d 'also the informational findings'
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -l no-pager -d 'never page the report'
complete -c gpureap -n '__fish_seen_subcommand_from doctor' -l no-daemon -d 'diagnose here even when the daemon could answer'

# reset
complete -c gpureap -n '__fish_seen_subcommand_from reset' -l gpu -x -a '(__gpureap_values gpus)' -d 'the GPU to reset'
complete -c gpureap -n '__fish_seen_subcommand_from reset' -s y -l yes -d 'do not ask for confirmation'
complete -c gpureap -n '__fish_seen_subcommand_from reset' -l dry-run -d 'check and show what would run'

# daemon
complete -c gpureap -n '__fish_seen_subcommand_from daemon' -l config -r -F -d 'TOML config file'
complete -c gpureap -n '__fish_seen_subcommand_from daemon' -l listen -x -d 'HOST:PORT to serve on'
complete -c gpureap -n '__fish_seen_subcommand_from daemon' -l check-config -r -F -d 'check FILE and exit'

# run: gpureap's options, then `--` and the job's command line
complete -c gpureap -n '__fish_seen_subcommand_from run' -l grace -x -d 'after SIGTERM, wait this long before SIGKILL'
complete -c gpureap -n '__fish_seen_subcommand_from run' -l timeout -x -d 'end the job after this long'
complete -c gpureap -n '__fish_seen_subcommand_from run' -l keep-descendants -d "leave the job's other processes running"
complete -c gpureap -n '__fish_seen_subcommand_from run' -l release-timeout -x -d 'wait this long for the GPU memory'
complete -c gpureap -n '__fish_seen_subcommand_from run' -l sample -x -d "sample the job's GPU memory this often"
complete -c gpureap -n '__fish_seen_subcommand_from run' -l report -r -F -d 'write a JSON report to FILE'
complete -c gpureap -n '__fish_seen_subcommand_from run' -l fail-fast -d 'end the whole job when one of its processes fails'
complete -c gpureap -n '__fish_seen_subcommand_from run' -l fail-fast-grace -x -d 'give the job this long to end on its own'
complete -c gpureap -n '__fish_seen_subcommand_from run' -s q -l quiet -d 'no summary on stderr'
complete -c gpureap -n '__fish_seen_subcommand_from run; and contains -- -- (commandline -opc)' -a '(__fish_complete_subcommand --fcs-skip=3)'

# top
complete -c gpureap -n '__fish_seen_subcommand_from top' -s d -l delay -x -d 'refresh interval'
complete -c gpureap -n '__fish_seen_subcommand_from top' -l readonly -d 'disable every action'
complete -c gpureap -n '__fish_seen_subcommand_from top' -l no-mouse -d 'leave the mouse to the terminal'
complete -c gpureap -n '__fish_seen_subcommand_from top' -l no-daemon -d 'sample here even when the daemon could answer'
complete -c gpureap -n '__fish_seen_subcommand_from top' -l grace -x -d 'for kills: wait this long before SIGKILL'
complete -c gpureap -n '__fish_seen_subcommand_from top' -l wait-release -x -d 'for kills: wait this long for the memory'

# policy test
complete -c gpureap -n '__fish_seen_subcommand_from policy; and not __fish_seen_subcommand_from test' -a test -d 'what each policy would match now, and why'
complete -c gpureap -n '__fish_seen_subcommand_from test' -l config -r -F -d "the daemon's config file"
complete -c gpureap -n '__fish_seen_subcommand_from test' -l policy -x -d 'only the policy with this name'

# audit
complete -c gpureap -n '__fish_seen_subcommand_from audit' -l since -x -d 'only records newer than this'
complete -c gpureap -n '__fish_seen_subcommand_from audit' -l file -r -F -d 'the audit log to read'
complete -c gpureap -n '__fish_seen_subcommand_from audit' -l config -r -F -d "the daemon config whose audit_log to read"
complete -c gpureap -n '__fish_seen_subcommand_from audit' -l policy -x -d 'only records of this policy'
complete -c gpureap -n '__fish_seen_subcommand_from audit' -l pid -x -d 'only records about this PID'

# report
complete -c gpureap -n '__fish_seen_subcommand_from report' -l since -x -d 'how far back'
complete -c gpureap -n '__fish_seen_subcommand_from report' -l until -x -d 'where the window ends'
complete -c gpureap -n '__fish_seen_subcommand_from report' -s o -l out -r -F -d 'the page to write'
complete -c gpureap -n '__fish_seen_subcommand_from report' -l from -r -F -d 'a saved /api/v1/history document'
complete -c gpureap -n '__fish_seen_subcommand_from report' -l daemon -x -d "the daemon's HTTP address"
complete -c gpureap -n '__fish_seen_subcommand_from report' -l config -r -F -d "the daemon's config file"
complete -c gpureap -n '__fish_seen_subcommand_from report' -l audit-log -r -F -d "the policies' audit log"
complete -c gpureap -n '__fish_seen_subcommand_from report' -l processes -x -d 'processes named per GPU'
complete -c gpureap -n '__fish_seen_subcommand_from report' -l prometheus -x -d 'draw the cluster from this Prometheus'
complete -c gpureap -n '__fish_seen_subcommand_from report' -l token-file -r -F -d 'a file with the bearer token'
complete -c gpureap -n '__fish_seen_subcommand_from report' -l basic-auth-file -r -F -d 'a file with user:password'
complete -c gpureap -n '__fish_seen_subcommand_from report' -l job -x -d 'the scrape job of the daemons'
complete -c gpureap -n '__fish_seen_subcommand_from report' -l via -x -a 'auto ssh kubectl-exec kubectl-debug' -d 'how the commands reach a node'

# cluster
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l prometheus -x -d 'the Prometheus server URL'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l token-file -r -F -d 'a file with the bearer token'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l basic-auth-file -r -F -d 'a file with user:password'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l job -x -d 'the scrape job of the daemons'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l node -x -d 'only this node'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l gpu -x -d 'only this GPU index'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l pod -x -d 'only the processes of this pod'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l unattributed-threshold -x -d 'unattributed memory shown above this'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l stale-after -x -d 'a sample older than this is stale'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l timeout -x -d 'the most one query may take'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l watch -d 'redraw every --interval'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l interval -x -d 'with --watch, the time between views'
complete -c gpureap -n '__fish_seen_subcommand_from cluster' -l via -x -a 'auto ssh kubectl-exec kubectl-debug' -d 'how the commands reach a node'
