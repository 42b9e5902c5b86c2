"""`bloomcast-py estimate`: the Rust verb's lines and JSON, byte for byte (the expected
text was printed by `bloomcast estimate` on the same filters), its refusals and codes."""

import json

import pytest

from bloomcast_client.cli import main
from bloomcast_client.estimate import overlap, round_half_away
from conftest import hour_filter


def saved(tmp_path, name, ids, m=28756, k=7, count=None):
    f = hour_filter(ids, m, k)
    path = tmp_path / name
    path.write_text(json.dumps({"hour": "2026-11-27T05:00:00Z", "complete": False,
                                "count": len(ids) if count is None else count, "m": m,
                                "k": k, "hash": "sha1-km32", "fpp": 0.01,
                                "filter": f.hex()}))
    return path, f


@pytest.fixture
def two_hours(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    saved(tmp_path, "a.json", ["user:1", "user:2", "user:3"])
    _, b = saved(tmp_path, "b.json", [f"user:{i}" for i in range(1, 6)])
    return b


def test_two_saved_hours_print_the_rust_verbs_lines(two_hours, capsys):
    assert main(["estimate", "--intersect", "a.json", "b.json"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "A               a.json",
        "  count          3",
        "  estimated      3.0",
        "B               b.json",
        "  count          5",
        "  estimated      5.0",
        "shape            m=28756 k=7 sha1-km32",
        "union (est.)     5.0",
        "intersection     3.0",
        "jaccard          0.5999",
    ]


def test_json_is_the_rust_verbs_object_byte_for_byte(two_hours, capsys):
    assert main(["estimate", "--json", "--intersect", "a.json", "b.json"]) == 0
    assert capsys.readouterr().out == (
        '{"a":{"count":3,"estimated_count":3.0,"fill":0.0007302823758519961,'
        '"hash":"sha1-km32","k":7,"m":28756,"source":"a.json"},'
        '"b":{"count":5,"estimated_count":5.0,"fill":0.0012171372930866603,'
        '"hash":"sha1-km32","k":7,"m":28756,"source":"b.json"},'
        '"intersection":3.0,"jaccard":0.5998538427093901,"union":5.0}\n')


def test_raw_hex_and_binary_files_need_m_and_k(two_hours, tmp_path, capsys):
    (tmp_path / "b.hex").write_text(two_hours.hex() + "\n")
    (tmp_path / "b.bin").write_bytes(bytes(two_hours.data))
    assert main(["estimate", "--intersect", "b.hex", "a.json"]) == 1
    assert capsys.readouterr().err == (
        "bloomcast-py: b.hex is not a JSON document; a raw hex or binary filter needs "
        "--m and --k\n")
    assert main(["estimate", "--json", "--intersect", "b.bin", "b.hex",
                 "--m", "28756", "--k", "7"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["a"]["count"], doc["b"]["count"]) == (None, None)
    assert (doc["union"], doc["intersection"], doc["jaccard"]) == (5.0, 5.0, 1.0)


def test_a_url_is_read_as_inspect_reads_it(two_hours, fake_server, capsys):
    server = fake_server(hours={"/2026/11/23/09": (["user:1", "user:2"], True)})
    url = f"http://{server.base}/2026/11/23/09"
    assert main(["estimate", "--intersect", url, url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"A               {url}"
    assert lines[1:3] == ["  count          2", "  estimated      2.0"]
    assert server.paths == ["/2026/11/23/09", "/2026/11/23/09"]


def test_filters_of_different_shapes_are_refused_naming_both(tmp_path, capsys,
                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    saved(tmp_path, "a.json", ["x"])
    saved(tmp_path, "small.json", ["x"], m=16, k=2)
    assert main(["estimate", "--intersect", "a.json", "small.json"]) == 1
    assert capsys.readouterr().err == (
        "bloomcast-py: cannot intersect filters of different shapes: A a.json is "
        "(m=28756, k=7, hash=sha1-km32) and B small.json is (m=16, k=2, hash=sha1-km32); "
        "only filters of the same m, k and hash combine\n")


def test_a_saturated_filter_says_nothing_can_be_known(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "full.json").write_text(json.dumps({
        "hour": "x", "complete": True, "count": 1, "m": 16, "k": 2, "hash": "sha1-km32",
        "fpp": 0, "filter": "ffff"}))
    saved(tmp_path, "empty.json", [], m=16, k=2, count=1)
    assert main(["estimate", "--intersect", "full.json", "empty.json"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "A               full.json", "  count          1",
        "  estimated      unknown (saturated filter)",
        "B               empty.json", "  count          1", "  estimated      -0.0",
        "shape            m=16 k=2 sha1-km32",
        "union (est.)     unknown (saturated filter)",
        "intersection     unknown (saturated filter)",
        "jaccard          NaN"]
    assert main(["estimate", "--json", "--intersect", "full.json", "full.json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["a"]["estimated_count"], doc["union"], doc["jaccard"]) == (None, None, None)


def test_a_missing_file_is_named_with_its_os_error(capsys):
    assert main(["estimate", "--intersect", "missing", "also-missing"]) == 1
    assert capsys.readouterr().err == (
        "bloomcast-py: cannot read missing: No such file or directory (os error 2)\n")


@pytest.mark.parametrize("argv, refusal", [
    ([], "the following required arguments were not provided:\n  --intersect <A> <B>"),
    (["--intersect"], "a value is required for '--intersect <A> <B>' but none was supplied"),
    (["--intersect", "a"], "2 values required for '--intersect <A> <B>' but 1 was provided"),
    (["--intersect", "a", "b", "c"], "unexpected argument 'c' found"),
    (["--intersect", "a", "b", "--m", "8"],
     "the following required arguments were not provided:\n  --k <K>"),
    (["--intersect", "a", "b", "--k", "3"],
     "the following required arguments were not provided:\n  --m <M>"),
    (["--intersect", "a", "b", "--m", "x", "--k", "1"],
     "invalid value 'x' for '--m <M>': invalid digit found in string"),
])
def test_command_lines_the_rust_verb_refuses_are_refused_in_its_words(argv, refusal,
                                                                       capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["estimate"] + argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.endswith(f"bloomcast-py estimate: error: {refusal}\n")


def test_the_intersection_is_clamped_to_what_is_possible_and_rounded_as_in_rust():
    # x and y set disjoint bits: |A| + |B| - |A ∪ B| is below 0, so 0.
    disjoint = overlap(hour_filter(["x"], 64, 3), hour_filter(["y"], 64, 3))
    assert (disjoint["intersection"], disjoint["jaccard"]) == (0.0, 0.0)
    same = hour_filter(["x", "y", "z"], 64, 3)
    assert overlap(same, same)["intersection"] == overlap(same, same)["a"]
    assert [round_half_away(x) for x in (0.5, 1.5, 2.5, 2.4999)] == [1.0, 2.0, 3.0, 2.0]
