#!/usr/bin/env bash
# The man pages and the completions against the real --help of the binary: every command
# has its page and is completed by bash, zsh and fish; every option of every command is on
# its page and in each completion. A new option fails here until it is documented.
#   usage: docs_test.sh GPUREAP_BINARY SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
man=$src/docs/man
bash_c=$src/completions/gpureap.bash zsh_c=$src/completions/_gpureap fish_c=$src/completions/gpureap.fish
failed=0
problem() { echo "FAIL: $*"; failed=1; }

# CLI11's help: option names two spaces in (descriptions wrap further in, and may name other
# options), commands under "Subcommands:".
options_of() { "$bin" "$@" --help | grep -oE '^  (-[a-z],)?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z0-9-]+' | grep -vx -- '--help'; }
commands_of() { "$bin" "$@" --help | awk '/^Subcommands:/ {on=1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on=0}'; }

# The page of a command documents OPT as \-\-opt; bash and zsh completions name --opt; fish
# names `-l opt` on a line about the command.
documented() {  # page command option
  local page=$1 cmd=$2 opt=$3 roff
  roff=$(sed 's/-/\\-/g' <<<"$opt")
  grep -qF -- "$roff" "$page" || problem "$opt of 'gpureap $cmd' is not in $(basename "$page")"
  grep -qE -- "(^|[ \"'(])$opt([= \"'\[]|$)" "$bash_c" || problem "$opt of 'gpureap $cmd' is not in the bash completion"
  grep -qE -- "'(\([^)]*\))?$opt[=[]|\{[^}]*$opt[,}=]" "$zsh_c" || problem "$opt of 'gpureap $cmd' is not in the zsh completion"
  local fish_cond="__fish_seen_subcommand_from ${cmd##* }"
  [ -z "$cmd" ] && fish_cond="complete -c gpureap "
  # (not a pipe into grep -q: under pipefail the first grep's SIGPIPE would fail it)
  local lines
  lines=$(grep -F -- "$fish_cond" "$fish_c")
  grep -qE -- "-l ${opt#--}( |$)" <<<"$lines" ||
    problem "$opt of 'gpureap $cmd' is not in the fish completion"
}

commands=$(commands_of)
[ -n "$commands" ] || problem "no commands in 'gpureap --help'"
for opt in $(options_of); do
  [ "$opt" = --version ] && { grep -qF -- '\-\-version' "$man/gpureap.1" || problem "--version not in gpureap.1"; continue; }
  documented "$man/gpureap.1" "" "$opt"
done
checked=0
for cmd in $commands; do
  grep -qE "^\.B $cmd( |$)" "$man/gpureap.1" || problem "gpureap.1 does not list the command $cmd"
  grep -qE "(^| )$cmd( |\)|$)" "$bash_c" || problem "the bash completion does not offer $cmd"
  grep -qE "'$cmd:" "$zsh_c" || problem "the zsh completion does not offer $cmd"
  grep -qE -- "-a $cmd -d" "$fish_c" || problem "the fish completion does not offer $cmd"
  page=$man/gpureap-$cmd.1
  [ -f "$page" ] || { problem "no man page docs/man/gpureap-$cmd.1"; continue; }
  for opt in $(options_of "$cmd"); do documented "$page" "$cmd" "$opt"; checked=$((checked + 1)); done
  for sub in $(commands_of "$cmd"); do
    for opt in $(options_of "$cmd" "$sub"); do documented "$page" "$cmd $sub" "$opt"; checked=$((checked + 1)); done
  done
done
# The hidden `list` command's kinds are what the completions ask for.
for kind in gpus gpu-places finding-codes signals; do
  "$bin" list "$kind" >/dev/null 2>&1 || problem "gpureap list $kind fails"
  for c in "$bash_c" "$zsh_c" "$fish_c"; do
    grep -q -- "$kind" "$c" || problem "$(basename "$c") does not ask for $kind"
  done
done
"$bin" list bogus >/dev/null 2>&1 && problem "gpureap list bogus succeeds"
[ "$checked" -ge 40 ] || problem "only $checked command options found in the --help texts"
echo "docs_test: $(wc -w <<<"$commands") commands, $checked command options checked"
exit $failed
