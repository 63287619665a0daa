#!/usr/bin/env bash
# An emulated arm64 board for tpagent's arm64 tests: qemu-system-aarch64 -M virt -cpu max (TCG)
# booting Debian 12's arm64 kernel with a small busybox initramfs, reached only through TCP ports
# forwarded to 127.0.0.1. Boot it once per test run, then run commands on it one after another.
#
#   scripts/arm64-board.sh fetch CACHE_DIR
#       Installs the host packages it needs, only those missing (qemu-system-arm, gdb-multiarch,
#       gcc/g++-aarch64-linux-gnu, cpio, ...; `dpkg --add-architecture arm64` and `apt-get update`
#       when arm64 package lists are missing), then `apt-get download`s and `dpkg-deb -x`s the arm64
#       packages: busybox-static, libc6, libgcc-s1, libstdc++6 and gdbserver into CACHE_DIR/root
#       (the board's userland and gdb's sysroot; the .debs stay in CACHE_DIR/debs), and the kernel
#       package linux-image-arm64 depends on (linux-image-6.1.0-N-arm64): vmlinuz and the
#       virtio-net modules into CACHE_DIR/kernel. Skips what is there at the candidate version
#       (CACHE_DIR/root.stamp, kernel.stamp). Needs root or sudo for apt-get.
#   scripts/arm64-board.sh start CACHE_DIR PAYLOAD_DIR STATE_DIR
#       Builds the initramfs, or reuses CACHE_DIR/initramfs/initramfs-<content hash>.cpio.gz (the
#       four last used are kept): CACHE_DIR/root, the modules, scripts/arm64-board/{init,inittab,
#       ctl}, and everything in PAYLOAD_DIR copied to /payload on the board. Boots qemu as a
#       daemon and waits (ARM64_BOARD_BOOT_TIMEOUT) until the board answers on its control port.
#       Writes into STATE_DIR:
#         ports        one line per forwarded port, "NAME HOSTPORT BOARDPORT":
#                          control 40123 7000
#                          stub0 40124 2345
#                          stub1 40125 2346     ... stub3 (board ports 2345..2348)
#                      host ports: free ports on 127.0.0.1, chosen at each start.
#         qemu.pid, console.log (the board's serial console), qemu.log, qemu.cmdline,
#         initramfs.cpio.gz (link to the one booted), sysroot/ (for gdb's `set sysroot`:
#         lib, usr, bin -> CACHE_DIR/root, payload -> PAYLOAD_DIR: the same bytes the board runs).
#   scripts/arm64-board.sh run STATE_DIR 'COMMAND'      (COMMAND "-": read it from stdin)
#       Runs COMMAND with /bin/sh on the board (as root, cwd /payload, stdin /dev/null, stderr
#       merged into stdout), prints its output and exits with its exit status. 255 and a message
#       on stderr: the board could not be reached, or no answer within ARM64_BOARD_TIMEOUT (the
#       command itself is not killed). A background process must redirect its output, e.g.
#       `gdbserver 0.0.0.0:2345 /payload/prog >/tmp/gs.log 2>&1 &`; `run ... 'cat /tmp/gs.log'`.
#   scripts/arm64-board.sh spawn STATE_DIR NAME 'COMMAND' [PATTERN]
#       Starts COMMAND in the background on the board (output in /tmp/NAME.log, its pid in
#       /tmp/NAME.pid), waits until the log contains PATTERN (default 'Listening on port'; ''
#       for no wait) and prints the log. Exits 1, printing the log, if COMMAND ends first or
#       PATTERN does not come within ARM64_BOARD_TIMEOUT. E.g.
#       spawn STATE_DIR gs 'gdbserver 0.0.0.0:2345 /payload/prog'
#   scripts/arm64-board.sh port STATE_DIR NAME      prints the host port forwarded as NAME
#   scripts/arm64-board.sh stop STATE_DIR           stops qemu (SIGTERM, then SIGKILL)
#
# Environment: ARM64_BOARD_CPU (default max,pauth-impdef=on: every feature of max, with QEMU's
# cheap pointer-authentication hash instead of emulated QARMA5, which halves boot and fork/exec
# times), ARM64_BOARD_SMP (vCPUs, default 2), ARM64_BOARD_MEM (MiB, default 1024),
# ARM64_BOARD_STUB_PORTS (default 4), ARM64_BOARD_BOOT_TIMEOUT (s, default 120),
# ARM64_BOARD_TIMEOUT (s per run/spawn, default 120), ARM64_BOARD_APPEND (more kernel command
# line, e.g. loglevel=7), ARM64_BOARD_OWNER_PID (start: stop the board when that process ends).
#
# Control protocol (what `run` speaks; a harness may speak it directly): connect to 127.0.0.1:
# <control host port>, send "NONCE LENGTH\n" and LENGTH bytes of shell script. NONCE: [0-9A-Za-z_-]+
# that cannot occur in the output (e.g. 32 random hex digits). The board runs the script as
# above and sends its output followed by "\nNONCE STATUS\n": everything before that last "\n"
# is the output, byte for byte. One request per connection; connections are served
# concurrently. A connection closed without that trailer means "not ready" (qemu's user network
# accepts connections to forwarded ports and drops them when nothing listens on the board).
#
# Networking: qemu user networking with restrict=on: the board reaches nothing, the host reaches
# the board only through the forwarded ports. The board is 10.0.2.15 and sees connections from
# 10.0.2.2, so a stub on it must listen on 0.0.0.0 (tpagent 0.0.0.0:2345 ..., gdbserver
# 0.0.0.0:2345 ...). gdb-multiarch on the host: `set sysroot STATE_DIR/sysroot`, `target
# remote 127.0.0.1:<stub host port>`; `set trust-readonly-sections on` lets it unwind (and find
# locals) in trace frames, which hold no code bytes.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
board_files="$script_dir/arm64-board"
control_board_port=7000
stub_board_ports=()
for ((i = 0; i < ${ARM64_BOARD_STUB_PORTS:-4}; i++)); do stub_board_ports+=($((2345 + i))); done
# The board's userland: unpacked together into CACHE_DIR/root.
user_packages=(busybox-static libc6 libgcc-s1 libstdc++6 gdbserver)
# Kernel modules for virtio-net over virtio-mmio, in insmod order.
modules=(drivers/virtio/virtio_mmio net/core/failover drivers/net/net_failover drivers/net/virtio_net)

