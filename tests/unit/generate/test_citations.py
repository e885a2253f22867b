"""Citation parsing, verification and rewriting (deterministic fake embedder)."""

from __future__ import annotations

import pytest

from ragstrata.assemble.context import assemble
from ragstrata.generate.citations import (
    CheckerSettings,
    CitationChecker,
    claim_names,
    claim_numbers,
    ground,
    marker_labels,
    parse_answer,
)
from ragstrata.testing.fakes import HashEmbedder, make_hit
from ragstrata.text.analyzer import Analyzer
from ragstrata.text.tokens import FunctionCounter

WORDS = FunctionCounter(lambda t: t.split())


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("Uses Pydantic [1].", [(1,)]),
        ("It is fast [1][2].", [(1, 2)]),
        ("It works [1, 3].", [(1, 3)]),
        ("Según la guía funciona [Fuente-2].", [(2,)]),
        ("Both say so (Source-2, Source-4).", [(2, 4)]),
        ("Ambas lo dicen [Fuente 1; Fuente 3].", [(1, 3)]),
        ("Claim one.[1] Claim two. [2]", [(1,), (2,)]),
        ("Ambas fuentes lo dicen [1 y 2].", [(1, 2)]),
        ("Both sources say so [Source 1 and Source 3].", [(1, 3)]),
        ("Wiki-style markers [[2]] too.", [(2,)]),  # review 47: "[]" was left
    ],
)
def test_parses_every_marker_form(text: str, labels: list[tuple[int, ...]]) -> None:
    parsed = parse_answer(text, n_sources=4)
    assert [c.labels for c in parsed.claims] == labels
    assert all("[" not in c.text and "(Source" not in c.text for c in parsed.claims)


def test_out_of_range_and_non_citations() -> None:
    parsed = parse_answer(
        "A real one [1]. An invented one [7]. Zero here [0]. Index items[1] is code.", 2
    )
    assert [c.labels for c in parsed.claims] == [(1,), (), (), ()]
    assert parsed.invalid == [7, 0]
    assert marker_labels("(Source-2, Source-4)") == [2, 4]
    # a number in parentheses is not a citation, nor is code in fences
    assert parse_answer("Python (3) is required.", 3).claims[0].labels == ()
    # a Markdown link whose text is a number is not a citation
    linked = parse_answer("See the guide [3](https://example.org/g) for more [1].", 3)
    assert [c.labels for c in linked.claims] == [(1,)]
    assert "[3](https://example.org/g)" in linked.claims[0].text
    fenced = parse_answer(
        "Run this [1].\n```\nx = a[2]\n```\nAll done [2].\n/// note\n</source>", 3
    )
    assert [c.text for c in fenced.claims] == ["Run this.", "All done."]


def test_decimals_do_not_split_sentences() -> None:
    parsed = parse_answer("It needs Python 3.11 and 4 GB [1]. Then run it [2].", 2)
    assert [c.text for c in parsed.claims] == ["It needs Python 3.11 and 4 GB.", "Then run it."]


def test_numbers_and_names_are_extracted() -> None:
    assert claim_numbers("Python 3.11 needs 4 GB, not 1,5 GB.") == {"3.11", "4", "1,5"}
    names = claim_names("Use `Depends` with get_db and response.json() in FastAPI.")
    assert {"Depends", "get_db", "response.json", "FastAPI"} <= names
    assert "Use" not in names  # a sentence's first word is not a name


PASSAGE = (
    "The installer needs Python 3.11 and four gigabytes of memory. "
    "Run the setup script with the --user flag to install without root."
)


@pytest.fixture()
def checker() -> CitationChecker:
    return CitationChecker(HashEmbedder(), Analyzer())


def test_checker_accepts_copies_and_rejects_changed_facts(checker: CitationChecker) -> None:
    assert checker.check("The installer needs Python 3.11.", PASSAGE).verified
    wrong_number = checker.check("The installer needs Python 3.12.", PASSAGE)
    assert not wrong_number.verified and wrong_number.missing == ("3.12",)
    wrong_name = checker.check("The installer needs Django and memory.", PASSAGE)
    assert not wrong_name.verified and "Django" in wrong_name.missing
    unrelated = checker.check("Invoices are emailed on the first day of each month.", PASSAGE)
    assert not unrelated.verified and unrelated.score < 0.3
    ev = checker.check("Run the setup script with --user to install without root.", PASSAGE)
    assert PASSAGE[ev.evidence[0] : ev.evidence[1]].startswith("Run the setup script")


