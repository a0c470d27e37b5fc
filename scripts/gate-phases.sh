# Sourced by scripts/gate.sh, scripts/real-gate.sh and scripts/real-corpus.sh: each phase's wall time on
# stderr, and the exit status they end with.

status=0  # the first failure's exit status; the script ends with it once every phase has run
keep() {  # keep STATUS: remembers STATUS if it is the first failure
  [ "$1" -eq 0 ] || [ "$status" -ne 0 ] || status=$1
}

phase() {  # phase NAME COMMAND...: runs it and prints its wall time
  local t0 s=0
  t0=$(date +%s.%N)
  "${@:2}" || s=$?
  awk -v n="$1" -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "phase %-7s %.2f s\n", n, b - a }' >&2
  return "$s"
}

# audit ARGS...: `lenscheck audit` as a phase. Exit 0 PROCEED and 3 ABANDON are verdicts, not failures of
# the gate; any other exit is one (kept).
audit() {
  local s=0
  phase audit build/lenscheck audit "$@" || s=$?
  [ "$s" -eq 3 ] || keep "$s"
}
