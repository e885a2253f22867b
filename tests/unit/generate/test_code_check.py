"""The lexical code test of the citation checker (pure, no model)."""

from __future__ import annotations

from ragstrata.generate.code_check import (
    Import,
    code_imports,
    code_spans,
    prose_imports,
    unbacked_code,
)


def test_reads_python_and_javascript_imports() -> None:
    imports, bound, _ = code_imports(
        "from typing import Annotated, Union as U\n"
        "from fastapi import (\n    FastAPI,\n    Query,\n)\n"
        "import numpy as np, os.path\n"
        "import React, { useState, useEffect as ue } from 'react';\n"
        'import * as d3 from "d3";\n'
        "import './app.css';\n"
    )
    assert [(i.module, i.name) for i in imports] == [
        ("react", "useState"),
        ("react", "useEffect"),
        ("react", None),
        ("d3", None),
        ("./app.css", None),
        ("typing", "Annotated"),
        ("typing", "Union"),
        ("fastapi", "FastAPI"),
        ("fastapi", "Query"),
        ("numpy", None),
        ("os.path", None),
    ]
    assert {"Annotated", "U", "FastAPI", "Query", "np", "os", "React", "useState", "ue"} <= bound
    assert imports[5].shown == "from typing import Annotated"
    assert imports[0].shown == "import { useState } from 'react'"


def test_reads_imports_stated_in_prose() -> None:
    source = "First import:\n* `Query` from `fastapi`\n* `Annotated` from `typing`"
    assert [(i.module, i.name) for i in prose_imports(source, claim=False)] == [
        ("fastapi", "Query"),
        ("typing", "Annotated"),
    ]
    said = prose_imports("`Annotated` viene de `pydantic` y `Query` de `fastapi`.", claim=True)
    assert [(i.module, i.name) for i in said] == [("pydantic", "Annotated"), ("fastapi", "Query")]
    # an answer's sentence states an import only with an import verb
    assert prose_imports("The value of `q` from `Query` is a string.", claim=True) == []
    assert prose_imports("Import `Query` and `Path` from `fastapi`.", claim=True) == [
        Import("fastapi", "Query", "`Query` from `fastapi`"),
        Import("fastapi", "Path", "`Path` from `fastapi`"),
    ]
    assert code_spans("Use `a` and `b.c()` here.") == ["a", "b.c()"]
    assert code_spans("clona cada hijo `` que ha recibido y `x`") == ["x"]  # stray empty span


SOURCE = (
    "Import `Annotated` from `typing`. FastAPI uses `pydantic`.\n"
    "```python\nfrom fastapi import FastAPI, Query\n\napp = FastAPI()\n\n"
    '@app.get("/items/")\ndef read(q: str = Query(max_length=50)):\n    return q\n```'
)


def test_imports_must_come_from_the_module_the_source_names() -> None:
    assert unbacked_code("x", ["from pydantic import Annotated"], SOURCE) == [
        "from pydantic import Annotated"
    ]
    assert unbacked_code("x", ["from typing import Annotated"], SOURCE) == []
    assert unbacked_code("x", ["from typing_extensions import Annotated"], SOURCE) == [
        "from typing_extensions import Annotated"
    ]
    # fastapi.params is fastapi's submodule; the source names Query's module as fastapi
    assert unbacked_code("x", ["from fastapi.params import Query"], SOURCE) == []
    # a name whose module the source does not state: both words must occur in it
    assert unbacked_code("x", ["from fastapi import FastAPI"], SOURCE) == []
    assert unbacked_code("x", ["from starlette import FastAPI"], SOURCE) == [
        "from starlette import FastAPI"
    ]
    assert unbacked_code("x", ["import numpy as np"], SOURCE) == ["import numpy"]


def test_names_the_code_defines_are_exempt_and_others_must_occur() -> None:
    code = (
        "from fastapi import FastAPI, Query\n"
        "app = FastAPI()  # the app\n"
        '@app.get("/items/{item_id}")\n'
        "def read_items(item_id: int, q: str = Query(max_length=50)):\n"
        "    results = {'q': q}\n"
        "    results.update({'id': item_id})\n"
        "    return results\n"
    )
    assert unbacked_code("x", [code], SOURCE) == []
    assert unbacked_code("x", [code.replace("max_length", "max_len")], SOURCE) == ["max_len"]
    assert unbacked_code("x", ["@router.get('/')\ndef f(): ..."], SOURCE) == ["router.get"]
    assert unbacked_code("x", ["typing.Annotated[str, Query()]"], SOURCE) == ["typing.Annotated"]


def test_strings_comments_and_jsx_text_are_not_names() -> None:
    source = "import { useState } from 'react';\nconst [index, setIndex] = useState(0);"
    jsx = (
        "import { useState } from 'react';\n"
        "export default function Gallery({ items }) {\n"
        "  const [index, setIndex] = useState(0); // Estado del índice\n"
        "  return <button onClick={() => setIndex(index + 1)}>Siguiente {index}</button>;\n"
        "}\n"
    )
    assert unbacked_code("x", [jsx], source) == ["onClick"]
    assert unbacked_code("x", [jsx.replace("'react'", "'preact'")], source) == [
        "import { useState } from 'preact'",
        "onClick",
    ]