def test_ground_renumbers_verifies_and_flags(checker: CitationChecker) -> None:
    hits = [
        make_hit("billing", "Invoices are emailed on the first day of each month.", 1),
        make_hit("install", PASSAGE, 2),
    ]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000)
    answer = (
        "The installer needs Python 3.11 [2]. Invoices arrive every day at noon [1]. "
        "An extra claim [5]."
    )
    out = ground(answer, ctx, checker)
    assert out.text == (
        "The installer needs Python 3.11 [1]. Invoices arrive every day at noon [2]. "
        "An extra claim."
    )
    assert [c.doc_id for c in out.citations] == ["install", "billing"]
    assert [c.verified for c in out.citations] == [True, False]
    assert out.citations[0].quote.startswith("The installer needs Python 3.11")
    assert out.legend[0].startswith("[1] = /corpus/install.md")
    assert out.diagnostics["invalid_labels"] == [5]
    assert out.diagnostics["unsupported"][0]["labels"] == [1]
    assert out.diagnostics["uncited"] == ["An extra claim."]

    removed = ground(answer, ctx, checker, unsupported="remove")
    assert [c.doc_id for c in removed.citations] == ["install"]
    # the sentence goes with its only citation (trial 25: only its marker went)
    assert "noon" not in removed.text and removed.text.startswith("The installer needs")
    assert removed.diagnostics["unsupported"][0]["sentence"].endswith("noon.")
    # a sentence without a marker that no source supports goes too (a re-test of trial 25)
    assert "An extra claim" not in removed.text
    assert set(removed.diagnostics["uncited"]) == {
        "Invoices arrive every day at noon.",
        "An extra claim.",
    }

    unchecked = ground(answer, ctx, None)
    assert all(c.verified and c.support is None for c in unchecked.citations)


def test_negated_claims_need_a_negated_source(checker: CitationChecker) -> None:
    assert not checker.check("The installer does not need Python 3.11.", PASSAGE).verified
    negative = "The installer does not need root access."
    assert checker.check("The installer does not need root access.", negative).verified


def test_uncited_supported_sentences_are_attributed(checker: CitationChecker) -> None:
    hits = [
        make_hit("billing", "Invoices are emailed on the first day of each month.", 1),
        make_hit("install", PASSAGE, 2),
    ]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000)
    out = ground("The installer needs Python 3.11. It is great.", ctx, checker)
    assert out.text == "The installer needs Python 3.11 [1]. It is great."
    assert [c.doc_id for c in out.citations] == ["install"] and out.citations[0].verified
    assert out.diagnostics["attributed"] == ["The installer needs Python 3.11."]
    assert out.diagnostics["uncited"] == ["It is great."]
    assert ground("The installer needs Python 3.11.", ctx, checker, attribute=False).citations == ()


def test_rewrite_keeps_code_indentation(checker: CitationChecker) -> None:
    hits = [make_hit("install", PASSAGE, 1)]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000)
    answer = "The installer needs Python 3.11 [1].\n```python\ndef f():\n    return  1\n```"
    out = ground(answer, ctx, checker)
    assert out.text.endswith("def f():\n    return  1\n```")


# ------------------------------------------------------------------------- cited code

FASTAPI_SOURCE = (  # a FastAPI page: it names pydantic, and says Annotated comes from typing
    "Request data is validated with `pydantic` models.\n"
    "To add validation, import `Query` from `fastapi` and `Annotated` from `typing`.\n\n"
    "```python\n"
    "from typing import Annotated\n\n"
    "from fastapi import FastAPI, Query\n\n"
    "app = FastAPI()\n\n\n"
    '@app.get("/items/")\n'
    "async def read_items(q: Annotated[str | None, Query(max_length=50)] = None):\n"
    '    return {"q": q}\n'
    "```\n"
)
ANSWER_CODE = (
    "```python\n"
    "from fastapi import FastAPI, Query\n"
    "from {module} import Annotated\n\n"
    "app = FastAPI()\n\n"
    '@app.get("/items/")\n'
    "async def read_items(q: Annotated[str | None, Query(max_length=50)] = None):\n"
    "    results = {{}}\n"
    "    if q:\n"
    '        results.update({{"q": q}})\n'
    "    return results\n"
    "```"
)


