"""One vocabulary (runner/outcomes.py): no owner, evidence or measurement kind, section,
direction, clock or clock-gate word is written as a string literal outside its enum. The test
walks the source of every room and looks where such a word goes: a keyword of that name (`owner`,
`kind`, `section`, `direction`, `clock`, `gate`; Django lookups such as `evidence__kind` too), a
parameter of that name given by position (`fail(outcome, owner, cause)`,
`EvidenceRecord(kind, data)`), a comparison with an attribute of that name, an assignment to
one, a parameter's default, or a dict's entry of that name."""

import ast
from pathlib import Path

from runner.outcomes import (
    Clock,
    ClockGate,
    Direction,
    EvidenceKind,
    MeasurementKind,
    Owner,
    Section,
)

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("boxbench", "runner", "stats", "bench")
HOME = Path("runner", "outcomes.py")  # where the words are written, once

# The words each name carries. `kind` is an evidence's or a measurement's kind, but also numpy's
# sort kind and more: only the two enums' words count there. Every owner word (including "")
# counts for `owner`, and the clock gate's "" (not guest-timed) for `gate`.
ROLE_WORDS = {
    "owner": {w.value for w in Owner},
    "kind": {w.value for w in EvidenceKind} | {w.value for w in MeasurementKind},
    "section": {w.value for w in Section},
    "direction": {w.value for w in Direction},
    "clock": {w.value for w in Clock},
    "gate": {w.value for w in ClockGate},
}


def source_files(root: Path, rooms: tuple[str, ...]) -> list[Path]:
    return [
        path
        for room in rooms
        for path in sorted((root / room).rglob("*.py"))
        if "migrations" not in path.parts and path.relative_to(root) != HOME
    ]


def role(name: str | None) -> str | None:
    """The role ("owner", "kind", "section"...) `name` (a variable, attribute, keyword or key)
    carries, if any."""
    if not name:
        return None
    for part in reversed(name.split("__")):  # Django lookups: evidence__kind, owner__in
        if part in ROLE_WORDS:
            return part
    return None


def name_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return str(node.args[0].value)  # data.get("kind")
    return None


def literals(node: ast.AST | None):
    """The string constants `node` is, or holds as a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from literals(element)
    elif isinstance(node, ast.IfExp):  # "provider" if failed else ""
        yield from literals(node.body)
        yield from literals(node.orelse)
    elif isinstance(node, ast.BoolOp):  # owner or "unknown"
        for value in node.values:
            yield from literals(value)


def positional_roles(trees: list[ast.AST]) -> dict[str, dict[int, str]]:
    """{callable name: {position: role}} for every function, method and dataclass-like class
    of the source whose parameters (or fields) include `owner` or `kind`."""
    found: dict[str, dict[int, str]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = [a.arg for a in node.args.posonlyargs + node.args.args]
                if params and params[0] in ("self", "cls"):
                    params = params[1:]
            elif isinstance(node, ast.ClassDef):
                params = [
                    s.target.id
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                ]
            else:
                continue
            for index, param in enumerate(params):
                if role(param):
                    found.setdefault(node.name, {})[index] = role(param)
    return found


def words_out_of_place(where: str, tree: ast.AST, positions) -> list[str]:
    found = []

    def check(value: ast.AST | None, carried: str | None) -> None:
        if carried is None:
            return
        words = ROLE_WORDS[carried]
        for constant in literals(value):
            if constant.value in words:
                found.append(f"{where}:{constant.lineno}: {carried} {constant.value!r}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                check(keyword.value, role(keyword.arg))
            callee = name_of(node.func)
            for index, carried in positions.get(callee, {}).items():
                if index < len(node.args):
                    check(node.args[index], carried)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for a, b in zip(sides, sides[1:], strict=False):
                check(b, role(name_of(a)))
                check(a, role(name_of(b)))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(target.elts, node.value.elts, strict=False):
                        check(v, role(name_of(t)))
                else:
                    check(node.value, role(name_of(target)))
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            for arg, default in zip(
                positional[len(positional) - len(node.defaults) :], node.defaults, strict=True
            ):
                check(default, role(arg.arg))
            for arg, default in zip(node.kwonlyargs, node.kw_defaults, strict=True):
                check(default, role(arg.arg))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    check(value, role(key.value))
    return found


def scan(root: Path, rooms: tuple[str, ...]) -> list[str]:
    files = source_files(root, rooms)
    trees = {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in files}
    positions = positional_roles(list(trees.values()))
    return [
        word
        for path, tree in trees.items()
        for word in words_out_of_place(str(path.relative_to(root)), tree, positions)
    ]


def test_no_word_of_the_vocabulary_is_a_string_literal_outside_its_enum():
    assert scan(ROOT, ROOMS) == []


def test_it_finds_the_words_wherever_an_owner_kind_section_or_clock_goes(tmp_path):
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "outcomes.py").write_text('OWNER = "provider"\n')  # the home: left out
    (tmp_path / "runner" / "a.py").write_text(
        "def fail(outcome, owner, cause): ...\n"
        "def record(self, kind, data, *, owner='trace'): ...\n"  # a default
        "class Record:\n"
        "    kind: str\n"
        "    data: dict\n"
        "class Failure:\n"
        "    outcome, owner = 1, 'provider'\n"  # a class attribute, unpacked
        "fail(1, 'unknown', 'why')\n"  # by position
        "ctx.record('readiness', {})\n"
        "Record('create_error', {})\n"  # a dataclass-like field, by position
        "Evidence.objects.filter(evidence__kind='lifecycle', owner__in=['', 'benchmark'])\n"
        "if e.kind == 'recovery' or trial.owner in ('environment',): pass\n"
        "if row['kind'] != 'cleanup' or data.get('owner') == 'provider': pass\n"
        "entry = {'kind': 'traceback', 'owner': 'unknown'}\n"
        "result.owner = 'benchmark'\n"
        "line = {'owner': 'provider' if failed else '', 'kind': given or 'sandbox'}\n"
        "Definition(section='workload', direction='lower', clock='job_host')\n"
        "ctx.record('x_ms', 1.0, kind='stage', gate='pass'); lower = d.direction != 'higher'\n"
        "def measure(name, value, *, clock='guest', gate=''): ...\n"
        # Other words, or other meanings of the names: left alone.
        "np.argsort(x, kind='stable'); add(n, owner='run'); sort(direction='asc')\n"
        "ProviderError('remove it', 'cleanup'); label = 'provider'; x.kind == 'blob'\n"
    )
    found = [line.split(": ", 1)[1] for line in scan(tmp_path, ("runner",))]
    assert sorted(found) == sorted(
        [
            "owner 'trace'",
            "owner 'provider'",
            "owner 'unknown'",
            "kind 'readiness'",
            "kind 'create_error'",
            "kind 'lifecycle'",
            "owner ''",
            "owner 'benchmark'",
            "kind 'recovery'",
            "owner 'environment'",
            "kind 'cleanup'",
            "owner 'provider'",
            "kind 'traceback'",
            "owner 'unknown'",
            "owner 'benchmark'",
            "owner 'provider'",
            "owner ''",
            "kind 'sandbox'",
            "section 'workload'",
            "direction 'lower'",
            "clock 'job_host'",
            "kind 'stage'",
            "gate 'pass'",
            "direction 'higher'",
            "clock 'guest'",
            "gate ''",
        ]
    )
