# bash completion for ncclscope (installed by `make install` as
# share/bash-completion/completions/ncclscope). Commands come from `ncclscope help` so this file
# never falls behind the binary; options from `ncclscope COMMAND --help` (lines starting with -).
_ncclscope() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]:-}
  if [ "$COMP_CWORD" -eq 1 ]; then
    local cmds
    cmds=$(ncclscope help 2>/dev/null | awk '/^  [a-z]/ {print $1}')
    COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
    return
  fi
  if [ "$cmd" = run ]; then
    # after `--`, complete the command to run
    local i
    for ((i = 2; i < COMP_CWORD; i++)); do
      [ "${COMP_WORDS[i]}" = -- ] && { COMPREPLY=($(compgen -c -- "$cur")); return; }
    done
  fi
  case $cur in
    -*)
      local opts
      opts=$(ncclscope "$cmd" --help 2>&1 | grep -oE -- '--?[a-zA-Z][a-zA-Z0-9-]*' | sort -u)
      COMPREPLY=($(compgen -W "$opts" -- "$cur"))
      ;;
    *)
      COMPREPLY=($(compgen -f -- "$cur"))
      ;;
  esac
}
complete -o filenames -F _ncclscope ncclscope