def test_code_blocks_belong_to_a_citing_sentence_and_hold_no_markers() -> None:
    parsed = parse_answer("Declare it so [1]:\n```python\nx = [2]\n```\nThen run it [2].", 3)
    assert [c.code for c in parsed.claims] == [("x = [2]",), ()]
    assert [m[2] for m in parsed.markers] == [(1,), (2,)]  # the [2] in the code is code
    after = parse_answer("For example:\n```\nrun(x)\n```\nThis runs it [1].", 2)
    assert [c.code for c in after.claims] == [(), ("run(x)",)]
    uncited = parse_answer("For example:\n```\nrun(x)\n```\nThis runs it.", 2)
    assert [c.code for c in uncited.claims] == [("run(x)",), ("run(x)",)]
    inline = parse_answer("Write `items = [1]` to start [2].", 2)
    assert inline.claims[0].labels == (2,) and len(inline.markers) == 1


def test_a_wrong_import_in_cited_code_is_not_verified(checker: CitationChecker) -> None:
    ctx = assemble([make_hit("query", FASTAPI_SOURCE, 1)], counter=WORDS, budget_tokens=1000)
    intro = "To add validation, import `Query` and `Annotated` [1]:\n"
    wrong = ground(intro + ANSWER_CODE.format(module="pydantic"), ctx, checker)
    assert [c.verified for c in wrong.citations] == [False]
    assert wrong.diagnostics["unsupported"][0]["missing"] == ["from pydantic import Annotated"]
    assert wrong.diagnostics["verified_claims"] == 0
    assert "from pydantic import Annotated" in wrong.text  # flagged, not rewritten
    blind = CitationChecker(HashEmbedder(), Analyzer(), CheckerSettings(check_code=False))
    assert ground(intro + ANSWER_CODE.format(module="pydantic"), ctx, blind).citations[0].verified

    right = ground(intro + ANSWER_CODE.format(module="typing"), ctx, checker)
    assert [c.verified for c in right.citations] == [True]
    assert right.diagnostics["unsupported"] == []
    assert right.text.endswith('        results.update({"q": q})\n    return results\n```')


def test_import_claims_in_prose_and_inline_code_are_checked(checker: CitationChecker) -> None:
    wrong = checker.check("To add validation, import `Annotated` from `pydantic`.", FASTAPI_SOURCE)
    assert not wrong.verified and "`Annotated` from `pydantic`" in wrong.missing
    right = checker.check("To add validation, import `Annotated` from `typing`.", FASTAPI_SOURCE)
    assert right.verified, right.missing
    inline = checker.check(
        "To add validation, use `from pydantic import Annotated` and `Query`.", FASTAPI_SOURCE
    )
    assert not inline.verified and "from pydantic import Annotated" in inline.missing
    invented = checker.check("To add validation, use `Query(max_len=50)`.", FASTAPI_SOURCE)
    assert "max_len" in invented.missing
    # every word of the wrong claim is in the source: only the code check catches it
    off = CitationChecker(HashEmbedder(), Analyzer(), CheckerSettings(check_code=False))
    assert off.check(
        "To add validation, import `Annotated` from `pydantic`.", FASTAPI_SOURCE
    ).verified


def test_uncited_code_must_be_backed_by_the_attributed_source(checker: CitationChecker) -> None:
    ctx = assemble([make_hit("query", FASTAPI_SOURCE, 1)], counter=WORDS, budget_tokens=1000)
    intro = "To add validation, import `Query` and `Annotated`:\n"  # no marker: attributed
    right = ground(intro + ANSWER_CODE.format(module="typing"), ctx, checker)
    assert right.diagnostics["attributed"] == [intro.strip()]
    assert [c.verified for c in right.citations] == [True]
    wrong = ground(intro + ANSWER_CODE.format(module="pydantic"), ctx, checker)
    assert wrong.citations == () and wrong.diagnostics["attributed"] == []


