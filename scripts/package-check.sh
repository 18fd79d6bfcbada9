#!/usr/bin/env bash
# Checks a gpureap .deb without changing this machine: apt resolves its dependencies here
# (a simulation), dpkg installs it into a throwaway root whose database lists what this
# machine has installed, the installed program, man pages and bash completion work, removal
# leaves only the conffile and purging leaves nothing.
#   usage: scripts/package-check.sh gpureap_<version>_<arch>.deb
# Exit 0 passed, 1 a check failed, 2 usage, 77 cannot run here (not root and no fakeroot).
# With GPUREAP_NVML_LIBRARY (and the test double's FAKE_NVML_SCENARIO) set, the completion of
# `--gpu` is checked against the GPUs that library reports.
set -uo pipefail
deb=${1:-}
[ -f "$deb" ] || { echo "usage: $0 gpureap_<version>_<arch>.deb" >&2; exit 2; }
deb=$(realpath "$deb")
fail() { echo "package-check: FAIL: $*" >&2; exit 1; }
ok() { echo "package-check: ok: $*"; }

as_root=()
if [ "$(id -u)" != 0 ]; then
  command -v fakeroot >/dev/null || { echo "package-check: skipped: needs root or fakeroot"; exit 77; }
  as_root=(fakeroot)
fi

# The control file: name, version, architecture, and dependencies read from what it links.
field() { dpkg-deb --field "$deb" "$1"; }
version=$(field Version) arch=$(field Architecture) depends=$(field Depends)
[ "$(field Package)" = gpureap ] || fail "Package is '$(field Package)', not gpureap"
[ "$(basename "$deb")" = "gpureap_${version}_${arch}.deb" ] ||
  fail "file name $(basename "$deb") is not gpureap_${version}_${arch}.deb"
for lib in libc6 libstdc++6 libfmt9 libncursesw6 libtomlplusplus3 libcpp-httplib0.11; do
  [[ ", $depends," == *", $lib "* ]] || fail "Depends lacks $lib (what the binary links): $depends"
done
ok "gpureap_${version}_${arch}.deb, Depends: $depends"

# apt would install it here: every dependency is satisfiable. A simulation changes nothing,
# and apt keeps its package cache in memory instead of rewriting the one in /var/cache/apt.
sim=$(apt-get -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
  install --simulate --no-install-recommends "$deb" 2>&1) ||
  fail "apt-get install --simulate: $sim"
grep -q "^Inst gpureap " <<<"$sim" || fail "apt would not install gpureap: $sim"
ok "apt-get install --simulate ./$(basename "$deb")"

# The throwaway root: dpkg's database with this machine's package list (so Depends are
# checked against it), no files, no triggers, nothing of this machine's.
root=$(mktemp -d "${TMPDIR:-/tmp}/gpureap-package-check.XXXXXX")
trap 'rm -rf "$root"' EXIT
admin=$root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates" "$admin/triggers"
cp /var/lib/dpkg/status "$admin/status"
touch "$admin/available"
files_now() { (cd "$root" && find . -path ./var/lib/dpkg -prune -o -print | sort); }
before=$(files_now)
dpkg_root() {
  # What dpkg says is shown when it fails, without its warnings about the other packages'
  # file lists, which the throwaway root does not have.
  local out rc
  out=$("${as_root[@]}" dpkg --root="$root" --log=/dev/null "$@" 2>&1)
  rc=$?
  [ $rc = 0 ] || grep -v "files list file for package .* missing" <<<"$out" >&2
  return $rc
}
dpkg_root --install "$deb" || fail "dpkg --install into the throwaway root"
ok "installed into a throwaway root"

bin=$root/usr/bin/gpureap
[ -x "$bin" ] || fail "no /usr/bin/gpureap"
shown=$("$bin" --version) || fail "gpureap --version failed"
[ "$shown" = "gpureap $version" ] || fail "gpureap --version says '$shown', the package is $version"
ok "$shown"

unit=$root/usr/lib/systemd/system/gpureap.service
grep -qx "ExecStart=/usr/bin/gpureap daemon" "$unit" ||
  fail "the unit does not start /usr/bin/gpureap: $(grep ExecStart "$unit")"
conf=$root/etc/gpureap/config.toml
[ -f "$conf" ] || fail "no /etc/gpureap/config.toml"
dpkg-query --admindir="$admin" -W -f='${Conffiles}\n' gpureap | grep -q " /etc/gpureap/config.toml " ||
  fail "/etc/gpureap/config.toml is not a conffile"
