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
# Exit statuses: the end of each command's --help (cli/exit_status_table.cpp) is its page's EXIT
# STATUS section, code for code and word for word; no two statuses of a command share a code;
# a bad option exits with the status the table calls a usage error.
help_statuses() {  # "CODE<TAB>meaning" per status, wrapped lines joined; a note: no code
  "$bin" "$@" --help | awk '
    /^Exit status:/ {on=1; next}
    !on {next}
    /^  ([0-9]+|N) +[^ ]/ {if (line != "") print line; sub(/^  /, ""); code=$1;
                           sub(/^[^ ]+ +/, ""); line=code "\t" $0; note=0; next}
    /^        / {sub(/^ +/, ""); line=line " " $0; next}
    /^  [^ ]/ {sub(/^  /, "");
               if (!note) {if (line != "") print line; line="\t" $0; note=1} else line=line " " $0}
    END {if (line != "") print line}'
}
page_statuses() {  # the same from a page's .TP/.B CODE/text and .PP/text items
  awk '
    /^\.SH EXIT STATUS/ {on=1; next}
    on && /^\.SH / {on=0}
    !on {next}
    /^\.TP/ {if (line != "") print line; line=""; want_code=1; next}
    /^\.PP/ {if (line != "") print line; line="\t"; next}
    want_code && /^\.B / {line=substr($0, 4) "\t"; want_code=0; next}
    {gsub(/\\f[BRIP]/, ""); gsub(/\\-/, "-"); line=line (line ~ /\t$/ ? "" : " ") $0}
    END {if (line != "") print line}' "$1"
}
for cmd in "" $commands; do
  [ "$cmd" = list ] && continue  # hidden, for the completions: no page
  page=$man/gpureap${cmd:+-$cmd}.1
  [ -f "$page" ] || continue
  # shellcheck disable=SC2086 # no command: gpureap itself
  from_help=$(help_statuses $cmd)
  from_page=$(page_statuses "$page")
  [ -n "$from_help" ] || problem "'gpureap $cmd --help' lists no exit status"
  [ "$from_help" = "$from_page" ] ||
    problem "the exit statuses of 'gpureap $cmd --help' and $(basename "$page") differ:
$(diff <(echo "$from_help") <(echo "$from_page"))"
  dup=$(cut -f1 <<<"$from_help" | grep -v '^$' | sort | uniq -d)
  [ -z "$dup" ] || problem "'gpureap $cmd' gives status $dup two meanings"
  # shellcheck disable=SC2086
  "$bin" $cmd --no-such-option >/dev/null 2>&1
  status=$?
  meaning=$(awk -F'\t' -v c="$status" '$1 == c {print $2}' <<<"$from_help")
  grep -q "usage" <<<"$meaning" ||
    problem "'gpureap $cmd --no-such-option' exits $status, which its --help calls: ${meaning:-nothing}"
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
