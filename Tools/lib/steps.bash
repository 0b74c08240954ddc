# Sourced by Tools/test and Tools/release-check: `step COMMAND…` runs a command and keeps its time;
# at exit, also when a step failed, the finished steps' times are printed on stderr under the
# name given to `steps_begin NAME`, so a slow or failing run says where its time went.
took=()
step() {
    local start=$SECONDS
    "$@"
    took+=("$(printf '%5d s  %s' $((SECONDS - start)) "$*")")
}
steps_summary() {
    local rc=$?
    [ -n "${steps_on_exit:-}" ] && $steps_on_exit
    if ((${#took[@]})); then
        local line
        for line in "steps that finished (${SECONDS} s in all):" "${took[@]}"; do echo "$steps_name: $line" >&2; done
    fi
    return $rc
}
# steps_begin NAME [FUNCTION]: FUNCTION, if given, runs first at exit (e.g. to stop background work).
steps_begin() {
    steps_name="$1" steps_on_exit="${2:-}"
    trap steps_summary EXIT
}