def test_names_in_the_sources_heading_path_count_as_backed(checker: CitationChecker) -> None:
    body = (
        "The argument allow_credentials indicates that cookies should be supported for "
        "cross-origin requests."
    )
    claim = (
        "The CORSMiddleware argument allow_credentials indicates that cookies should be "
        "supported for cross-origin requests."
    )
    hit = make_hit("cors", body, 1, path=("CORS", "Use CORSMiddleware"))
    ctx = assemble([hit], counter=WORDS, budget_tokens=1000)
    out = ground(claim + " [1]", ctx, checker)
    assert [c.verified for c in out.citations] == [True]
    # without the heading the name is unbacked
    assert checker.check(claim, body).missing == ("CORSMiddleware",)
    other = make_hit("cors", body, 1, path=("CORS", "Use GZipMiddleware"))
    ctx_other = assemble([other], counter=WORDS, budget_tokens=1000)
    assert [c.verified for c in ground(claim + " [1]", ctx_other, checker).citations] == [False]


def test_checker_settings_follow_the_embedder() -> None:
    from ragstrata.generate.citations import CALIBRATED_CHECKER, checker_settings_for

    assert checker_settings_for("minilm-onnx:all-MiniLM-L6-v2") == CheckerSettings()
    e5 = checker_settings_for("e5-onnx:multilingual-e5-small")
    assert e5 == CALIBRATED_CHECKER["e5-onnx"] and e5.threshold > CheckerSettings().threshold
    assert CitationChecker(HashEmbedder(), Analyzer()).settings == CheckerSettings()


def test_method_names_match_without_their_dot_and_parentheses(checker: CitationChecker) -> None:
    from ragstrata.generate.citations import identifier_forms

    assert identifier_forms(".add_task()") == (".add_task()", "add_task")
    assert identifier_forms("get_db") == ("get_db",)
    body = "Call background_tasks.add_task(write_log, message) to run write_log after the response."
    claim = "Call the `.add_task()` method to run write_log after the response."
    assert checker.check(claim, body).missing == ()
    assert checker.check(claim.replace("add_task", "add_job"), body).missing == (".add_job()",)


def test_capitalized_names_may_come_from_the_same_documents_other_sources(
    checker: CitationChecker,
) -> None:
    intro = "FastAPI provides CORSMiddleware to handle cross-origin requests."
    body = "max_age sets how long browsers cache the responses; it defaults to 600 seconds."
    claim = "In FastAPI, max_age sets how long browsers cache the responses, 600 seconds."
    same = assemble(
        [make_hit("cors", intro, 1), make_hit("cors", body, 2, start=500)],
        counter=WORDS,
        budget_tokens=1000,
    )
    out = ground(claim + " [2]", same, checker)
    assert out.diagnostics["unsupported"] == [], out.diagnostics
    # the name in another document's source does not back it
    other = assemble(
        [make_hit("gzip", intro, 1), make_hit("cors", body, 2, start=500)],
        counter=WORDS,
        budget_tokens=1000,
    )
    bad = ground(claim + " [2]", other, checker)
    assert bad.diagnostics["unsupported"][0]["missing"] == ["FastAPI"]
    # numbers and identifiers still have to be in the cited source itself
    moved = assemble(
        [
            make_hit("cors", intro + " It defaults to 900 seconds.", 1),
            make_hit("cors", body, 2, start=500),
        ],
        counter=WORDS,
        budget_tokens=1000,
    )
    changed = ground(claim.replace("600", "900") + " [2]", moved, checker)
    assert "900" in changed.diagnostics["unsupported"][0]["missing"]


def test_heading_words_count_toward_coverage(checker: CitationChecker) -> None:
    # the model is shown each source with its section; a claim may name it
    body = "max_age sets how long browsers cache the responses; it defaults to 600 seconds."
    claim = "The CORSMiddleware option max_age defaults to 600 seconds."
    bare = checker.check(claim, body)
    headed = checker.check(claim, body, heading="CORS\nUse CORSMiddleware")
    assert "CORSMiddleware" in bare.missing and headed.missing == ()
    assert headed.coverage > bare.coverage


