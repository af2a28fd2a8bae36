# bash completion for sluice (docs/cli.md, "Shell completion"). Install:
#   cp deploy/completion/sluice.bash /etc/bash_completion.d/sluice   (or source it from ~/.bashrc)
# Completes subcommands, their options, job ids of your live jobs (from `sluice jobs`), node
# names, queues, states and files.
_sluice_ids() {
  sluice jobs --state "${1:-pending,running}" 2>/dev/null | awk 'NR > 1 {print $1}'
}

_sluice() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion || return
  else
    cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
  fi
  local commands="submit run sbatch srun jobs queues nodes cancel hold release requeue logs explain
    history usage advise config snapshot plan check serve up agent kubeconfig sim gateway"
  local common="--server --token --json --help"
  local states="pending running succeeded failed cancelled rejected"
  local cmd="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in -*) ;; *) cmd=${words[i]}; break ;; esac
  done
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  case $prev in
    --state | -s | -t) COMPREPLY=($(compgen -W "$states" -- "$cur")); return ;;
    --period) COMPREPLY=($(compgen -W "day week month all" -- "$cur")); return ;;
    --by) COMPREPLY=($(compgen -W "namespace user" -- "$cur")); return ;;
    --export) COMPREPLY=($(compgen -W "ALL NONE" -- "$cur")); return ;;
    --dependency | -d) COMPREPLY=($(compgen -W "afterok: afterany: afternotok: after: singleton" -- "$cur")); return ;;
    --chdir | -D | --output | -o | --error | --config | --data-dir) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local opts
  case $cmd in
    run) opts="--queue -q -p --partition --namespace --nodes -N --ntasks -n --ntasks-per-node
      --parsable --wait -W --gpus --gang --gpu-fraction --cpu --memory
      --priority-class --time -t --walltime --name -J --job-name --chdir -D --export --env -e
      --dependency -d --hold -H --array -a --output -o --error --interactive --pty --preemptible
      --no-preemptible --no-spot --dry-run" ;;
    sbatch) opts="--dry-run --namespace -J -p --partition -G --gpus --gpus-per-node --gres -N -n
      --nodes --ntasks --ntasks-per-node --gpus-per-task -c --mem -t --time -a --array -d
      --dependency -o --output -e --error -D --chdir --export -H --hold --parsable -Q --wrap -W
      --wait" ;;
    srun) opts="--ntasks -n --nodes -N --ntasks-per-node" ;;
    jobs) opts="--state -s -t --states --queue -q -p --partition --namespace -n --user -u --me
      --jobs -j --array -r --limit --wide -w --start --format -o --noheader" ;;
    kubeconfig) opts="--server --token --token-file --namespace -n --name --certificate-authority
      --insecure-skip-tls-verify -o --output" ;;
    history | usage) opts="--user -u --namespace -n --queue -q --state -s --name -J --since -S
      --until -E --limit --period --by" ;;
    cancel) opts="--name -J --state -s --user -u --namespace -n --queue -q" ;;
    requeue) opts="--hold -H" ;;
    advise) opts="--namespace -n --user -u --headroom --limit" ;;
    logs) opts="--pod --tail-bytes --follow -f" ;;
    nodes)
      if [[ ${words[cword-1]} == @(drain|cordon|resume|reclaim|reset-credential) ]]; then
        COMPREPLY=($(compgen -W "$(sluice nodes 2>/dev/null | awk 'NR > 1 {print $1}')" -- "$cur"))
        return
      fi
      opts="drain cordon resume reclaim reset-credential --wide -w" ;;
    config) opts="get apply reload" ;;
    submit | check | plan) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [[ $cur != -* ]]; then
    case $cmd in
      cancel | hold | explain | logs) COMPREPLY=($(compgen -W "$(_sluice_ids)" -- "$cur")); return ;;
      release) COMPREPLY=($(compgen -W "$(_sluice_ids pending)" -- "$cur")); return ;;
      requeue) COMPREPLY=($(compgen -W "$(_sluice_ids running,succeeded,failed,cancelled)" -- "$cur")); return ;;
      sbatch) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
  fi
  COMPREPLY=($(compgen -W "$opts $common" -- "$cur"))
}
complete -F _sluice sluice
