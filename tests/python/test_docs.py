"""Every fenced code block in README.md and docs/*.md runs as written.

A block's language says what happens to it; a marker comment on the line just
before the fence (invisible when the page is rendered) changes that:

    <!-- doc-test: skip REASON -->      not run (a whole build, an install); REASON is required
    <!-- doc-test: gpu -->              run only where torch sees a CUDA GPU
    <!-- doc-test: display -->          run only where a display exists ($DISPLAY)
    <!-- doc-test: needs PATH -->        run only where PATH (from the repository root) exists
    <!-- doc-test: excerpt FILE -->     cpp: every line other than "..." is in FILE, in order
    <!-- doc-test: program -->          cpp: #includes on top, the rest as main()'s body; built
                                        against the engine libraries of a build folder and run

python blocks of one page share a namespace and run in order, as a reader
pasting them into one session would; sh blocks run under bash -euo pipefail.
Both run in a scratch folder that links the repository's top-level entries, so
relative paths work and outputs land outside the tree. text blocks are prose
(diagrams, output). A block without a language, or a cpp block without a
marker, fails: each new block must say how it is checked.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional

import pytest

from conftest import cuda_available

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(\S+)\s*(.*?)\s*-->\s*$")
DIRECTIVES = ("skip", "gpu", "display", "needs", "excerpt", "program")


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    directive: Optional[str] = None
    arg: str = ""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def parse(page: str, root: str = ROOT) -> List[Block]:
    """The fenced blocks of one page (a path from ``root``), with the marker before each."""
    lines = open(os.path.join(root, page), encoding="utf-8").read().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = len(m.group(1)), m.group(2), i
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        block = Block(page, start + 1, lang, "\n".join(body) + "\n")
        marker = MARKER.match(lines[start - 1]) if start else None
        if marker:
            block.directive, block.arg = marker.group(1), marker.group(2)
        blocks.append(block)
        i += 1
    return blocks


ALL = [b for page in PAGES for b in parse(page)]


def scratch(tmp_path) -> str:
    """A folder linking every top-level entry of the repository."""
    for name in os.listdir(ROOT):
        if name != ".git":
            os.symlink(os.path.join(ROOT, name), tmp_path / name)
    return str(tmp_path)


def environment() -> Dict[str, str]:
    """This interpreter's bin folder first, so `python` and `orrery` are the tested ones."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def skip_reason(block: Block) -> Optional[str]:
    if block.directive == "skip":
        return f"not run: {block.arg}"
    if block.directive == "gpu" and not cuda_available():
        return "needs a CUDA GPU"
    if block.directive == "display" and not os.environ.get("DISPLAY"):
        return "needs a display"
    if block.directive == "needs" and not os.path.exists(os.path.join(ROOT, block.arg)):
        return f"needs {block.arg} (build it first, e.g. ./tools/build.sh release)"
    return None


def check_excerpt(block: Block) -> None:
    """Each line of the block other than '...' is in the file, in order; spaces,
    line breaks and comments are ignored, so a reflowed line still matches."""
    path = os.path.join(ROOT, block.arg)
    assert os.path.exists(path), f"{block.id}: excerpt of {block.arg}, which does not exist"

    def squash(s: str) -> str:
        return re.sub(r"\s+", "", re.sub(r"//[^\n]*|/\*.*?\*/", "", s, flags=re.S))

    source, at = squash(open(path, encoding="utf-8").read()), 0
    for line in block.code.splitlines():
        want = squash(line)
        if not want or want == "...":
            continue
        found = source.find(want, at)
        assert found >= 0, f"{block.id}: {line.strip()!r} is not in {block.arg} (in this order)"
        at = found + len(want)


def engine_build() -> Optional[str]:
    """A build folder holding the engine's static libraries (tools/build.sh release, or pip's)."""
    for d in [os.path.join(ROOT, "build", "release")] + sorted(glob.glob(os.path.join(ROOT, "build", "python", "*"))):
        if glob.glob(os.path.join(d, "engine", "liborrery_engine*.a")):
            return d
    return None