die() { echo "arm64-board: $*" >&2; exit 1; }
note() { echo "arm64-board: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
apt_opts=(-o DPkg::Lock::Timeout=600 -o APT::Sandbox::User=root)

# ---------------------------------------------------------------------------------------- fetch
install_host_packages() {
  local packages=(qemu-system-arm gdb-multiarch gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
                  cpio gzip xz-utils python3)
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  local need_update=0
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    as_root dpkg --add-architecture arm64
    need_update=1
  fi
  compgen -G '/var/lib/apt/lists/*_binary-arm64_Packages*' >/dev/null || need_update=1
  ((${#missing[@]})) && need_update=1
  if ((need_update)); then
    note "apt-get update"
    as_root apt-get "${apt_opts[@]}" update -qq
  fi
  if ((${#missing[@]})); then
    note "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive as_root apt-get "${apt_opts[@]}" install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

candidate_versions() {  # PKG... -> "PKG VERSION" per arm64 package that has a candidate
  local args=() p
  for p in "$@"; do args+=("$p:arm64"); done
  apt-cache policy "${args[@]}" 2>/dev/null | awk '
    /^[^ ].*:$/ { name = $1; sub(/:arm64:$/, "", name); sub(/:$/, "", name) }
    /^  Candidate:/ { if ($2 != "(none)") print name, $2 }'
}

kernel_package() {  # the versioned kernel package linux-image-arm64 depends on
  apt-cache depends --no-recommends --no-suggests linux-image-arm64:arm64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^: ]*\).*/\1/p' | head -n1
}

# download PKG VERSION: sets $deb to the .deb in $cache/debs, downloading it unless present. When
# the download fails (package lists older than the mirror), updates the lists once and restarts.
download() {
  local pkg="$1" ver="$2"
  deb="$cache/debs/${pkg}_${ver//:/%3a}_arm64.deb"
  [ -s "$deb" ] && return
  note "downloading $pkg:arm64 $ver"
  if ! (cd "$cache/debs" && apt-get "${apt_opts[@]}" download -qq "$pkg:arm64=$ver" >/dev/null) ||
     [ ! -s "$deb" ]; then
    [ -z "${ARM64_BOARD_FETCH_RETRY:-}" ] || die "apt-get download $pkg:arm64=$ver failed"
    note "download failed: apt-get update, then fetch again"
    as_root apt-get "${apt_opts[@]}" update -qq
    ARM64_BOARD_FETCH_RETRY=1 exec bash "${BASH_SOURCE[0]}" fetch "$cache"
  fi
}

cmd_fetch() {
  [ $# -eq 1 ] || die "usage: $0 fetch CACHE_DIR"
  mkdir -p "$1"
  cache="$(cd "$1" && pwd)"
  install_host_packages
  mkdir -p "$cache/debs"

  local kpkg
  kpkg="$(kernel_package)"
  [ -n "$kpkg" ] || die "cannot resolve the kernel package linux-image-arm64:arm64 depends on"
  local -A version=()
  local p v
  while read -r p v; do version[$p]="$v"; done < <(candidate_versions "${user_packages[@]}" "$kpkg")
  for p in "${user_packages[@]}" "$kpkg"; do
    [ -n "${version[$p]:-}" ] || die "no candidate for $p:arm64 (apt-get update?)"
  done

  # Userland: unpack all packages into one tree; redo it when any version changed.
  local want=""
  for p in "${user_packages[@]}"; do want+="$p ${version[$p]}"$'\n'; done
  want="${want%$'\n'}"
  if [ "$(cat "$cache/root.stamp" 2>/dev/null)" != "$want" ]; then
    local debs=()
    while read -r p v; do download "$p" "$v"; debs+=("$deb"); done <<<"$want"
    rm -rf "$cache/root" "$cache/root.stamp"
    mkdir -p "$cache/root"
    local d
    for d in "${debs[@]}"; do dpkg-deb -x "$d" "$cache/root"; done
    printf '%s' "$want" >"$cache/root.stamp"
    note "unpacked ${user_packages[*]} into $cache/root"
  fi

  # Kernel: vmlinuz, and the modules the board loads (decompressed), from the versioned package.
  local kver="${version[$kpkg]}"
  want="$kpkg $kver"
  if [ "$(cat "$cache/kernel.stamp" 2>/dev/null)" != "$want" ]; then
    download "$kpkg" "$kver"
    rm -rf "$cache/kernel" "$cache/kernel.stamp"
    mkdir -p "$cache/kernel"
    local patterns=('./boot/vmlinuz-*') m
    for m in "${modules[@]}"; do patterns+=("./lib/modules/*/kernel/$m.ko*"); done
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$cache/kernel" --wildcards "${patterns[@]}"
    local f
    while IFS= read -r -d '' f; do
      case "$f" in
        *.xz) xz -d "$f" ;;
        *.zst) zstd -q -d --rm "$f" ;;
        *.gz) gzip -d "$f" ;;
      esac
    done < <(find "$cache/kernel/lib/modules" -name '*.ko.*' -print0)
    for m in "${modules[@]}"; do
      compgen -G "$cache/kernel/lib/modules/*/kernel/$m.ko" >/dev/null ||
        die "module $m missing from $deb"
    done
    printf '%s' "$want" >"$cache/kernel.stamp"
    rm -f "$deb"  # 60 MB, and kernel.stamp says what was extracted
    note "unpacked $kpkg $kver into $cache/kernel"
  fi
  # Old downloads of other versions are no longer needed.
  local keep
  keep="$(cat "$cache/root.stamp"; echo; cat "$cache/kernel.stamp")"
  for d in "$cache"/debs/*.deb; do
    [ -e "$d" ] || continue
    p="$(basename "$d")"; p="${p%%_*}"
    v="$(basename "$d" _arm64.deb)"; v="${v#*_}"; v="${v//%3a/:}"
    grep -qxF "$p $v" <<<"$keep" || rm -f "$d"
  done
}

# ---------------------------------------------------------------------------------------- start
build_initramfs() {  # -> path of the cached initramfs for $cache, $payload (prints it)
  local dir="$cache/initramfs" stage kver
  mkdir -p "$dir"
  find "$dir" -maxdepth 1 -name 'stage.*' -mmin +30 -exec rm -rf {} +  # left by a killed start
  stage="$(mktemp -d "$dir/stage.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf '$stage'" EXIT  # build_initramfs runs in a subshell
  kver="$(basename "$(compgen -G "$cache/kernel/lib/modules/*" | head -n1)")"
  # Userland without documentation and iconv modules.
  tar -C "$cache/root" --exclude=./usr/share --exclude='./usr/lib/*/gconv' -cf - . |
    tar -C "$stage" -xf -
  local m
  for m in "${modules[@]}"; do
    mkdir -p "$stage/lib/modules/$kver/kernel/$(dirname "$m")"
    cp "$cache/kernel/lib/modules/$kver/kernel/$m.ko" "$stage/lib/modules/$kver/kernel/$m.ko"
  done
  mkdir -p "$stage/etc/board" "$stage/payload" "$stage/tmp" "$stage/root"
  printf '%s\n' "${modules[@]}" >"$stage/etc/board/modules"
  ln -sf busybox "$stage/bin/sh"  # for /init's #!; init links the other applets at boot
  install -m 755 "$board_files/init" "$stage/init"
  install -m 755 "$board_files/ctl" "$stage/etc/board/ctl"
  sed "s/CONTROL_PORT/$control_board_port/g" "$board_files/inittab" >"$stage/etc/inittab"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
  printf 'root:x:0:\n' >"$stage/etc/group"
  printf '127.0.0.1 localhost\n10.0.2.15 arm64-board\n' >"$stage/etc/hosts"
  cp -a "$payload/." "$stage/payload/"
  chmod 1777 "$stage/tmp"
  # Content hash of the tree: names, types, modes, link targets and file contents.
  local hash
  hash="$(cd "$stage" && {
    find . -printf '%p %y %m %l\n' | LC_ALL=C sort
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum
  } | sha256sum | cut -c1-16)"
  local out="$dir/initramfs-$hash.cpio.gz"
  if [ ! -s "$out" ]; then
    (cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
      cpio --quiet -o -H newc -R 0:0 --reproducible | gzip -6 -n) >"$stage.cpio.gz"
    mv "$stage.cpio.gz" "$out"
    note "built $out ($(du -k "$out" | cut -f1) KiB)"
  else
    touch "$out"
  fi
  # Keep the four most recently used.
  # shellcheck disable=SC2012  # the names are ours: initramfs-<hex>.cpio.gz
  ls -1t "$dir"/initramfs-*.cpio.gz | tail -n +5 | xargs -r rm -f
  echo "$out"
}

free_ports() {  # N -> N distinct free TCP ports on 127.0.0.1
  python3 -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

qemu_alive() {  # STATE_DIR -> whether the qemu recorded there runs
  local pid
  pid="$(cat "$1/qemu.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && grep -qa "qemu-system-aarch64" "/proc/$pid/cmdline" 2>/dev/null &&
    grep -qaF "$1/console.log" "/proc/$pid/cmdline" 2>/dev/null
}

cmd_start() {
  [ $# -eq 3 ] || die "usage: $0 start CACHE_DIR PAYLOAD_DIR STATE_DIR"
  cache="$(cd "$1" && pwd)" || die "no cache dir $1 (run fetch first)"
  payload="$(cd "$2" && pwd)" || die "no payload dir $2"
  mkdir -p "$3"
  local state
  state="$(cd "$3" && pwd)"
  if ! [ -s "$cache/root.stamp" ] || ! [ -s "$cache/kernel.stamp" ]; then
    die "run $0 fetch $1 first"
  fi
  qemu_alive "$state" && die "a board already runs in $state (pid $(cat "$state/qemu.pid"))"
  command -v qemu-system-aarch64 >/dev/null || die "qemu-system-aarch64 missing (run fetch)"

  local t0=${EPOCHREALTIME/,/.} initramfs kernel
  initramfs="$(build_initramfs)"
  kernel="$(compgen -G "$cache/kernel/boot/vmlinuz-*" | head -n1)"
  ln -sfn "$initramfs" "$state/initramfs.cpio.gz"
  # gdb's sysroot: what the board runs, at the paths it runs it from.
  rm -rf "$state/sysroot"
  mkdir -p "$state/sysroot"
  ln -s "$cache/root/lib" "$state/sysroot/lib"
  ln -s "$cache/root/usr" "$state/sysroot/usr"
  ln -s "$cache/root/bin" "$state/sysroot/bin"
  ln -s "$payload" "$state/sysroot/payload"

  local attempt ports=() fwd names
  for attempt in 1 2 3; do
    read -r -a ports <<<"$(free_ports $((1 + ${#stub_board_ports[@]})))"
    fwd="hostfwd=tcp:127.0.0.1:${ports[0]}-:$control_board_port"
    names="control ${ports[0]} $control_board_port"$'\n'
    local i
    for i in "${!stub_board_ports[@]}"; do
      fwd+=",hostfwd=tcp:127.0.0.1:${ports[i + 1]}-:${stub_board_ports[i]}"
      names+="stub$i ${ports[i + 1]} ${stub_board_ports[i]}"$'\n'
    done
    # shellcheck disable=SC2054  # the commas are qemu's
    local qemu=(qemu-system-aarch64 -M virt -cpu "${ARM64_BOARD_CPU:-max,pauth-impdef=on}"
      -smp "${ARM64_BOARD_SMP:-2}" -m "${ARM64_BOARD_MEM:-1024}" -accel tcg
      -nodefaults -no-user-config -no-reboot -display none -monitor none
      -serial "file:$state/console.log"
      -kernel "$kernel" -initrd "$initramfs"
      -append "console=ttyAMA0 rdinit=/init panic=-1 quiet ${ARM64_BOARD_APPEND:-}"
      -netdev "user,id=net0,restrict=on,$fwd" -device virtio-net-device,netdev=net0
      -pidfile "$state/qemu.pid" -daemonize)
    printf '%q ' "${qemu[@]}" >"$state/qemu.cmdline"
    echo >>"$state/qemu.cmdline"
    rm -f "$state/qemu.pid" "$state/console.log" "$state/ports"
    if "${qemu[@]}" >"$state/qemu.log" 2>&1; then
      break
    fi
    grep -q "host forwarding" "$state/qemu.log" && [ $attempt -lt 3 ] && continue  # port taken
    cat "$state/qemu.log" >&2
    die "qemu failed to start"
  done
  printf '%s' "$names" >"$state/ports"
  if [ -n "${ARM64_BOARD_OWNER_PID:-}" ]; then  # stop the board when its owner goes away
    local qpid owner="$ARM64_BOARD_OWNER_PID"
    qpid="$(cat "$state/qemu.pid")"
    (while kill -0 "$owner" 2>/dev/null && kill -0 "$qpid" 2>/dev/null; do sleep 2; done
     qemu_alive "$state" && kill "$qpid") </dev/null >/dev/null 2>&1 &
    disown
  fi

  local t1=${EPOCHREALTIME/,/.} deadline=$((SECONDS + ${ARM64_BOARD_BOOT_TIMEOUT:-120})) phase=console
  # shellcheck disable=SC2064
  trap "cmd_stop '$state'; exit 130" INT TERM  # qemu is a daemon: don't leave it behind
  # First the console's "ready" line (connecting earlier may send a SYN the board never sees,
  # and TCP retries it only seconds later), then a round trip on the control port.
  while :; do
    if [ $phase = console ]; then
      grep -q "^arm64-board: ready" "$state/console.log" 2>/dev/null && phase=control && continue
    elif ARM64_BOARD_TIMEOUT=3 ARM64_BOARD_QUIET=1 cmd_run "$state" true >/dev/null 2>&1; then
      break
    fi
    if ! qemu_alive "$state"; then
      tail -n 30 "$state/console.log" "$state/qemu.log" >&2 || true
      die "qemu exited while booting"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 30 "$state/console.log" >&2 || true
      cmd_stop "$state"
      die "board not ready after ${ARM64_BOARD_BOOT_TIMEOUT:-120} s"
    fi
    sleep 0.2
  done
  trap - INT TERM
  local t2=${EPOCHREALTIME/,/.}
  note "$(awk -v a="$t0" -v b="$t1" -v c="$t2" \
    'BEGIN { printf "initramfs %.1f s, boot to ready %.1f s", b - a, c - b }')"
}

# ------------------------------------------------------------------------------ run/spawn/stop
cmd_run() {
  [ $# -eq 2 ] || die "usage: $0 run STATE_DIR 'COMMAND'   (COMMAND - reads it from stdin)"
  local state="$1" command="$2" port
  [ "$command" = "-" ] && command="$(cat)"
  port="$(awk '$1 == "control" { print $2 }' "$state/ports" 2>/dev/null)"
  [ -n "$port" ] || { echo "arm64-board: no board in $state" >&2; return 255; }
  python3 -c '
import os, socket, sys, time
port, command, timeout = int(sys.argv[1]), sys.argv[2].encode(), float(sys.argv[3])
quiet = os.environ.get("ARM64_BOARD_QUIET")
def fail(msg):
    if not quiet: print("arm64-board: " + msg, file=sys.stderr)
    sys.exit(255)
nonce = os.urandom(16).hex().encode()
deadline = time.monotonic() + timeout
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(b"%s %d\n" % (nonce, len(command)) + command)
    data = b""
    while True:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = s.recv(65536)
        if not chunk: break
        data += chunk
        i = data.rfind(b"\n" + nonce + b" ")
        if i >= 0 and data.endswith(b"\n"):
            status = int(data[i + len(nonce) + 2:-1])
            sys.stdout.buffer.write(data[:i])
            sys.stdout.flush()
            sys.exit(status)
except socket.timeout:
    fail("no answer from the board within %g s" % timeout)
except OSError as e:
    fail("control connection: %s" % e)
sys.stdout.buffer.write(data)
fail("the board closed the control connection without an exit status")
' "$port" "$command" "${ARM64_BOARD_TIMEOUT:-120}"
}

shq() { local s="${1//\'/\'\\\'\'}"; printf "'%s'" "$s"; }

cmd_spawn() {
  [ $# -eq 3 ] || [ $# -eq 4 ] || die "usage: $0 spawn STATE_DIR NAME 'COMMAND' [PATTERN]"
  local state="$1" name="$2" command="$3" pattern="${4-Listening on port}"
  case "$name" in '' | *[!A-Za-z0-9_.-]*) die "bad NAME $name" ;; esac
  # The board gives up one second before `run` would (times in 1/100 s from /proc/uptime).
  local limit=$(( (${ARM64_BOARD_TIMEOUT:-120} - 1) * 100 ))
  cmd_run "$state" "log=/tmp/$name.log pattern=$(shq "$pattern")
: >\"\$log\"
{
$command
} </dev/null >>\"\$log\" 2>&1 &
pid=\$!
echo \$pid >/tmp/$name.pid
now() { read -r up _ </proc/uptime; echo \$((\${up%.*}\${up#*.})); }
end=\$((\$(now) + $limit))
while [ -n \"\$pattern\" ] && ! grep -qF -- \"\$pattern\" \"\$log\"; do
  if ! [ -e /proc/\$pid ] || grep -q '^State:[[:space:]]*Z' /proc/\$pid/status 2>/dev/null; then
    grep -qF -- \"\$pattern\" \"\$log\" && break
    cat \"\$log\"; echo \"arm64-board: $name (pid \$pid) exited\"; exit 1
  fi
  [ \$(now) -lt \$end ] || { cat \"\$log\"; echo \"arm64-board: no '\$pattern' from $name\"; exit 1; }
  usleep 50000
done
cat \"\$log\""
}

cmd_port() {
  [ $# -eq 2 ] || die "usage: $0 port STATE_DIR NAME"
  awk -v n="$2" '$1 == n { print $2; found = 1 } END { exit !found }' "$1/ports" ||
    die "no port $2 in $1/ports"
}

cmd_stop() {
  [ $# -eq 1 ] || die "usage: $0 stop STATE_DIR"
  local state pid i
  state="$(cd "$1" && pwd)" || die "no state dir $1"
  if qemu_alive "$state"; then
    pid="$(cat "$state/qemu.pid")"
    kill "$pid" 2>/dev/null || true
    for i in $(seq 50); do [ -e "/proc/$pid" ] || break; sleep 0.2; done
    if [ -e "/proc/$pid" ]; then kill -9 "$pid" 2>/dev/null || true; fi
  fi
  rm -f "$state/qemu.pid" "$state/ports"
}

main() {
  local cmd="${1:-}"
  shift || true
  case "$cmd" in
    fetch) cmd_fetch "$@" ;;
    start) cmd_start "$@" ;;
    run) cmd_run "$@" ;;
    spawn) cmd_spawn "$@" ;;
    port) cmd_port "$@" ;;
    stop) cmd_stop "$@" ;;
    *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
  esac
}
main "$@"
