"""The fields of a PubmedArticle cut out at their tags and parsed alone (pubmed_xml._cut_fields) read exactly what
parsing the whole record reads, whatever the markup (CDATA, entities, nested inline elements, quoted ">" in
attributes, self-closing tags, records across read chunks), and a broken record is still refused with its file and
position; what the cut does not check (the XML of the parts it skips, beyond their tags' balance) is pinned too."""

import pytest

from bioptimus_hf.corpus import pubmed_xml
from bioptimus_hf.corpus.pubmed_xml import Citation, Deletion, Malformed, PubmedFileError, read_pubmed_file
from bioptimus_hf.testing.pubmed_files import FOOTER, HEADER, Record, delete_xml, record_xml, write_pubmed_file


def read_whole(path, monkeypatch):
    """What the file reads as when every record is parsed whole (the reference)."""
    with monkeypatch.context() as patch:
        patch.setattr(pubmed_xml, "_cut_fields", lambda batch, start, end: None)
        return list(read_pubmed_file(path))


def edited(record: Record, *replacements, shape="text") -> str:
    xml = record_xml(record, shape)
    for old, new in replacements:
        assert old in xml, old
        xml = xml.replace(old, new, 1)
    return xml


def write(path, records_xml):
    path.write_text(HEADER + "".join(records_xml) + FOOTER, encoding="utf-8")
    return path


SECTIONS = [("BACKGROUND", "BACKGROUND", "Some <i>words</i>."), (None, None, "More   words\n here.")]
MARKUP = [
    # CDATA with an end tag and "<" inside, in a section
    edited(Record(1, "CDATA", SECTIONS), ("Some <i>words</i>.", "<![CDATA[a < b </Abstract> c]]> d")),
    # entities and character references in the title and a section
    edited(Record(2, "A &amp; B &lt;i&gt; &#945;&#x3B2;", [(None, None, "x &gt; y")])),
    # nested inline markup and MathML
    edited(Record(3, "Ca<sup>2<i>+</i></sup> <mml:math xmlns:mml='m'><mml:mi>x</mml:mi></mml:math> flux", SECTIONS)),
    # a quoted ">" in attribute values, single-quoted attributes, white space in tags
    edited(
        Record(4, "Title", SECTIONS),
        ('Label="BACKGROUND"', "Label='A>B' "),
        ("<ArticleTitle>", '<ArticleTitle  Book="x>y" >'),
        ('<PMID Version="1">4</PMID>', "<PMID\n Version = '2' >4</PMID >"),
    ),
    # self-closing fields: an empty title, an empty abstract, an empty language
    edited(
        Record(5, "gone", [(None, None, "gone")], languages=("eng", "")),
        ("<ArticleTitle>gone</ArticleTitle>", "<ArticleTitle/>"),
        ("<Language></Language>", "<Language />"),
    ),
    edited(Record(6, "Title"), ("<Journal>", "<Abstract/><Journal>")),
    # a comment and a processing instruction (not in the DTD: read whole)
    edited(Record(7, "Title <!-- a comment -->here", SECTIONS), ("<PMID", "<?pi data?><PMID")),
    # a field twice: read whole (the first one counts)
    edited(Record(8, "First", SECTIONS), ("</ArticleTitle>", "</ArticleTitle><ArticleTitle>Second</ArticleTitle>")),
    # several languages; the year from a MedlineDate, from ArticleDate when PubDate has none
    record_xml(Record(9, "Langs", SECTIONS, languages=("eng", "fre"), medline_date="1998 Dec-1999 Jan")),
    edited(
        Record(10, "Dated", SECTIONS, year=None),
        ("</Article>", "<ArticleDate><Year>2003</Year></ArticleDate></Article>"),
    ),
    # a PMID that is not a number, and none: malformed
    record_xml(Record("12a", "Bad", SECTIONS)),
    edited(Record(13, "NoPMID", SECTIONS), ('<PMID Version="1">13</PMID>', "")),
    # a full record, a book, a deletion
    record_xml(Record(14, "Full <b>shape</b>", SECTIONS, version=3), "full"),
    record_xml(Record(15, "Book", SECTIONS, book=True)),
    delete_xml([1, 2]),
]


