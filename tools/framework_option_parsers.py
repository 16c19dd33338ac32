"""The static (``ast``) parsers behind tools/extract_framework_options.py: one extractor per
framework (Megatron-LM argparse flags, DeepSpeed config keys, torchtitan job-config sections)
and the helpers they share. Each extractor takes a ``Repo`` (the script's read-only view of a
git directory at one commit) and returns the JSON-ready option lists."""

from __future__ import annotations

import ast
import subprocess


class Repo:
    """A read-only view of a git directory at one commit (``git show``, ``git ls-tree``)."""

    def __init__(self, git_dir: str, rev: str):
        self.git_dir = git_dir
        self.commit = self._git("rev-parse", f"{rev}^{{commit}}").strip()
        self.rev = rev

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True,
                              capture_output=True, text=True).stdout

    def read(self, path: str) -> str:
        return self._git("show", f"{self.commit}:{path}")

    def ls(self, prefix: str) -> list[str]:
        return [p for p in self._git("ls-tree", "-r", "--name-only", self.commit, prefix)
                .splitlines() if p.endswith(".py")]

    def origin(self) -> str:
        try:
            return self._git("config", "--get", "remote.origin.url").strip()
        except subprocess.CalledProcessError:
            return ""


# ---- helpers ------------------------------------------------------------------------------
def _literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _kw(call: ast.Call, name: str):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def _ann_type(ann, enums: set[str]) -> tuple[str, dict]:
    """(type, extra) for an annotation: int/float/str/bool/list/object/enum."""
    if ann is None:
        return "unknown", {}
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return "unknown", {}
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):  # X | None
        parts = [p for p in (ann.left, ann.right)
                 if not (isinstance(p, ast.Constant) and p.value is None)]
        if len(parts) == 1:
            return _ann_type(parts[0], enums)
        types = {_ann_type(p, enums)[0] for p in parts}
        return ("float" if types == {"float", "int"} else "union"), {}
    if isinstance(ann, ast.Name):
        if ann.id in ("int", "float", "str", "bool"):
            return ann.id, {}
        if ann.id in ("Path",):
            return "str", {}
        if ann.id in ("dict", "Dict"):
            return "object", {}
        if ann.id in ("list", "List"):
            return "list", {}
        if ann.id in enums:
            return "enum", {"enum": ann.id}
        return "object", {"class": ann.id}
    if isinstance(ann, ast.Attribute):
        return ("dtype" if ann.attr == "dtype" else "object"), {}
    if isinstance(ann, ast.Subscript):
        base = ann.value.id if isinstance(ann.value, ast.Name) else getattr(ann.value, "attr", "")
        inner = ann.slice
        if base == "Optional":
            return _ann_type(inner, enums)
        if base == "Union":
            elts = [e for e in inner.elts if not (isinstance(e, ast.Constant) and e.value is None)]
            if len(elts) == 1:
                return _ann_type(elts[0], enums)
            types = {_ann_type(e, enums)[0] for e in elts}
            return ("float" if types == {"float", "int"} else "union"), {}
        if base == "Literal":
            vals = [_literal(e) for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner])]
            kinds = {type(v).__name__ for v in vals if v is not None}
            t = kinds.pop() if len(kinds) == 1 else "str"
            return t, {"choices": vals}
        if base in ("list", "List", "tuple", "Tuple"):
            return "list", {}
        if base in ("dict", "Dict"):
            return "object", {}
        if base == "Annotated":
            return _ann_type(inner.elts[0], enums)
        if base == "ClassVar":
            return "classvar", {}
    return "unknown", {}