def build_program(block: Block, tmp_path) -> str:
    """Compiles a cpp block as a program against a build folder's libraries; returns the executable."""
    build = engine_build()
    if build is None:
        pytest.skip("needs a C++ build folder with the engine libraries (./tools/build.sh release or pip install .)")
    includes = [ln for ln in block.code.splitlines() if ln.startswith("#include")]
    body = [ln for ln in block.code.splitlines() if not ln.startswith("#include")]
    src = tmp_path / "program.cpp"
    src.write_text("\n".join(includes) + "\n#include <cstdio>\nint main() {\n" + "\n".join(body)
                   + '\nstd::puts("doc-test: ok");\nreturn 0;\n}\n')
    libs = sorted(glob.glob(os.path.join(build, "**", "liborrery_*.a"), recursive=True))
    libs = [lib for lib in libs if "/tests/" not in lib and "/bench/" not in lib and "render" not in lib]
    exe = str(tmp_path / "program")
    cxx = os.environ.get("CXX", "c++")
    cache = os.path.join(build, "CMakeCache.txt")
    validate = os.path.exists(cache) and "ORRERY_VALIDATE:BOOL=ON" in open(cache, encoding="utf-8").read()
    cmd = [cxx, "-std=c++20", "-O1", *(["-DORRERY_VALIDATE"] if validate else []), "-I", ROOT, str(src), "-o", exe,
           "-Wl,--start-group", *libs,
           "-Wl,--end-group", "-lz", "-ldl", "-pthread"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{block.id} does not compile:\n{' '.join(cmd)}\n{out.stderr[-4000:]}"
    return exe


def run_page_python(page: str, blocks: List[Block], tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(scratch(tmp_path))
    namespace: Dict[str, object] = {"__name__": "__doc_test__"}
    for block in blocks:
        reason = skip_reason(block)
        if reason:
            continue  # later blocks of the page may not need it; if they do, they fail by name
        try:
            exec(compile(block.code, block.id, "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{block.id} raised {type(e).__name__}: {e}\n---\n{block.code}") from e
    for value in list(namespace.values()):  # release simulators the page made
        close = getattr(value, "close", None)
        if type(value).__module__.startswith("orrery") and callable(close):
            close()


def test_every_block_says_how_it_is_checked():
    bad = []
    for b in ALL:
        if b.directive is not None and b.directive not in DIRECTIVES:
            bad.append(f"{b.id}: unknown marker 'doc-test: {b.directive}'; expected one of {DIRECTIVES}")
        elif b.directive == "skip" and not b.arg:
            bad.append(f"{b.id}: 'doc-test: skip' needs a reason")
        elif b.lang not in ("python", "sh", "cpp", "text"):
            bad.append(f"{b.id}: block language {b.lang!r}; expected python, sh, cpp or text")
        elif b.lang == "cpp" and b.directive not in ("excerpt", "program", "skip"):
            bad.append(f"{b.id}: a cpp block needs 'doc-test: excerpt FILE' or 'doc-test: program'")
    assert not bad, "\n".join(bad)


def test_the_runner_finds_blocks_and_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("x\n<!-- doc-test: skip it installs things -->\n```sh\npip install .\n```\n\n"
                    "```python\nx = 1\n```\n")
    blocks = parse("page.md", root=str(tmp_path))
    assert [(b.lang, b.directive, b.arg, b.code) for b in blocks] == [
        ("sh", "skip", "it installs things", "pip install .\n"), ("python", None, "", "x = 1\n")]


def test_excerpt_check_catches_a_line_that_is_not_in_the_file():
    ok = Block("x.md", 1, "cpp", "namespace orrery {\n...\nvoid register_builtin_envs() {\n", "excerpt", "envs/registry.cpp")
    check_excerpt(ok)
    rotten = Block("x.md", 1, "cpp", "void register_builtin_envs_renamed() {\n", "excerpt", "envs/registry.cpp")
    with pytest.raises(AssertionError, match="is not in envs/registry.cpp"):
        check_excerpt(rotten)


@pytest.mark.parametrize("page", sorted({b.page for b in ALL if b.lang == "python"}))
def test_python_blocks_run(page, tmp_path, monkeypatch):
    run_page_python(page, [b for b in ALL if b.page == page and b.lang == "python"], tmp_path, monkeypatch)


@pytest.mark.parametrize("block", [b for b in ALL if b.lang == "sh"], ids=lambda b: b.id)
def test_shell_blocks_run(block, tmp_path):
    reason = skip_reason(block)
    if reason:
        pytest.skip(reason)
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=scratch(tmp_path), env=environment(),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{block.id} exited {out.returncode}:\n{block.code}\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"


@pytest.mark.parametrize("block", [b for b in ALL if b.lang == "cpp"], ids=lambda b: b.id)
def test_cpp_blocks_hold(block, tmp_path):
    reason = skip_reason(block)
    if reason:
        pytest.skip(reason)
    if block.directive == "excerpt":
        check_excerpt(block)
        return
    exe = build_program(block, tmp_path)
    out = subprocess.run([exe], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "doc-test: ok" in out.stdout, f"{block.id} failed:\n{out.stdout}\n{out.stderr}"


def test_readme_apt_packages_are_the_ones_setup_installs():
    """README's apt-get lines name only packages tools/setup_deps.sh (or its
    apt-packages.d lists) installs, so a source build's list cannot drift."""
    setup = open(os.path.join(ROOT, "tools", "setup_deps.sh"), encoding="utf-8").read()
    for extra in glob.glob(os.path.join(ROOT, "tools", "apt-packages.d", "*.txt")):
        setup += "\n" + open(extra, encoding="utf-8").read()
    known = set(re.findall(r"[a-z0-9][a-z0-9.+-]+", setup))
    named = [pkg for b in parse("README.md") if b.lang == "sh" for line in b.code.splitlines()
             if line.startswith("apt-get install") for pkg in line.split("#")[0].split()[2:] if not pkg.startswith("-")]
    assert len(named) >= 10
    assert sorted(set(named) - known) == []


def test_the_distribution_name_is_used_everywhere():
    """The PyPI name `orrery` is another project's: install hints and docs say orrery-rl."""
    from orrery import _extras

    pyproject = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    assert re.search(r'^name = "orrery-rl"$', pyproject, re.M) and _extras.DISTRIBUTION == "orrery-rl"
    for extra in set(_extras.EXTRAS.values()):
        assert re.search(rf"^{extra} = \[", pyproject, re.M), f"pyproject.toml has no extra {extra!r}"
    for page in PAGES:
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        assert not re.search(r"pip install (\"|')?orrery(\[|\b(?!-rl))", text), f"{page} installs PyPI's 'orrery'"
        assert "orrery[" not in text.replace("orrery-rl[", ""), f"{page} names extras of PyPI's 'orrery'"
