#!/usr/bin/env bash
# A webimage cluster on this machine: N `webimage serve` nodes on loopback ports behind nginx's
# shared cache (deploy/nginx/webimage.conf.template), routed by source.
#
#   scripts/cluster.sh up [--nodes 3] [--port 8080] [--dir DIR] [--detach] [-- SERVE_OPTIONS...]
#       Installs nginx when missing, starts the nodes (one key/salt: WEBIMAGE_KEY/WEBIMAGE_SALT,
#       else a new random pair, printed), then nginx, and prints the front URL. Runs until
#       Ctrl-C (or SIGTERM), then stops everything; with --detach it returns and `down` stops it.
#       More: --webimage BIN (default: builds .build/debug/webimage; --release builds and uses a
#       release binary), --cache-size 1g (nginx's cache), --fail-timeout 10 (seconds a failed
#       node is left out). SERVE_OPTIONS go to every node, e.g. -- --allow-private-networks.
#   scripts/cluster.sh down [--dir DIR]             stop the cluster started with that folder
#   scripts/cluster.sh node-start N [--dir DIR]     start node N again, on its port (after a crash)
#   scripts/cluster.sh config --listen HOST:PORT --node HOST:PORT... --run DIR
#       [--cache DIR] [--cache-size 1g] [--fail-timeout 10] [--format-negotiation]
#       print the nginx configuration for nodes you run yourself.
#
# DIR (default ${XDG_RUNTIME_DIR:-/tmp}/webimage-cluster) holds cluster.json (front URL, each
# node's URL, metrics URL and pid), the nodes' logs (nodeN/log) and nginx's files (nginx/).
set -euo pipefail
cd "$(dirname "$0")/.."
project=$(pwd)

die() {
    echo "cluster: $*" >&2
    exit 2
}

# --- config ---------------------------------------------------------------------------------

