# Sourced by the tool scripts: `apt_install NAME PACKAGE...` installs Debian packages quietly, through
# sudo when not root, and says so under the caller's NAME. Returns apt-get's failure for the caller
# to handle (the docker script degrades to skipped tests; the others stop).
apt_install() {
    local name=$1 sudo=""
    shift
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "$name: installing $*" >&2
    $sudo apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