class ClassIndex:
    """Every class definition under some folders, by name (dataclasses, pydantic models)."""

    def __init__(self, repo: Repo, folders: list[str]):
        self.classes: dict[str, list[tuple[str, ast.ClassDef]]] = {}
        self.enums: set[str] = set()
        for folder in folders:
            for path in repo.ls(folder):
                try:
                    tree = ast.parse(repo.read(path))
                except SyntaxError:
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, ast.ClassDef):
                        self.classes.setdefault(node.name, []).append((path, node))
                        bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                        if bases & {"Enum", "IntEnum", "StrEnum"} or any(
                                b.endswith("Enum") for b in bases if b):
                            self.enums.add(node.name)

    def get(self, name: str, prefer: str = "") -> tuple[str, ast.ClassDef] | None:
        cands = self.classes.get(name, [])
        for path, node in cands:
            if prefer and path.startswith(prefer):
                return path, node
        return cands[0] if cands else None

    def fields(self, name: str, prefer: str = "", seen=None) -> list[dict]:
        """Annotated class attributes, bases first (dataclass field order)."""
        seen = seen or set()
        hit = self.get(name, prefer)
        if not hit or name in seen:
            return []
        seen.add(name)
        path, node = hit
        out: list[dict] = []
        for b in node.bases:
            bname = getattr(b, "id", getattr(b, "attr", None))
            if bname and bname in self.classes:
                out += self.fields(bname, prefer, seen)
        for st in node.body:
            if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                continue
            t, extra = _ann_type(st.annotation, self.enums)
            if t == "classvar":
                continue
            f = {"name": st.target.id, "type": t, "file": path, "line": st.lineno, **extra}
            v = st.value
            f["has_default"] = v is not None
            f["default"] = None
            if isinstance(v, ast.Call) and getattr(v.func, "id", getattr(v.func, "attr", "")) \
                    in ("field", "Field"):
                if _literal(_kw(v, "init")) is False:
                    continue
                d = _kw(v, "default")
                if d is None and v.args:
                    d = v.args[0]
                f["default"] = _literal(d) if d is not None else None
                alias = _literal(_kw(v, "alias"))
                if isinstance(alias, str):
                    f["alias"] = alias
                meta = _kw(v, "metadata")
                if isinstance(meta, ast.Dict):
                    for k, val in zip(meta.keys, meta.values):
                        if _literal(k) == "argparse_meta" and isinstance(val, ast.Dict):
                            f["argparse_meta"] = {
                                _literal(kk): (_literal(vv) if _literal(vv) is not None
                                               else ast.unparse(vv))
                                for kk, vv in zip(val.keys, val.values)}
            elif v is not None:
                f["default"] = _literal(v)
            out = [o for o in out if o["name"] != f["name"]] + [f]
        return out


# ---- Megatron-LM --------------------------------------------------------------------------
_ARG_TYPES = {"int": "int", "float": "float", "str": "str"}


def _add_argument_flags(tree: ast.AST, path: str) -> dict[str, dict]:
    flags: dict[str, dict] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant)
                 and isinstance(a.value, str) and a.value.startswith("--")]
        if not names:
            continue
        action = _literal(_kw(node, "action")) if _kw(node, "action") is not None else None
        tnode = _kw(node, "type")
        if action in ("store_true", "store_false", "store_const", "count"):
            t = "flag"
        elif tnode is None:
            t = "str"
        elif isinstance(tnode, ast.Name):
            t = _ARG_TYPES.get(tnode.id, "custom")
        else:
            t = "custom"
        info = {"type": t, "file": path, "line": node.lineno}
        nargs = _kw(node, "nargs")
        if nargs is not None:
            info["nargs"] = _literal(nargs)
        choices = _literal(_kw(node, "choices")) if _kw(node, "choices") is not None else None
        if isinstance(choices, (list, tuple)):
            info["choices"] = list(choices)
        for n in names:
            flags[n] = info
    return flags