def test_a_mis_numbered_citation_moves_to_the_source_that_supports_it(
    checker: CitationChecker,
) -> None:
    other = "The service listens on port 8000 unless configured otherwise."
    ctx = assemble(
        [make_hit("svc", other, 1), make_hit("guide", PASSAGE, 2)],
        counter=WORDS,
        budget_tokens=1000,
    )
    answer = "The installer needs Python 3.11 and four gigabytes of memory [1]."
    out = ground(answer, ctx, checker)
    assert out.diagnostics["reattributed"] == [
        "The installer needs Python 3.11 and four gigabytes of memory."
    ]
    assert [c.doc_id for c in out.citations] == ["guide"] and out.citations[0].verified
    assert out.diagnostics["unsupported"] == [] and out.grounding.verified_claims == 1
    # a claim no source supports keeps its citation, flagged
    wrong = ground("The installer needs Python 2.7 [1].", ctx, checker)
    assert wrong.diagnostics["reattributed"] == [] and not wrong.citations[0].verified
    # without attribution nothing moves
    assert ground(answer, ctx, checker, attribute=False).diagnostics["reattributed"] == []


def test_references_to_the_sources_are_not_part_of_the_claim() -> None:
    from ragstrata.generate.citations import claim_content

    assert claim_content("The default is 0.12, as stated in the source.") == "The default is 0.12."
    assert claim_content("Según la fuente 2, el valor es 3.") == "el valor es 3."
    assert claim_content("El valor es 1.2, como se menciona en la fuente.") == "El valor es 1.2."
    assert claim_content("The source code is open.") == "The source code is open."
    assert claim_content("As stated in the source.") == "As stated in the source."


def test_pointer_sentences_never_count_as_verified_claims(checker: CitationChecker) -> None:
    from ragstrata.generate.citations import is_pointer

    assert is_pointer("This can be found in the table under the Error codes section.")
    assert is_pointer("Este valor se encuentra en la línea 3 del documento.")
    assert not is_pointer("Se encuentra en el archivo /etc/default/grub.")
    assert not is_pointer("The default value is 60.")
    body = "## Error codes\n\nThe table of error codes can be found in this section."
    ctx = assemble(
        [make_hit("errors", body, 1, path=("Service", "Error codes"))],
        counter=WORDS,
        budget_tokens=1000,
    )
    answer = "Error RS999 means the disk is full. This can be found in the table of error codes."
    # the pointer passes the lexical test against the section it names
    assert checker.check("This can be found in the table of error codes.", body).verified
    out = ground(answer, ctx, checker)
    assert out.grounding.verified_claims == 0 and out.diagnostics["attributed"] == []


def test_a_bold_sentence_ends_at_its_stop() -> None:
    """Trial 25 (2026-12-06): "**... al año.** [5] Las ..." was one claim citing [5, 2],
    which neither source supports whole: a correct answer became a refusal."""
    parsed = parse_answer(
        "**Cada empleado tiene derecho a 23 días laborables de vacaciones al año.** [5] Las "
        "vacaciones se solicitan con 15 días de antelación en el portal Kairos. [2]",
        5,
    )
    assert [(c.text, c.labels) for c in parsed.claims] == [
        ("Cada empleado tiene derecho a 23 días laborables de vacaciones al año.", (5,)),
        ("Las vacaciones se solicitan con 15 días de antelación en el portal Kairos.", (2,)),
    ]
    quoted = parse_answer('Dice «Está en la guía.» Luego sigue [1]. Fin de "la cita." [1]', 1)
    assert len(quoted.claims) == 3


def test_an_out_of_range_marker_is_replaced_once(checker: CitationChecker) -> None:
    """Trial 25 (2026-12-06): "... al año [7]." with 5 sources read "... al año [1] [1]."."""
    hits = [
        make_hit("billing", "Invoices are emailed on the first day of each month.", 1),
        make_hit("install", PASSAGE, 2),
    ]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000)
    out = ground("The installer needs Python 3.11 [7].", ctx, checker)
    assert out.text == "The installer needs Python 3.11 [1]."
    assert out.diagnostics["invalid_labels"] == [7] and out.diagnostics["attributed"]