render_config() {
    local listen="" run="" cache="" cache_size="1g" fail_timeout="10" negotiation=0 nodes=()
    while [[ $# -gt 0 ]]; do
        case "$1" in
        --listen) listen="${2:?--listen needs HOST:PORT}"; shift 2 ;;
        --node) nodes+=("${2:?--node needs HOST:PORT}"); shift 2 ;;
        --run) run="${2:?--run needs a folder}"; shift 2 ;;
        --cache) cache="${2:?--cache needs a folder}"; shift 2 ;;
        --cache-size) cache_size="${2:?--cache-size needs a size such as 1g}"; shift 2 ;;
        --fail-timeout) fail_timeout="${2:?--fail-timeout needs seconds}"; shift 2 ;;
        --format-negotiation) negotiation=1; shift ;;
        *) die "config: unknown option '$1'" ;;
        esac
    done
    [[ -n "$listen" ]] || die "config: --listen HOST:PORT is required"
    [[ ${#nodes[@]} -gt 0 ]] || die "config: at least one --node HOST:PORT is required"
    [[ -n "$run" ]] || die "config: --run DIR (nginx's pid, logs and temporary files) is required"
    [[ "$fail_timeout" =~ ^[0-9]+$ ]] || die "config: --fail-timeout '$fail_timeout' is not a whole number of seconds"
    [[ "$cache_size" =~ ^[0-9]+[kKmMgG]?$ ]] || die "config: --cache-size '$cache_size' is not a size such as 512m or 1g"
    local node
    for node in "${nodes[@]}" "$listen"; do
        [[ "$node" =~ ^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):[0-9]+$ ]] || die "config: '$node' is not HOST:PORT"
    done
    cache="${cache:-$run/cache}"

    local user_line="" servers="" buckets
    # nginx started by root switches its workers to another user; keep the one who owns the folders.
    [[ $(id -u) -eq 0 ]] && user_line="user $(id -un) $(id -gn);"
    for node in "${nodes[@]}"; do
        servers+="        server $node max_fails=1 fail_timeout=${fail_timeout}s;"$'\n'
    done
    if [[ $negotiation -eq 1 ]]; then
        buckets='        default other;
        "~*image/avif(?![^,]*;\s*q=0(\.0*)?\s*(,|$))" avif;
        "~*image/webp(?![^,]*;\s*q=0(\.0*)?\s*(,|$))" webp;'
    else
        buckets='        default "";'
    fi
    local template
    template=$(<"$project/deploy/nginx/webimage.conf.template")
    template=${template//@USER@/$user_line}
    template=${template//@RUN@/$run}
    template=${template//@CACHE@/$cache}
    template=${template//@CACHE_SIZE@/$cache_size}
    template=${template//@LISTEN@/$listen}
    template=${template//@FAIL_TIMEOUT@/${fail_timeout} s}
    template=${template//@NODES@/${servers%$'\n'}}
    template=${template//@ACCEPT_BUCKETS@/$buckets}
    printf '%s\n' "$template"
}

# --- processes ------------------------------------------------------------------------------

# Closes every descriptor above 2 this script inherited (bash's own 255 aside), so the processes
# it leaves running never hold its caller's pipes open.
close_inherited_descriptors() {
    local fd
    for fd in /proc/$$/fd/*; do
        fd=${fd##*/}
        [[ "$fd" =~ ^[0-9]+$ && $fd -gt 2 && $fd -ne 255 ]] || continue
        eval "exec $fd>&-" 2>/dev/null || true
    done
}

alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

# Stops a pid: SIGTERM, up to 15 s for it to finish, then SIGKILL.
stop_pid() {
    local pid=$1 i
    alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
        alive "$pid" || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts node N from the command saved in DIR/nodeN/command, waits for its listening line and
# records its URL, metrics URL and pid.
start_node() {
    local n=$1 node="$dir/node$1" i
    local -a command
    eval "command=($(<"$node/command"))"
    : >"$node/stdout"
    setsid "${command[@]}" </dev/null >"$node/stdout" 2>>"$node/log" &
    echo $! >"$node/pid"
    for ((i = 0; i < 600; i++)); do
        if grep -q '^metrics on ' "$node/stdout" 2>/dev/null; then
            sed -n 's/^listening on //p' "$node/stdout" >"$node/url"
            sed -n 's/^metrics on //p' "$node/stdout" >"$node/metrics"
            return 0
        fi
        alive "$(<"$node/pid")" || { tail -5 "$node/log" >&2; die "node $n exited while starting (log: $node/log)"; }
        sleep 0.1
    done
    die "node $n did not print its listening line within 60 s (log: $node/log)"
}

write_state() {
    local front=$1 n first=1
    {
        printf '{"front":"%s","dir":"%s","nodes":[' "$front" "$dir"
        for ((n = 1; n <= nodes; n++)); do
            [[ $first -eq 1 ]] || printf ','
            first=0
            printf '{"url":"%s","metrics":"%s","pid":%s}' \
                "$(<"$dir/node$n/url")" "$(<"$dir/node$n/metrics")" "$(<"$dir/node$n/pid")"
        done
        printf ']}\n'
    } >"$dir/cluster.json.tmp"
    mv "$dir/cluster.json.tmp" "$dir/cluster.json"
}

down() {
    local pidfile
    [[ -d "$dir" ]] || { echo "cluster: nothing in $dir" >&2; return 0; }
    for pidfile in "$dir"/nginx/nginx.pid "$dir"/node*/pid; do
        [[ -f "$pidfile" ]] || continue
        stop_pid "$(<"$pidfile")"
        rm -f "$pidfile"
    done
    rm -f "$dir/cluster.json"
    echo "cluster: stopped (logs in $dir)" >&2
}

# --- up -------------------------------------------------------------------------------------

up() {
    local port=8080 detach=0 webimage="" release=0 cache_size="1g" fail_timeout=10 serve_options=()
    while [[ $# -gt 0 ]]; do
        case "$1" in
        --nodes) nodes="${2:?--nodes needs a count}"; shift 2 ;;
        --port) port="${2:?--port needs a port (0 picks a free one)}"; shift 2 ;;
        --detach) detach=1; shift ;;
        --webimage) webimage="${2:?--webimage needs a path}"; shift 2 ;;
        --release) release=1; shift ;;
        --cache-size) cache_size="${2:?--cache-size needs a size}"; shift 2 ;;
        --fail-timeout) fail_timeout="${2:?--fail-timeout needs seconds}"; shift 2 ;;
        --) shift; serve_options=("$@"); break ;;
        *) die "up: unknown option '$1' (serve's options go after --)" ;;
        esac
    done
    [[ "$nodes" =~ ^[1-9][0-9]?$ ]] || die "up: --nodes '$nodes' is not a count from 1 to 99"
    [[ "$port" =~ ^[0-9]+$ && "$port" -le 65535 ]] || die "up: --port '$port' is not a port number"
    if [[ -f "$dir/nginx/nginx.pid" ]] && alive "$(<"$dir/nginx/nginx.pid")"; then
        die "up: a cluster is already running from $dir (scripts/cluster.sh down --dir $dir)"
    fi

    if [[ "$port" -ne 0 ]] && port_open 127.0.0.1 "$port"; then
        die "up: 127.0.0.1:$port is taken (--port 0 picks a free one)"
    fi
    scripts/bootstrap.sh nginx
    if [[ -z "$webimage" ]]; then
        local configuration=debug
        [[ $release -eq 1 ]] && configuration=release
        swift build -c "$configuration" --product webimage >&2
        webimage="$(swift build -c "$configuration" --show-bin-path)/webimage"
    fi
    [[ -x "$webimage" ]] || die "up: --webimage '$webimage' is not an executable"
    webimage=$(cd "$(dirname "$webimage")" && pwd)/$(basename "$webimage")

    if [[ -z "${WEBIMAGE_KEY:-}" ]]; then
        WEBIMAGE_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
        WEBIMAGE_SALT=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
    fi
    [[ -n "${WEBIMAGE_SALT:-}" ]] || die "up: WEBIMAGE_KEY is set but WEBIMAGE_SALT is not"
    export WEBIMAGE_KEY WEBIMAGE_SALT

    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    rm -rf "$dir"/node* "$dir/nginx" "$dir/cluster.json"
    (umask 077 && printf 'WEBIMAGE_KEY=%s\nWEBIMAGE_SALT=%s\n' "$WEBIMAGE_KEY" "$WEBIMAGE_SALT" >"$dir/key.env")

    # Whatever fails from here stops what started.
    trap 'down' EXIT
    trap 'exit 0' INT TERM

    local n negotiation=() node_addresses=()
    for option in "${serve_options[@]}"; do
        [[ "$option" == "--format-negotiation" ]] && negotiation=(--format-negotiation)
    done
    for ((n = 1; n <= nodes; n++)); do
        mkdir -p "$dir/node$n/cache"
        printf '%q ' "$webimage" serve --bind 127.0.0.1:0 --metrics-bind 127.0.0.1:0 \
            --cache-dir "$dir/node$n/cache" "${serve_options[@]}" >"$dir/node$n/command"
        start_node "$n"
        # Later starts reuse the ports this one picked, so nginx's configuration stays right.
        local url metrics
        url=$(<"$dir/node$n/url")
        metrics=$(<"$dir/node$n/metrics")
        local address=${url#http://} metrics_address=${metrics#http://}
        metrics_address=${metrics_address%/metrics}
        printf '%q ' "$webimage" serve --bind "$address" --metrics-bind "$metrics_address" \
            --cache-dir "$dir/node$n/cache" "${serve_options[@]}" >"$dir/node$n/command"
        node_addresses+=(--node "$address")
    done

    [[ "$port" -ne 0 ]] || port=$(free_port)
    mkdir -p "$dir/nginx"
    render_config --listen "127.0.0.1:$port" --run "$dir/nginx" --cache-size "$cache_size" \
        --fail-timeout "$fail_timeout" "${negotiation[@]}" "${node_addresses[@]}" >"$dir/nginx/nginx.conf"
    nginx -t -q -e stderr -p "$dir/nginx/" -c "$dir/nginx/nginx.conf" ||
        die "up: nginx refused $dir/nginx/nginx.conf"
    setsid nginx -e "$dir/nginx/error.log" -p "$dir/nginx/" -c "$dir/nginx/nginx.conf" -g 'daemon off;' \
        </dev/null >>"$dir/nginx/error.log" 2>&1 &
    local nginx_pid=$! i
    for ((i = 0; i < 100; i++)); do
        port_open 127.0.0.1 "$port" && break
        alive "$nginx_pid" || die "up: nginx exited (log: $dir/nginx/error.log)"
        sleep 0.1
    done
    port_open 127.0.0.1 "$port" || die "up: nginx is not listening on 127.0.0.1:$port"

    local front="http://127.0.0.1:$port"
    write_state "$front"
    echo "front $front"
    echo "nodes $(for ((n = 1; n <= nodes; n++)); do printf '%s ' "$(<"$dir/node$n/url")"; done)"
    echo "key and salt in $dir/key.env (WEBIMAGE_KEY=$WEBIMAGE_KEY WEBIMAGE_SALT=$WEBIMAGE_SALT)"
    if [[ $detach -eq 1 ]]; then
        trap - EXIT INT TERM
        echo "stop with: scripts/cluster.sh down --dir $dir"
        return 0
    fi
    echo "Ctrl-C stops the cluster"
    while alive "$nginx_pid"; do sleep 1; done
    echo "cluster: nginx exited (log: $dir/nginx/error.log)" >&2
    exit 1
}

# --- main -----------------------------------------------------------------------------------

[[ $# -gt 0 ]] || die "usage: scripts/cluster.sh up|down|node-start N|config [options] (see the top of this file)"
command=$1
shift
dir="${XDG_RUNTIME_DIR:-/tmp}/webimage-cluster"
nodes=3
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --dir) dir="${2:?--dir needs a folder}"; shift 2 ;;
    --) args+=("$@"); break ;;
    *) args+=("$1"); shift ;;
    esac
done

[[ "$command" == "config" ]] || close_inherited_descriptors
case "$command" in
config) render_config "${args[@]}" ;;
up) up "${args[@]}" ;;
down) down ;;
node-start)
    [[ ${#args[@]} -eq 1 && "${args[0]}" =~ ^[0-9]+$ && -f "$dir/node${args[0]}/command" ]] ||
        die "node-start: name a node of the cluster in $dir (1, 2, …)"
    [[ -f "$dir/cluster.json" ]] || die "node-start: no cluster is running from $dir"
    stop_pid "$(cat "$dir/node${args[0]}/pid" 2>/dev/null || true)"
    set -a
    # shellcheck disable=SC1091
    source "$dir/key.env"
    set +a
    nodes=$(find "$dir" -maxdepth 1 -name 'node*' -type d | wc -l)
    start_node "${args[0]}"
    write_state "$(sed -n 's/^{"front":"\([^"]*\)".*/\1/p' "$dir/cluster.json")"
    echo "node ${args[0]} $(<"$dir/node${args[0]}/url")"
    ;;
*) die "unknown command '$command' (up, down, node-start or config)" ;;
esac