def _factory_flags(tree: ast.AST, index: ClassIndex) -> dict[str, dict]:
    """Flags made by ArgumentGroupFactory(ConfigClass, exclude=[...]).build_group(...)."""
    flags: dict[str, dict] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "")
                == "ArgumentGroupFactory" and node.args):
            continue
        cls = getattr(node.args[0], "id", None)
        exclude = set(_literal(_kw(node, "exclude")) or []) if _kw(node, "exclude") else set()
        fields = index.fields(cls, prefer="megatron/")
        if not fields:
            raise SystemExit(f"ArgumentGroupFactory({cls}): class not found")
        for f in fields:
            if f["name"] in exclude:
                continue
            t = f["type"]
            names = ["--" + f["name"].replace("_", "-")]
            if t == "bool":
                if f["default"] is True:
                    names = ["--no-" + f["name"].replace("_", "-"),
                             "--disable-" + f["name"].replace("_", "-")]
                t = "flag"
            info = {"type": t, "dest": f["name"], "file": f["file"], "line": f["line"]}
            if "choices" in f:
                info["choices"] = f["choices"]
            meta = f.get("argparse_meta", {})
            if "arg_names" in meta and isinstance(meta["arg_names"], list):
                names = meta["arg_names"]
            if meta.get("action") in ("store_true", "store_false"):
                info["type"] = "flag"
            if isinstance(meta.get("type"), str) and meta["type"] in _ARG_TYPES:
                info["type"] = meta["type"]
            if "nargs" in meta:
                info["nargs"] = meta["nargs"]
            for n in names:
                flags[n] = info
    return flags


def extract_megatron(repo: Repo) -> dict:
    path = "megatron/training/arguments.py"
    tree = ast.parse(repo.read(path))
    index = ClassIndex(repo, ["megatron/core", "megatron/training"])
    flags = _factory_flags(tree, index)
    flags.update(_add_argument_flags(tree, path))
    return {"repo": "NVIDIA/Megatron-LM", "commit": repo.commit, "source": path,
            "flags": dict(sorted(flags.items()))}


# ---- DeepSpeed ----------------------------------------------------------------------------
def _constants(src: str, prefix: str = "") -> dict[str, dict]:
    """NAME = "key" constants and the type of NAME_DEFAULT (when it is a literal)."""
    tree = ast.parse(src)
    values: dict[str, object] = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name):
            values[st.targets[0].id] = _literal(st.value)
    out: dict[str, dict] = {}
    for name, v in values.items():
        if not isinstance(v, str) or not name.startswith(prefix) or name.endswith(
                ("_DEFAULT", "_FORMAT")) or "\n" in v or not v.replace("_", "").isalnum():
            continue
        d = values.get(name + "_DEFAULT", None)
        t = type(d).__name__ if isinstance(d, (bool, int, float, str)) else "unknown"
        out[v] = {"type": {"bool": "bool", "int": "int", "float": "float",
                           "str": "str"}.get(t, "unknown"), "constant": name}
    return out