def test_the_cut_fields_read_what_the_whole_record_reads(tmp_path, monkeypatch):
    path = write(tmp_path / "pubmed25n0001.xml", MARKUP)
    cut, real_cut = [], pubmed_xml._cut_fields

    def watched(*span):
        fields = real_cut(*span)
        cut.append(fields is not None)
        return fields

    monkeypatch.setattr(pubmed_xml, "_cut_fields", watched)
    read = list(read_pubmed_file(path))
    monkeypatch.undo()
    # read whole: CDATA (1), a comment and a PI (7), a field twice (8), the book, the deletion
    assert [n for n, done in enumerate(cut, 1) if not done] == [1, 7, 8, 14, 15]
    assert read == read_whole(path, monkeypatch)
    by_pmid = {item.pmid: item for item in read if isinstance(item, Citation)}
    assert by_pmid[1].abstract == "BACKGROUND: a < b </Abstract> c d More words here."
    assert by_pmid[2].title == "A & B <i> αβ" and by_pmid[2].abstract == "x > y"
    assert by_pmid[3].title == "Ca2+ x flux"
    assert by_pmid[4].version == 2 and by_pmid[4].abstract.startswith("A>B: Some words.")
    assert (by_pmid[5].title, by_pmid[5].abstract, by_pmid[5].languages) == ("", "gone", ["eng"])
    assert by_pmid[6].abstract == ""
    assert by_pmid[7].title == "Title here"
    assert by_pmid[8].title == "First"
    assert (by_pmid[9].languages, by_pmid[9].year) == (["eng", "fre"], 1998)
    assert by_pmid[10].year == 2003
    assert [(m.record, m.reason) for m in read if isinstance(m, Malformed)] == [
        (11, "PubmedArticle: PMID '12a' is not a number"),
        (12, "PubmedArticle: no PMID"),
    ]
    assert (by_pmid[14].title, by_pmid[14].version) == ("Full shape", 3)
    assert by_pmid[15].title == "Book"
    assert [(d.pmid, d.record) for d in read if isinstance(d, Deletion)] == [(1, 15), (2, 15)]


def test_fields_split_across_read_chunks_read_the_same(tmp_path, monkeypatch):
    path = write_pubmed_file(
        tmp_path / "pubmed25n0001.xml.gz",
        [Record(i, f"Title {i} <i>x</i>", SECTIONS) for i in range(1, 40)],
        deletions=[5],
        shape="full",
    )
    whole = list(read_pubmed_file(path))
    monkeypatch.setattr(pubmed_xml, "_CHUNK_BYTES", 101)  # every field's tags across chunk boundaries
    monkeypatch.setattr(pubmed_xml, "_READ_BYTES", 37)
    assert list(read_pubmed_file(path)) == whole == read_whole(path, monkeypatch)
    assert len(whole) == 40


@pytest.mark.parametrize(
    "old, new, reason",
    [
        ("<LastName>", "<LastName><Open>", "mismatched tag"),  # an element never closed, in the authors
        ("</ArticleTitle>", "</Title>", "mismatched tag"),  # a field's end tag wrong
        ("x &gt; y", "x &bogus; y", "undefined entity"),  # a field's entity unknown
    ],
)
def test_a_broken_record_is_refused_with_its_file_and_position(tmp_path, old, new, reason):
    records = [record_xml(Record(i, "Title", [(None, None, "x &gt; y")])) for i in range(1, 6)]
    records[3] = records[3].replace(old, new)  # the 4th record, on the file's 7th line
    path = write(tmp_path / "pubmed25n0001.xml", records)
    read = []
    with pytest.raises(PubmedFileError) as stopped:
        read.extend(read_pubmed_file(path))
    assert [item.pmid for item in read] == [1, 2, 3]
    assert stopped.value.path == path and stopped.value.position == "after record 3, XML line 7"
    assert reason in stopped.value.reason


def test_what_the_cut_does_not_check_a_mismatched_name_in_a_part_it_skips(tmp_path, monkeypatch):
    # An end tag naming another element, its tags balanced, among the authors: read (the whole parse refuses it).
    records = [edited(Record(1, "Title", SECTIONS), ("</LastName>", "</ForeName>"))]
    path = write(tmp_path / "pubmed25n0001.xml", records)
    assert [item.pmid for item in read_pubmed_file(path)] == [1]
    with pytest.raises(PubmedFileError, match="mismatched tag"):
        read_whole(path, monkeypatch)
