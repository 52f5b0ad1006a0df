"""The graded notebook takes only answers from the student; everything else comes from the course."""
import copy

from autograder.intake.assemble import assemble

from conftest import STEP4, cell_text, load, nbgrader_meta

NAME = "01-on-paper"
RELEASE = load(STEP4.release / f"{NAME}.ipynb")
SOURCE = load(STEP4.source / f"{NAME}.ipynb")


def by_grade_id(nb, gid):
    return [c for c in nb["cells"] if nbgrader_meta(c).get("grade_id") == gid]


def student(edit=None):
    nb = copy.deepcopy(RELEASE)
    for cell in by_grade_id(nb, "shapes"):
        cell["source"] = "def shapes(T, d, d_k, d_v):\n    return {}\n"
    if edit:
        edit(nb)
    return nb


def graded(nb):
    out, notes = assemble(nb, RELEASE, SOURCE)
    return out, notes


def hidden_test(nb, gid="bonus_shapes"):
    (cell,) = by_grade_id(nb, gid)
    return cell_text(cell)


def test_answers_are_kept_and_hidden_tests_restored():
    out, notes = graded(student())
    assert cell_text(by_grade_id(out, "shapes")[0]).startswith("def shapes(T, d, d_k, d_v):\n    return {}")
    assert "hidden(\"bonus_shapes\"" in hidden_test(out)
    assert [c["id"] for c in out["cells"]] == [c["id"] for c in RELEASE["cells"]]
    assert notes == []
    assert all(c.get("outputs", []) == [] for c in out["cells"] if c["cell_type"] == "code")


def test_edited_test_cell_and_changed_points_are_restored():
    def edit(nb):
        (cell,) = by_grade_id(nb, "shapes_check")
        cell["source"] = "pass"
        cell["metadata"]["nbgrader"]["points"] = 100
    out, notes = graded(student(edit))
    (cell,) = by_grade_id(out, "shapes_check")
    assert cell_text(cell) == cell_text(by_grade_id(SOURCE, "shapes_check")[0])
    assert cell["metadata"]["nbgrader"]["points"] == 0
    assert any("shapes_check" in n and "restored" in n for n in notes)


def test_deleted_test_cell_is_put_back_in_place():
    out, notes = graded(student(lambda nb: nb["cells"].remove(by_grade_id(nb, "bonus_shapes")[0])))
    assert [c["id"] for c in out["cells"]] == [c["id"] for c in RELEASE["cells"]]
    assert any("bonus_shapes" in n and "put back" in n for n in notes)


def test_test_cell_turned_into_markdown_or_moved_is_restored_in_place():
    def edit(nb):
        cell = by_grade_id(nb, "bonus_shapes")[0]
        cell["cell_type"] = "markdown"
        nb["cells"].remove(cell)
        nb["cells"].insert(0, cell)
    out, _ = graded(student(edit))
    (cell,) = by_grade_id(out, "bonus_shapes")
    assert cell["cell_type"] == "code" and out["cells"].index(cell) == \
        [c["id"] for c in RELEASE["cells"]].index(cell["id"])


def test_flipped_flags_and_stripped_metadata_do_not_change_the_graded_cells():
    def edit(nb):
        by_grade_id(nb, "bonus_shapes")[0]["metadata"]["nbgrader"].update(grade=False, solution=True)
        by_grade_id(nb, "dot_variance_check")[0]["metadata"] = {}
    out, _ = graded(student(edit))
    assert by_grade_id(out, "bonus_shapes")[0]["metadata"]["nbgrader"]["grade"] is True
    assert by_grade_id(out, "dot_variance_check")[0]["metadata"]["nbgrader"]["locked"] is True


def test_renamed_grade_id_of_an_answer_is_matched_by_cell_id():
    def edit(nb):
        by_grade_id(nb, "shapes")[0]["metadata"]["nbgrader"]["grade_id"] = "mine"
    out, _ = graded(student(edit))
    (cell,) = by_grade_id(out, "shapes")
    assert "return {}" in cell_text(cell)
    assert not by_grade_id(out, "mine")


def test_duplicated_answer_cell_grades_the_first_copy():
    def edit(nb):
        cell = by_grade_id(nb, "shapes")[0]
        second = copy.deepcopy(cell)
        second["source"] = "def shapes(T, d, d_k, d_v):\n    return 'second'\n"
        nb["cells"].insert(nb["cells"].index(cell) + 1, second)
    out, notes = graded(student(edit))
    assert len(by_grade_id(out, "shapes")) == 1 and "return {}" in cell_text(by_grade_id(out, "shapes")[0])
    assert "'second'" not in "".join(cell_text(c) for c in out["cells"])
    assert any("more than once" in n for n in notes)