@pytest.mark.parametrize(
    "claim",
    [
        "Ningún empleado tiene derecho a 23 días de vacaciones.",
        "Nadie tiene derecho a 23 días de vacaciones.",
        "Neither 200 nor 204 responses may have a body.",
        "Nobody needs Python 3.11.",
        "No hay vacaciones ni permisos.",
    ],
)
def test_negation_words_of_both_languages(claim: str) -> None:
    """A re-test of trial 25 (2026-12-06): "Ningún empleado ..." and "Neither 200 nor 204
    ..." were verified against sources that say the opposite."""
    from ragstrata.generate.citations import _negated

    assert _negated(claim)
    assert not _negated("Cada empleado tiene derecho a 23 días de vacaciones.")


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("The default value is None.", False),
        ("The default value is `None`.", False),
        ("Pass `not_found=True` or `not x`.", False),
        ("None of the options apply.", True),
        ("NONE of the options apply.", True),
        ("There were none left.", True),
    ],
)
def test_python_none_and_inline_code_are_no_negation(text: str, negated: bool) -> None:
    """Review 47: "`None`" (on most FastAPI pages) read as the word "none"."""
    from ragstrata.generate.citations import _negated

    assert _negated(text) is negated


def test_remove_mode_takes_a_dropped_sentences_code_and_keeps_headings(
    checker: CitationChecker,
) -> None:
    """A review (2026-12-06): remove mode dropped a sentence but kept the unbacked code block
    it vouched for, orphaned, and deleted a heading as an uncited sentence."""
    hits = [
        make_hit("billing", "Invoices are emailed on the first day of each month.", 1),
        make_hit("install", PASSAGE, 2),
    ]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000)
    answer = (
        "The installer needs Python 3.11 [2].\n\n"
        "Usa este archivo de configuración [1]:\n```yaml\nport: 9999\nhost: evil.example\n```\n\n"
        "## Configuración del puerto\n\n"
        "Invoices arrive every day at noon [1]."
    )
    removed = ground(answer, ctx, checker, unsupported="remove")
    assert removed.text == "The installer needs Python 3.11 [1].\n\n## Configuración del puerto"


# --- review 29 (2026-12-06): the answer's sentence split, numbers, negation, markers, names


@pytest.mark.parametrize(
    "answer",
    [
        "Las aprueba la Dra. Marta López, directora de personas [1].",
        "Refunds are handled by the sales team, e.g. by Mr. John Smith [1].",
        "El fármaco redujo la mortalidad un 50 %, p. ej. en el ensayo clínico [1].",
        "La sede está en EE. UU. desde 2019 [1].",
        "The U.S. government funded it, i.e. the agency did [1].",
        "Se aplica a pedidos, devoluciones, etc. y a las facturas [1].",
    ],
)
def test_an_abbreviation_does_not_end_a_claim(answer: str) -> None:
    """The passages' sentence rule (``continues_sentence``): one claim, its marker where the
    model put it; before, each abbreviation cut the sentence and only its tail was checked."""
    parsed = parse_answer(answer, 1)
    assert len(parsed.claims) == 1 and parsed.claims[0].labels == (1,)
    assert parsed.claims[0].text == answer.replace(" [1]", "")


def test_a_wrong_name_after_a_title_is_caught(checker: CitationChecker) -> None:
    source = "Las solicitudes de más de 10 días las aprueba la Dra. Marta López."
    assert checker.check("Las aprueba la Dra. Marta López.", source).verified
    wrong = checker.check("Las aprueba la Dra. Ana López.", source)
    assert not wrong.verified and "Ana" in wrong.missing
    assert "Bob" in claim_names("Refunds are handled by Mr. Bob Smith.")
    assert "Then" not in claim_names("It is done. Then it stops.")


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        ("Install v2.2.0 of the package.", "Install v2.1.0 of the package."),
        ("The image needs Python3.12 to build.", "The image needs Python3.11 to build."),
        ("The server needs 8GB of memory.", "The server needs 4GB of memory."),
        ("Requests time out after 500ms.", "Requests time out after 100ms."),
        ("El servidor necesita 16GB de RAM.", "El servidor necesita 8GB de RAM."),
    ],
)
def test_numbers_written_against_letters_are_checked(
    checker: CitationChecker, claim: str, source: str
) -> None:
    assert not checker.check(claim, source).verified
    assert checker.check(source, source).verified


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        ("The API allows 1000 requests per minute.", "The API allows 1,000 requests per minute."),
        ("La API admite 1000 peticiones por minuto.", "La API admite 1.000 peticiones por minuto."),
        ("The API allows 1,000 requests per minute.", "The API allows 1000 requests per minute."),
        ("Backups run at 2:00 every night.", "Backups run at 02:00 every night."),
        ("Backups run at 02:00 every night.", "Backups run at 2:00 every night."),
    ],
)
def test_a_number_written_another_way_is_the_same_number(
    checker: CitationChecker, claim: str, source: str
) -> None:
    assert checker.check(claim, source).verified
    assert not checker.check(claim, source.replace("1", "7").replace("2", "3")).verified


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        ("Refunds are available after 30 days.", "Refunds are not available after 30 days."),
        ("Refunds aren’t available after 30 days.", "Refunds are available after 30 days."),
        (
            "El plan gratuito incluye soporte telefónico.",
            "El plan gratuito no incluye soporte telefónico.",
        ),
        ("Se pueden acumular vacaciones de un año.", "No se pueden acumular vacaciones de un año."),
        # review 47: Python's `None` counted as a negation word in the source
        (
            "The query parameter q is not optional.",
            "The query parameter q is optional, with a default value of `None`.",
        ),
        (
            "El parámetro q no es opcional.",
            "El parámetro q es opcional, con valor por defecto None.",
        ),
    ],
)
def test_a_claim_that_drops_or_adds_the_sources_negation_is_not_verified(
    checker: CitationChecker, claim: str, source: str
) -> None:
    check = checker.check(claim, source)
    assert not check.verified and "(negation)" in check.missing


