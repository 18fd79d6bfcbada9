# bash completion for gpureap: commands, options, and the values gpureap knows: this
# machine's GPUs and their MIG instances, doctor's finding codes, signal names
# (`gpureap list KIND`).
# Installed as share/bash-completion/completions/gpureap; works without bash-completion too
# (`source` this file).

# The values of KIND, without the description after a tab.
_gpureap_values() {
  local line
  while IFS=$'\t' read -r line _; do
    printf '%s\n' "$line"
  done < <("${_gpureap_cmd:-gpureap}" --driver-timeout 2s list "$1" 2>/dev/null)
}

# Options of each command; those ending in "=" take a value.
_gpureap_options() {
  case $1 in
    "") echo "--proc-root= --dev-root= --sys-root= --kmsg= --runtime-root= --nvml-library= --json --csv" \
             "--driver-timeout= --no-color --tree --help --version" ;;
    ps) echo "--tree --watch --no-daemon --gpu= --user= --pid= --sort= --compact -v --verbose" ;;
    kill) echo "--gpu= --user= --ghosts --stopped --tree --group --signal= --grace= --no-escalate" \
               "--wait-release= --dry-run -y --yes --no-daemon" ;;
    doctor) echo "--gpu= --settle= --only= --unattributed-threshold= --fix -y --yes -v --verbose --no-pager --no-daemon" ;;
    reset) echo "--gpu= -y --yes --dry-run" ;;
    daemon) echo "--config= --listen= --check-config=" ;;
    run) echo "--grace= --timeout= --keep-descendants --release-timeout= --sample= --report=" \
              "--fail-fast --fail-fast-grace= -q --quiet" ;;
    top) echo "-d= --delay= --readonly --no-mouse --no-daemon --grace= --wait-release=" ;;
    policy) echo "" ;;
    "policy test") echo "--config= --policy=" ;;
    audit) echo "--since= --file= --config= --policy= --pid=" ;;
    report) echo "--since= --until= -o= --out= --from= --daemon= --config= --audit-log= --processes=" \
                 "--prometheus= --token-file= --basic-auth-file= --job= --via=" ;;
    cluster) echo "--prometheus= --token-file= --basic-auth-file= --job= --node= --gpu= --pod=" \
                  "--unattributed-threshold= --stale-after= --timeout= --watch --interval= --via=" ;;
  esac
}

_gpureap_takes_value() {
  local opt
  for opt in $(_gpureap_options "") $(_gpureap_options "$2"); do
    [[ $opt == "$1=" ]] && return 0
  done
  return 1
}

_gpureap() {
  local _gpureap_cmd=${COMP_WORDS[0]}
  local cur=${COMP_WORDS[COMP_CWORD]} prev=""
  local cmd="" i word
  COMPREPLY=()
  # Find the command (and policy's subcommand) before the word being completed; a value of an
  # option is not a command.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -- && ${cmd} == run ]]; then
      # After `gpureap run ... --`: the job's command line.
      if ((COMP_CWORD == i + 1)); then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
      else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return 0
    fi
    if [[ $word == -* ]]; then
      [[ $word != *=* ]] && _gpureap_takes_value "$word" "$cmd" && ((i++))
      [[ ${COMP_WORDS[i + 1]:-} == "=" ]] && ((i += 2))
      continue
    fi
    case $cmd in
      "") case $word in ps | kill | doctor | reset | daemon | run | top | policy | audit | report | cluster)
            cmd=$word ;; esac ;;
      policy) [[ $word == test ]] && cmd="policy test" ;;
    esac
  done

  # The option whose value is being completed: `--gpu 0`, `--gpu=0` (bash splits at "=").
  if [[ $cur == "=" ]]; then
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    cur=""
  elif ((COMP_CWORD >= 2)) && [[ ${COMP_WORDS[COMP_CWORD - 1]} == "=" ]]; then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  elif ((COMP_CWORD >= 1)); then
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    _gpureap_takes_value "$prev" "$cmd" || prev=""
  fi
  if [[ -n $prev ]]; then
    case $prev in
      --gpu)
        # reset takes a whole GPU; the others also a MIG instance (N/G).
        local kind=gpu-places
        [[ $cmd == reset ]] && kind=gpus
        mapfile -t COMPREPLY < <(compgen -W "$(_gpureap_values $kind)" -- "$cur") ;;
      --signal)
        mapfile -t COMPREPLY < <(compgen -W "$(_gpureap_values signals)" -- "${cur^^}") ;;
      --sort) mapfile -t COMPREPLY < <(compgen -W "pid memory age user" -- "$cur") ;;
      --via) mapfile -t COMPREPLY < <(compgen -W "auto ssh kubectl-exec kubectl-debug" -- "$cur") ;;
      --only)
        # A comma-separated list: complete the code after the last comma.
        local done_part="" last=$cur
        if [[ $cur == *,* ]]; then
          done_part=${cur%,*},
          last=${cur##*,}
        fi
        mapfile -t COMPREPLY < <(compgen -P "$done_part" -W "$(_gpureap_values finding-codes)" \
          -- "$last") ;;
      --user) mapfile -t COMPREPLY < <(compgen -u -- "$cur") ;;
      --proc-root | --dev-root | --sys-root | --runtime-root)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
      --nvml-library | --config | --check-config | --file | --report | --kmsg | --from | --out | \
        --audit-log | --token-file | --basic-auth-file)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
    esac
    return 0
  fi

  if [[ $cur == -* ]]; then
    local opts opt words=()
    for opt in $(_gpureap_options "$cmd") $(_gpureap_options ""); do words+=("${opt%=}"); done
    mapfile -t COMPREPLY < <(compgen -W "${words[*]}" -- "$cur")
    return 0
  fi
  case $cmd in
    "") mapfile -t COMPREPLY < <(compgen -W "ps kill doctor reset daemon run top policy audit report cluster" \
          -- "$cur") ;;
    policy) mapfile -t COMPREPLY < <(compgen -W "test" -- "$cur") ;;
  esac
  return 0
}

complete -F _gpureap gpureap
