#!/usr/bin/env bash
# Installs the webimage tool with its shell completions (bash, zsh, fish) and man page.
#
#   scripts/install.sh                      build (release) and install into ~/.local
#   scripts/install.sh --prefix /usr/local  another prefix (sudo for system folders)
#   scripts/install.sh --binary PATH        install an already built binary, no build
#
# Then put PREFIX/bin on PATH (the script says how when it is not).
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="${PREFIX:-$HOME/.local}"
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --binary) binary="$2"; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

scripts/bootstrap.sh
if [ -z "$binary" ]; then
    binary="$(scripts/build-webimage.sh)"
fi
[ -x "$binary" ] || { echo "install.sh: $binary is not an executable" >&2; exit 1; }

install -d "$prefix/bin" "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" \
    "$prefix/share/zsh/site-functions" "$prefix/share/fish/vendor_completions.d"
install -m 755 "$binary" "$prefix/bin/webimage"
"$binary" --generate-completion-script bash > "$prefix/share/bash-completion/completions/webimage"
"$binary" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_webimage"
"$binary" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/webimage.fish"
python3 scripts/manpage.py "$binary" > "$prefix/share/man/man1/webimage.1"

echo "installed $prefix/bin/webimage, its man page and bash, zsh and fish completions" >&2
case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "put it on PATH:  export PATH=\"$prefix/bin:\$PATH\"   (in ~/.bashrc or ~/.profile)" >&2 ;;
esac