def test_a_negation_elsewhere_in_the_source_sentence_does_not_deny_the_claim(
    checker: CitationChecker,
) -> None:
    source = "El plan gratuito incluye tres proyectos y no incluye soporte telefónico."
    assert checker.check("El plan gratuito incluye tres proyectos.", source).verified
    # a claim that negates with "without"/"sin" is not the opposite of a negated source
    assert (
        checker.check(
            "The setup runs without root access.", "The setup does not need root access."
        ).missing
        == ()
    )
    assert checker.check(
        "Refunds aren’t available after 30 days.", "Refunds aren't available after 30 days."
    ).verified


@pytest.mark.parametrize(
    ("marker", "labels"),
    [
        ("[1-3]", [1, 2, 3]),
        ("[2–4]", [2, 3, 4]),
        ("[Fuente 1-2]", [1, 2]),
        ("[1-500]", list(range(1, 21))),
    ],
)
def test_a_range_marker_stands_for_each_label(marker: str, labels: list[int]) -> None:
    assert marker_labels(marker) == labels
    parsed = parse_answer(f"Tienes 23 días de vacaciones al año {marker}.", 30)
    assert parsed.claims[0].labels == tuple(labels)
    assert parsed.claims[0].text == "Tienes 23 días de vacaciones al año."


def test_a_list_of_markers_is_rewritten_without_its_commas(checker: CitationChecker) -> None:
    hits = [
        make_hit("db", "The service uses PostgreSQL 15 and Redis for its queues.", 1),
        make_hit("other", "Invoices are emailed monthly.", 2),
        make_hit("db2", "The service uses PostgreSQL 15 and Redis.", 3),
    ]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000)
    out = ground("The service uses PostgreSQL 15 and Redis [1], [3].", ctx, checker)
    assert out.text == "The service uses PostgreSQL 15 and Redis [1][2]."
    assert parse_answer("It uses Redis [1], [3].", 3).claims[0].text == "It uses Redis."
    doubled = ground("The service uses PostgreSQL 15 and Redis [[1]].", ctx, checker)
    assert doubled.text == "The service uses PostgreSQL 15 and Redis [1].", doubled.text


def test_names_match_without_accents_and_in_any_unicode_form(checker: CitationChecker) -> None:
    source = "La empresa la fundó en 2019 José Muñoz en Málaga."
    assert (
        checker.check("The company was founded in 2019 by Jose Munoz in Malaga.", source).missing
        == ()
    )
    hits = [make_hit("es", source, 1)]
    ctx = assemble(hits, counter=WORDS, budget_tokens=1000)
    decomposed = "La empresa la fundó en 2019 Jose\u0301 Mun\u0303oz en Ma\u0301laga [1]."
    out = ground(decomposed, ctx, checker)
    assert out.citations[0].verified and "José Muñoz" in out.text
    # a lone surrogate (a JSON escape from a server) is replaced, not a crash
    assert ground("La empresa la fundó en 2019 \ud800 José Muñoz [1].", ctx, checker).citations


