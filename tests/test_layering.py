"""The architecture holds: layers import downwards only, every module names its concern.

The layers (``docs/architecture.md``): ``vrvm.engine`` <- ``vrvm.trips`` <-
``vrvm.services`` <- ``vrvm.cli`` / ``app_ui`` / ``pages``. The test reads every module's
import statements (including those inside functions) with :mod:`ast`, so it checks the
source as written, not only what one run happens to import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UI_LIBRARIES = ("streamlit", "pydeck", "plotly")


def _modules(*folders: str) -> list[Path]:
    files: list[Path] = []
    for folder in folders:
        where = ROOT / folder
        files.extend(sorted(where.rglob("*.py")) if where.is_dir() else [where])
    return files


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports, absolute (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            # ``from vrvm.trips import model`` imports the module vrvm.trips.model.travel_time
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _offending(paths: list[Path], forbidden) -> list[str]:
    return [
        f"{_rel(path)} imports {name}"
        for path in paths
        for name in sorted(_imports(path))
        if forbidden(name)
    ]


def _under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_engine_imports_no_higher_layer():
    # `from vrvm import ...` would run vrvm/__init__.py, which imports the trips layer
    bad = _offending(
        _modules("vrvm/engine"),
        lambda n: (
            _under(n, "vrvm.trips", "vrvm.services", "vrvm.cli")
            or n in ("vrvm", "vrvm.__init__")
            or (n.startswith("vrvm.") and n.split(".")[1] not in ("engine", "_version"))
        ),
    )
    assert not bad, "\n".join(bad)


def test_trips_import_only_the_engine():
    bad = _offending(
        _modules("vrvm/trips"),
        lambda n: _under(n, "vrvm.services", "vrvm.cli") or n == "vrvm",
    )
    assert not bad, "\n".join(bad)


def test_services_do_not_import_the_cli():
    bad = _offending(_modules("vrvm/services"), lambda n: _under(n, "vrvm.cli", "vrvm.api"))
    assert not bad, "\n".join(bad)


def test_the_version_lives_in_one_module_that_imports_nothing_from_vrvm():
    assert not [n for n in _imports(ROOT / "vrvm/_version.py") if _under(n, "vrvm")]
    defined = [
        _rel(path)
        for path in _modules("vrvm")
        if any(
            isinstance(node, ast.Assign)
            and any(getattr(t, "id", None) == "__version__" for t in node.targets)
            for node in ast.parse(path.read_text(encoding="utf-8")).body
        )
    ]
    assert defined == ["vrvm/_version.py"]


def test_nothing_in_the_package_imports_a_user_interface_or_test_tooling():
    bad = _offending(
        _modules("vrvm"),
        lambda n: _under(n, *UI_LIBRARIES, "app_ui", "pages", "tools", "tests", "playwright"),
    )
    assert not bad, "\n".join(bad)


def test_pages_and_views_use_services_and_public_names_only():
    def forbidden(name: str) -> bool:
        if not _under(name, "vrvm"):
            return _under(name, "tools", "tests", "playwright")
        return not (name == "vrvm" or _under(name, "vrvm.services")) and not (
            # `from vrvm import X` is recorded as vrvm.X: public names of vrvm are fine
            name.count(".") == 1 and name.split(".")[1] in _public_names()
        )

    bad = _offending(_modules("app_ui", "pages", "app.py"), forbidden)
    assert not bad, "\n".join(bad)


def _public_names() -> set[str]:
    import vrvm

    return set(vrvm.__all__)


def test_views_do_not_write_to_the_stores():
    """Views hold widgets and session state; the services change stores."""
    writers = ("add", "clear", "publish", "activate", "save")
    bad = []
    for path in _modules("app_ui", "pages", "app.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in writers
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("store", "trip_store", "model_store", "model")
            ):
                bad.append(
                    f"{_rel(path)}:{node.lineno} calls {node.func.value.id}.{node.func.attr}"
                )
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", _modules("vrvm", "app_ui", "pages", "app.py", "tools"), ids=_rel)
def test_each_module_names_its_concern(path):
    # Modules are split by concept, never by size (docs/architecture.md): no line limit here.
    source = path.read_text(encoding="utf-8")
    docstring = ast.get_docstring(ast.parse(source))
    assert docstring and len(docstring.split("\n", 1)[0]) > 10, f"{_rel(path)}: no docstring"


def test_the_http_api_sits_beside_the_cli_and_imports_only_downwards():
    # vrvm.api (``vrvm serve``) is a presentation layer like the CLI: it may use the
    # services and the layers below, never the CLI or the dashboard's views
    bad = _offending(
        _modules("vrvm/api"),
        lambda n: _under(n, "vrvm.cli", "app_ui", "pages") or n in UI_LIBRARIES,
    )
    assert not bad, "\n".join(bad)
    lower = _offending(
        _modules("vrvm/engine", "vrvm/trips", "vrvm/services"), lambda n: _under(n, "vrvm.api")
    )
    assert not lower, "\n".join(lower)


# --------------------------------------------------------------------------- packages

MAX_MODULES_PER_PACKAGE = 20
TRIP_PACKAGES = ("places", "store", "files", "model")
"""``vrvm.trips``' packages, lowest first: each imports only those before it."""
SERVICE_PACKAGES = (
    "display",
    "access",
    "versions",
    "analyst",
    "map",
    "answers",
    "planning",
    "notebook",
)
"""``vrvm.services``' packages, lowest first: each imports only those before it."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _is_module(name: str) -> bool:
    where = ROOT.joinpath(*name.split("."))
    return (where / "__init__.py").is_file() or where.with_suffix(".py").is_file()


def _imported_modules(path: Path) -> list[tuple[str, str | None]]:
    """``(module, name)`` for every import of ``path`` inside vrvm; ``name`` is None when
    a module itself is imported (``from vrvm.trips import home`` imports the module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.append((full, None) if _is_module(full) else (node.module, alias.name))
    return [(module, name) for module, name in found if _under(module, "vrvm")]


def _private_owner(module: str, name: str | None) -> str | None:
    """The package a private module or name belongs to, None when all of it is public."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    if name and name.startswith("_") and not name.startswith("__"):
        is_package = (ROOT.joinpath(*parts) / "__init__.py").is_file()
        return module if is_package else module.rpartition(".")[0]
    return None


def test_no_private_name_is_imported_across_a_package_boundary():
    # A package's `_module` and `_name` are its own: other packages use its public names.
    bad = []
    for path in _modules("vrvm", "app_ui", "pages", "app.py"):
        package = _package_of(path)
        for module, name in _imported_modules(path):
            owner = _private_owner(module, name)
            if owner is not None and not _under(package, owner):
                bad.append(f"{_rel(path)} imports {module}" + (f".{name}" if name else ""))
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_modules():
    # Function-level imports count: a cycle hidden in a function is still a cycle.
    graph = {
        _module_name(path): {module for module, _ in _imported_modules(path)}
        for path in _modules("vrvm")
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*trail[trail.index(target) :], target])
            elif target in graph and target not in state:
                visit(target, [*trail, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(" -> ".join(cycle) for cycle in cycles)


@pytest.mark.parametrize(
    "package",
    sorted({_package_of(p) for p in _modules("vrvm", "app_ui") if p.name != "__init__.py"}),
)
def test_no_package_holds_more_than_20_modules(package):
    folder = ROOT.joinpath(*package.split("."))
    modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= MAX_MODULES_PER_PACKAGE, f"{package}: {len(modules)} modules"


@pytest.mark.parametrize(
    ("layer", "order"), [("vrvm.trips", TRIP_PACKAGES), ("vrvm.services", SERVICE_PACKAGES)]
)
def test_packages_of_a_layer_import_only_those_below(layer, order):
    """docs/architecture.md draws each layer's packages in this order."""
    folder = ROOT.joinpath(*layer.split("."))
    on_disk = {p.parent.name for p in folder.glob("*/__init__.py")}
    assert on_disk == set(order), f"{layer}: packages {sorted(on_disk)}, documented {order}"
    bad = []
    for rank, package in enumerate(order):
        allowed = {f"{layer}.{p}" for p in order[:rank]}
        for path in _modules(f"{layer.replace('.', '/')}/{package}"):
            for module, _ in _imported_modules(path):
                if not _under(module, layer) or _under(module, f"{layer}.{package}"):
                    continue
                target = ".".join(module.split(".")[:3])
                if target.rpartition(".")[2] in order and target not in allowed:
                    bad.append(f"{_rel(path)} imports {module}")
    assert not bad, "\n".join(bad)


def test_services_open_a_data_home_through_home_only():
    """The stores of a data home are reached through `vrvm.trips.home.Home`.

    (`vrvm versions` and `vrvm update` also take a bare model store's folder, which
    belongs to no home: the CLI opens that one itself, and writes through the services.)
    """
    opened = ("ModelStore", "TripStore", "AuditLog", "RecipeBook", "ZoneShelf")
    bad = []
    for path in _modules("vrvm/services", "vrvm/api", "app_ui", "pages", "app.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in opened:
                bad.append(f"{_rel(path)}:{node.lineno} opens {node.func.id} itself")
    assert not bad, "\n".join(bad)
