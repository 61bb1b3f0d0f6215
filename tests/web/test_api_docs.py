"""The API is findable: /api/v1/ names its OpenAPI description and a page that renders it for
people, generated from that same description and served from here."""

import re

import pytest

from boxbench import api_docs, api_schema

pytestmark = pytest.mark.django_db


def test_the_index_names_the_openapi_description_and_the_docs_page(client, db):
    index = client.get("/api/v1/").json()
    assert index["openapi"] == "/api/v1/openapi.json" and index["docs"] == "/api/v1/docs/"
    assert {"/api/v1/openapi.json", "/api/v1/docs/"} <= set(index["endpoints"])
    assert client.get(index["openapi"]).json()["openapi"].startswith("3.1")
    assert client.get(index["docs"])["Content-Type"].startswith("text/html")


def test_the_docs_page_shows_every_endpoint_and_schema_of_the_description(client, db):
    described = client.get("/api/v1/openapi.json").json()
    page = client.get("/api/v1/docs/").content.decode()
    for path in described["paths"]:
        assert f"<code>GET {path}</code>" in page, path
    for name in described["components"]["schemas"]:
        assert f'id="schema-{name}"' in page, name
    row = page[page.index('id="schema-CompareRow"') :]
    row = row[: row.index("</section>")]
    assert "<td><code>ratio</code></td><td>number or null</td>" in row
    compare = page[page.index('id="endpoint-api-v1-compare"') :]
    assert 'Answer: <a href="#schema-CompareAnswer">CompareAnswer</a>' in compare


def test_the_docs_page_loads_nothing_from_elsewhere(client, db):
    page = client.get("/api/v1/docs/").content.decode()
    assert not re.search(r'(src|href)="(https?:)?//', page)


def test_the_footer_links_the_api_docs(client, db):
    footer = client.get("/").content.decode().split('id="site-index"')[1]
    assert 'href="/api/v1/docs/"' in footer and 'href="/api/v1/"' in footer


@pytest.mark.parametrize(
    "schema,words",
    [
        ({"type": "string"}, "text"),
        ({"anyOf": [{"type": "number"}, {"type": "null"}]}, "number or null"),
        ({"type": "array", "items": {"$ref": "#/components/schemas/Row"}}, "array of Row"),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            "object of text to integer",
        ),
        ({"enum": ["time", "cost"]}, 'one of "time", "cost"'),
        (
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            "list of (text, integer)",
        ),
        ({}, "any JSON value"),
    ],
)
def test_a_type_reads_as_words(schema, words):
    assert "".join(text for text, _ in api_docs.type_pieces(schema)) == words


def test_a_schemas_name_links_to_its_entry():
    pieces = api_docs.type_pieces({"type": "array", "items": {"$ref": "#/components/schemas/Row"}})
    assert pieces == [("array of ", ""), ("Row", "Row")]


def test_the_reference_holds_each_endpoint_once_with_its_parameters():
    reference = api_docs.reference(api_schema.openapi())
    paths = [e["path"] for e in reference["endpoints"]]
    assert len(paths) == len(set(paths)) == len(api_schema.ENDPOINTS)
    compare = next(e for e in reference["endpoints"] if e["path"] == "/api/v1/compare")
    assert [(p["name"], p["required"]) for p in compare["parameters"]] == [
        ("a", True),
        ("b", True),
        ("benchmark", False),
        ("page", False),
    ]