def test_answer_turned_into_markdown_is_graded_as_unanswered():
    out, notes = graded(student(lambda nb: by_grade_id(nb, "shapes")[0].update(cell_type="markdown")))
    assert "raise NotImplementedError" in cell_text(by_grade_id(out, "shapes")[0])
    assert any("changed to markdown" in n for n in notes)


def test_cells_the_student_added_stay_after_the_cell_they_followed_without_nbgrader_powers():
    def edit(nb):
        anchor = by_grade_id(nb, "shapes")[0]
        extra = {"cell_type": "code", "id": "mine-1", "metadata": {"nbgrader": {"grade": True, "grade_id": "x",
                 "points": 50, "locked": True, "solution": False}}, "source": "helper = 1", "outputs": [],
                 "execution_count": None}
        nb["cells"].insert(nb["cells"].index(anchor) + 1, extra)
    out, _ = graded(student(edit))
    ids = [c.get("id") for c in out["cells"]]
    extra = out["cells"][ids.index("shapes") + 1]
    assert cell_text(extra) == "helper = 1" and "nbgrader" not in extra["metadata"]


def test_student_kernelspec_is_ignored():
    def edit(nb):
        nb["metadata"]["kernelspec"] = {"name": "evil", "language": "python", "display_name": "x"}
    out, notes = graded(student(edit))
    assert out["metadata"]["kernelspec"]["name"] == "python3"
    assert any("kernel" in n for n in notes)


def test_garbage_cells_are_ignored():
    nb = student()
    nb["cells"].extend([None, 3, {"cell_type": "weird"}, {"cell_type": "code", "source": ["a", 1]}])
    out, _ = graded(nb)
    assert len(out["cells"]) == len(RELEASE["cells"]) + 1
    import nbformat
    nbformat.validate(nbformat.from_dict(out))     # a valid notebook, ids and all


PNG = {"image/png": "iVBORw0KGgo" + "A" * 100}


def test_pasted_pictures_are_kept_checked_and_bounded(monkeypatch):
    import base64

    import nbformat

    from autograder.intake import assemble as assemble_module
    monkeypatch.setattr(assemble_module, "ATTACHMENT_CHARS", 200)

    def paste(nb):
        (cell,) = by_grade_id(nb, "map_written")
        cell["source"] = "![a](attachment:a.png) ![b](attachment:b.png) ![c](attachment:c.png)"
        cell["attachments"] = {"a.png": PNG, "b.png": {"image/png": ["iVBOR", "w0KGgo" + "B" * 200]},
                               "junk": {"image/png": 7}, "": PNG}
        nb["cells"].append({"cell_type": "markdown", "metadata": {}, "source": "mine ![d](attachment:d.png)",
                            "attachments": {"d.png": PNG}})
    out, notes = graded(student(paste))
    nbformat.validate(nbformat.from_dict(out))
    (answer,) = by_grade_id(out, "map_written")
    kept = answer["attachments"]
    assert kept["a.png"] == PNG                                         # kept as pasted
    assert set(kept) == {"a.png", "b.png", "c.png"}                   # junk dropped, nothing else
    for name, why in (("b.png", "too large"), ("c.png", "missing from the notebook")):
        assert list(kept[name]) == ["image/svg+xml"]
        assert why in base64.b64decode(kept[name]["image/svg+xml"]).decode()
    assert any("'b.png'" in n and "was left out" in n and "smaller picture" in n for n in notes), notes
    assert any("'c.png' is named but not in the notebook" in n for n in notes), notes
    added = [c for c in out["cells"] if c.get("id", "").startswith("added-")]
    assert added[0]["attachments"]["d.png"] != PNG                   # over the notebook's budget by then


def test_the_outputs_handed_in_are_told_by_the_graded_cells_ids():
    """What a graded cell that ran after a hidden test shows of the student's own run (grading/judging.py
    conceal_after_hidden_inputs): the outputs of the student's cell it was made from, an answer matched by its
    grade id though the student's copy has another id, a cell the student added by the id the grader gave it."""
    mine = {"output_type": "stream", "name": "stdout", "text": "my run\n"}
    added = {"output_type": "stream", "name": "stdout", "text": "added\n"}

    def edit(nb):
        (answer,) = by_grade_id(nb, "shapes")
        answer["id"], answer["outputs"] = "renamed-by-a-copy", [mine]
        at = nb["cells"].index(answer)
        nb["cells"].insert(at + 1, {"cell_type": "code", "id": "my-own", "metadata": {}, "source": "print('added')",
                                    "outputs": [added], "execution_count": 3})
    handed: dict = {}
    out, _ = assemble(student(edit), RELEASE, SOURCE, handed)
    (shapes,) = by_grade_id(out, "shapes")
    extra = next(c for c in out["cells"] if c["id"].startswith("added-"))
    assert handed[shapes["id"]] == [mine] and handed[extra["id"]] == [added] and "my-own" not in handed
    assert all(c.get("outputs", []) == [] for c in out["cells"] if c["cell_type"] == "code"), "the graded notebook starts empty"