def _model_schema(index: ClassIndex, cls: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for f in index.fields(cls, prefer="deepspeed/"):
        t = f["type"]
        if t == "enum":
            t = "enum:" + f["enum"]
        info = {"type": t, "file": f["file"], "line": f["line"]}
        if "choices" in f:
            info["choices"] = f["choices"]
        out[f["name"]] = info
        if "alias" in f:
            out[f["alias"]] = {**info, "alias_of": f["name"]}
    return out


def _autoep_keys(repo: Repo, top: dict) -> dict:
    """AutoEP's ``expert_parallel`` keys: ``param_dict.get`` reads of parse_autoep_config."""
    path = "deepspeed/module_inject/auto_ep_config.py"
    if "expert_parallel" not in _constants(repo.read("deepspeed/runtime/config.py"), "EXPERT"):
        return {}
    top["expert_parallel"], out = {"type": "object", "constant": "EXPERT_PARALLEL"}, {}
    for node in ast.walk(ast.parse(repo.read(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get" and \
                getattr(node.func.value, "id", "") == "param_dict" and node.args:
            kind = {bool: "bool", int: "int", float: "float", str: "str"}.get(
                type(_literal(node.args[1]) if len(node.args) > 1 else None))
            out[node.args[0].value] = {"type": kind or "any", "file": path, "line": node.lineno}
    return dict(sorted(out.items()))


def extract_deepspeed(repo: Repo) -> dict:
    index = ClassIndex(repo, ["deepspeed/runtime"])
    const = _constants(repo.read("deepspeed/runtime/constants.py"))
    zero_consts = _constants(repo.read("deepspeed/runtime/zero/config.py"), "ZERO_OPTIMIZATION")
    aio = _constants(repo.read("deepspeed/runtime/swap_tensor/constants.py"), "AIO_")
    aio_key = _constants(repo.read("deepspeed/runtime/swap_tensor/constants.py"), "AIO")
    act = _constants(repo.read("deepspeed/runtime/activation_checkpointing/config.py"),
                     "ACT_CHKPT_")
    act_key = _constants(repo.read("deepspeed/runtime/activation_checkpointing/config.py"),
                         "ACT_CHKPT")
    top = dict(const)
    for src in (zero_consts, aio_key, act_key):
        for k, v in src.items():
            if v["constant"] in ("ZERO_OPTIMIZATION", "AIO", "ACT_CHKPT"):
                top[k] = {"type": "object", "constant": v["constant"]}
    # tensor_parallel is read by key in runtime/tensor_parallel/config.py
    tp_src = repo.read("deepspeed/runtime/tensor_parallel/config.py")
    for node in ast.walk(ast.parse(tp_src)):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                isinstance(node.left.value, str) and any(isinstance(o, ast.In)
                                                         for o in node.ops):
            top[node.left.value] = {"type": "object",
                                    "file": "deepspeed/runtime/tensor_parallel/config.py",
                                    "line": node.lineno}
    for k in ("bf16", "fp16"):
        if k in top:
            top[k]["type"] = "object"
    expert_parallel = _autoep_keys(repo, top)
    # optimizer names DeepSpeed builds itself; others fall back to torch.optim
    rc = ast.parse(repo.read("deepspeed/runtime/config.py"))
    names: dict[str, object] = {}
    ds_opts: list[str] = []
    for st in rc.body:
        if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
            names[st.targets[0].id] = _literal(st.value)
            if st.targets[0].id == "DEEPSPEED_OPTIMIZERS" and isinstance(st.value, ast.List):
                ds_opts = [names.get(getattr(e, "id", ""), None) for e in st.value.elts]
    return {
        "repo": "deepspeedai/DeepSpeed", "commit": repo.commit,
        "top_level": dict(sorted(top.items())),
        "zero_optimization": _model_schema(index, "DeepSpeedZeroConfig"),
        "offload_optimizer": _model_schema(index, "DeepSpeedZeroOffloadOptimizerConfig"),
        "offload_param": _model_schema(index, "DeepSpeedZeroOffloadParamConfig"),
        "offload_devices": ["none", "cpu", "nvme"],
        "bf16": _model_schema(index, "DeepSpeedBF16Config"),
        "fp16": _model_schema(index, "DeepSpeedFP16Config"),
        "tensor_parallel": _model_schema(index, "TPTrainingConfig"),
        "expert_parallel": expert_parallel,
        "aio": {k: v for k, v in aio.items()},
        "activation_checkpointing": {k: v for k, v in act.items()},
        "optimizer": {"type": {"type": "str"}, "params": {"type": "object"}},
        "optimizer_types": sorted(o for o in ds_opts if isinstance(o, str)),
        "optimizer_types_note": "other names are looked up in torch.optim "
                                "(runtime/engine.py _configure_basic_optimizer)",
    }


# ---- torchtitan ---------------------------------------------------------------------------
def extract_torchtitan(repo: Repo) -> dict:
    path = "torchtitan/config/job_config.py"
    index = ClassIndex(repo, ["torchtitan/config"])

    def section(cls: str) -> dict:
        out = {}
        for f in index.fields(cls, prefer="torchtitan/config"):
            if f["type"] == "object" and f.get("class") in index.classes:
                out[f["name"]] = {"type": "table", "fields": section(f["class"])}
            else:
                info = {"type": f["type"], "line": f["line"]}
                if "choices" in f:
                    info["choices"] = f["choices"]
                out[f["name"]] = info
        return out

    sections = {}
    for f in index.fields("JobConfig", prefer="torchtitan/config"):
        if f.get("class"):
            sections[f["name"]] = section(f["class"])
    return {"repo": "pytorch/torchtitan", "commit": repo.commit, "rev": repo.rev,
            "source": path, "sections": sections}
