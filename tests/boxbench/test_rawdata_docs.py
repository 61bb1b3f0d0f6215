from boxbench.rawdata import docs, schema


def test_the_documented_tables_are_the_schema():
    text = docs.DOC.read_text()
    assert docs.with_tables(text, docs.render()) == text, (
        "docs/raw-data.md differs from the schema: run "
        '`python manage.py shell -c "from boxbench.rawdata import docs; docs.write()"`'
    )


def test_the_documented_line_limits_are_the_schema_limits():
    text = docs.DOC.read_text()
    assert f"({schema.MAX_HEADER_BYTES:,} bytes)" in text
    assert f"({schema.MAX_LINE_BYTES:,} bytes)" in text


def test_the_lengths_and_ranges_come_from_the_columns():
    table = docs.render()
    assert "| `batch` | string | at most 100 characters |" in table
    assert "| `round` | integer | 1 to 32,767 |" in table
    assert "| `seq` | integer | 1 to 2,147,483,647 |" in table
