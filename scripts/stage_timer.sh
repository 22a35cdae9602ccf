# Sourced by the scripts that print the time of each of their stages:
#   . scripts/stage_timer.sh   (starts the clock)
#   stage_done "release build" (prints "<script>: release build took N s" and restarts it)
stage_start=$(date +%s)
stage_done() {
  local now
  now=$(date +%s)
  echo "$(basename "$0"): $1 took $((now - stage_start)) s"
  stage_start=$now
}