"$bin" daemon --check-config "$conf" >/dev/null || fail "the installed config is not valid"
ok "systemd unit, conffile /etc/gpureap/config.toml (valid)"

# The program starts without the HTTP client's libraries (TLS above all): the commands that talk
# HTTP load its module from the package's library folder.
if readelf -d "$bin" | grep -q 'NEEDED.*\(httplib\|libssl\|libcrypto\)'; then
  fail "/usr/bin/gpureap links the HTTP client's libraries: $(readelf -d "$bin" | grep NEEDED)"
fi
[ -f "$root/usr/lib/gpureap/modules/gpureap-http.so" ] || fail "no /usr/lib/gpureap/modules/gpureap-http.so"
said=$("$bin" cluster --prometheus http://127.0.0.1:9 --timeout 2s 2>&1)
[[ "$said" == *"cannot reach Prometheus"* ]] ||
  fail "the installed gpureap cannot use its HTTP module: $said"
ok "the HTTP client is a module of its own, loaded when used"

# Every page is found by man and renders without a warning.
pages=0
for page in "$root"/usr/share/man/man1/*.1.gz; do
  name=$(basename "$page" .1.gz)
  found=$(MANPATH=$root/usr/share/man man -w "$name" 2>&1) || fail "man -w $name: $found"
  [ "$found" = "$page" ] || fail "man -w $name found $found"
  warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  [ -z "$warnings" ] || fail "man $name: $warnings"
  pages=$((pages + 1))
done
[ "$pages" -ge 10 ] || fail "only $pages man pages"
ok "man -w gpureap and $((pages - 1)) more pages, no warnings"

# bash completion, as bash-completion loads it, running the installed binary.
complete_bash() {
  PATH=$root/usr/bin:$PATH bash --norc --noprofile -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpureap
    printf "%s\n" "${COMPREPLY[@]}"' _ "$root/usr/share/bash-completion/completions/gpureap" "$@"
}
expect_completion() {
  local want=$1 got
  shift
  got=$(complete_bash "$@" | sort | tr '\n' ' ')
  [ "$got" = "$want " ] || fail "completing '$*': got '$got', want '$want'"
}
expect_completion "kill" gpureap ki
expect_completion "--no-daemon" gpureap ps --no-d
expect_completion "TERM TRAP TSTP TTIN TTOU" gpureap kill --signal T
expect_completion "no-such-process,leaked-memory" gpureap doctor --only no-such-process,lea
expect_completion "test" gpureap policy ""
if [ -n "${GPUREAP_NVML_LIBRARY:-}" ]; then
  want=$("$bin" list gpus | cut -f1 | sort | tr '\n' ' ')
  [ -n "$want" ] || fail "the NVML library given reports no GPU"
  expect_completion "${want% }" gpureap kill --gpu ""
fi
ok "bash completion: commands, options, signals, finding codes${GPUREAP_NVML_LIBRARY:+, GPU indices}"
[ -f "$root/usr/share/zsh/vendor-completions/_gpureap" ] || fail "no zsh completion"
[ -f "$root/usr/share/fish/vendor_completions.d/gpureap.fish" ] || fail "no fish completion"
if command -v zsh >/dev/null; then
  zsh -n "$root/usr/share/zsh/vendor-completions/_gpureap" || fail "zsh completion: syntax"
fi
if command -v fish >/dev/null; then
  fish --no-execute "$root/usr/share/fish/vendor_completions.d/gpureap.fish" ||
    fail "fish completion: syntax"
fi
[ -f "$root/usr/share/doc/gpureap/copyright" ] || fail "no /usr/share/doc/gpureap/copyright"

# Removal keeps only the conffile (Debian's rule); purging removes it too: nothing is left.
dpkg_root --remove gpureap || fail "dpkg --remove"
left=$(comm -13 <(echo "$before") <(files_now) | tr '\n' ' ')
[ "$left" = "./etc ./etc/gpureap ./etc/gpureap/config.toml " ] ||
  fail "after removal, left: $left (want only the conffile)"
dpkg_root --purge gpureap || fail "dpkg --purge"
left=$(comm -13 <(echo "$before") <(files_now) | tr '\n' ' ')
[ -z "$left" ] || fail "after purge, left: $left"
ok "removed (only the conffile kept), purged: no file left"
