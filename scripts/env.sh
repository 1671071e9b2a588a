# Sourced by the scripts: puts cargo on PATH and moves to the repository root.
export PATH="$HOME/.cargo/bin:$PATH"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