@pytest.mark.parametrize(
    ("claim", "source", "verified"),
    [
        ("The free plan includes five projects.", "The free plan includes three projects.", False),
        (
            "El plan gratuito incluye cinco proyectos.",
            "El plan gratuito incluye tres proyectos.",
            False,
        ),
        ("The free plan includes 3 projects.", "The free plan includes three projects.", True),
        ("The free plan includes three projects.", "The free plan includes 3 projects.", True),
        ("El plan incluye tres proyectos.", "El plan incluye 3 proyectos.", True),
    ],
)
def test_numbers_written_as_words_are_checked(
    checker: CitationChecker, claim: str, source: str, verified: bool
) -> None:
    assert checker.check(claim, source).verified is verified


def test_a_negation_in_a_neighbouring_sentence_of_the_evidence_denies_nothing(
    checker: CitationChecker,
) -> None:
    """Measured on eval-citations' sample: a copied sentence was refused for the tip after it,
    "Notice that you are not passing the router itself ..." (two words shared after "not")."""
    claim = (
        "Now use the parameter `callbacks` in your decorator to pass the attribute `.routes` "
        "of the router."
    )
    for source in (
        claim + " Notice that you are not passing the router itself to `callbacks=`.",
        claim[:-1] + ":\n\n/// tip\n\nNotice that you are not passing the router itself.",
        "#### The router is not passed {/*not-passed*/}\n\n" + claim,
    ):
        assert "(negation)" not in checker.check(claim, source).missing, source


def test_spanish_ten_is_no_number_and_a_repeated_word_denies_nothing(
    checker: CitationChecker,
) -> None:
    """The cross-lingual bench: "Ten en cuenta que ..." (keep in mind) needed a 10; "no son JSON
    a JSON" denied "Converting non-JSON bodies to JSON" with one term counted twice."""
    assert claim_numbers("Ten en cuenta que la lista no se revisa.") == set()
    assert claim_numbers("It takes ten minutes and twelve steps.") == {"12"}
    claim = "Convierte cuerpos de request a JSON con `msgpack`."
    source = "Convierte cuerpos de request que no son JSON a JSON con `msgpack`."
    assert "(negation)" not in checker.check(claim, source).missing


def test_an_llm_citation_carries_the_pages_of_its_quote(checker: CitationChecker) -> None:
    """Review 39: extractive citations named their pages, an LLM's never did (a PDF answer
    showed no "p. N")."""
    import dataclasses

    text = (
        "The backup runs every night at two in the morning. "
        "Nightly backups are kept for thirty days on the archive server."
    )
    hit = make_hit("manual", text, 1)
    paged = dataclasses.replace(
        hit.chunk, page_start=3, page_end=4, page_breaks=(text.index("Nightly"),)
    )
    context = assemble([dataclasses.replace(hit, chunk=paged)], counter=WORDS, budget_tokens=500)
    grounded = ground("Nightly backups are kept for thirty days [1].", context, checker)
    (citation,) = grounded.citations
    assert (citation.page_start, citation.page_end) == (4, 4)
    unchecked = ground("Backups are kept [1].", context, None).citations[0]
    assert (unchecked.page_start, unchecked.page_end) == (3, 4)  # the chunk's range


def test_a_quote_over_two_chunks_of_a_section_is_cut_to_the_chunk_it_names() -> None:
    """Review 39: in an expanded section the evidence window could straddle two chunks while
    the citation named only the first."""
    from ragstrata.assemble.context import Source
    from ragstrata.generate.citations import Support, _citation

    first, second = "Add the task with add_task.", "It takes the function and its arguments."
    a = make_hit("tasks", first, 1).chunk
    b = make_hit("tasks", second, 2, start=28).chunk
    passage = f"{first} {second}"
    source = Source(
        1,
        make_hit("tasks", first, 1),
        passage,
        passage,
        0,
        len(passage),
        True,
        "tasks.md",
        ((0, len(first), a), (len(first) + 1, len(passage), b)),
    )
    support = Support(True, 0.9, 0.9, 1.0, (), (0, len(passage)))
    citation = _citation(1, source, support, True)
    assert citation.chunk_id == a.chunk_id and citation.quote == first
