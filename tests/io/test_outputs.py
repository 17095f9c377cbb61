"""Output paths: no file written through a symbolic link unless asked, never outside the
folder named, and a race between the check and the write cannot bypass either (issue 21)."""

from __future__ import annotations

import os

import pytest

from evalcert.errors import InputError
from evalcert.io.outputs import check_output, output_policy, writing
from tests._cli import run_cli

SCORES = "agent,q1,q2,q3\na,0.5,0.2,-0.1\nb,0.3,0.0,-0.3\nc,0.1,-0.2,-0.5\n"


def _binary(path):
    rows = ["model," + ",".join(f"i{j}" for j in range(6))]
    rows += [f"m{i}," + ",".join(str((i * 7 + j * 3) % 5 % 2) for j in range(6))
             for i in range(20)]
    path.write_text("\n".join(rows) + "\n")


def _one_error(status, err):
    lines = [x for x in err.splitlines() if ": error: " in x]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "s.csv").write_text(SCORES)
    (tmp_path / "victim.json").write_text("keep")
    (tmp_path / "elsewhere").mkdir()
    return tmp_path


@pytest.mark.parametrize("force", [False, True])
def test_a_link_to_an_existing_file_is_refused_and_the_file_kept(folder, force):
    (folder / "link.json").symlink_to(folder / "victim.json")
    argv = ["fit", str(folder / "s.csv"), "--json", str(folder / "link.json")]
    status, _, err = run_cli(argv + (["--force"] if force else []))
    assert "symbolic link" in _one_error(status, err)
    assert (folder / "victim.json").read_text() == "keep"
    assert (folder / "link.json").is_symlink()


def test_a_dangling_link_is_refused_and_its_target_not_created(folder):
    (folder / "dangling.json").symlink_to(folder / "elsewhere" / "x.json")
    status, _, err = run_cli(["fit", str(folder / "s.csv"), "--json",
                              str(folder / "dangling.json")])
    assert "--follow-symlinks" in _one_error(status, err)
    assert list((folder / "elsewhere").iterdir()) == []


def test_follow_symlinks_writes_the_target_and_keeps_the_link(folder):
    (folder / "dangling.json").symlink_to(folder / "elsewhere" / "x.json")
    (folder / "link.json").symlink_to(folder / "victim.json")
    status, _, _ = run_cli(["fit", str(folder / "s.csv"), "--json",
                            str(folder / "dangling.json"), "--follow-symlinks"])
    assert status == 0 and (folder / "elsewhere" / "x.json").read_text().startswith("{")
    status, _, err = run_cli(["fit", str(folder / "s.csv"), "--json", str(folder / "link.json"),
                              "--follow-symlinks"])
    assert "exists" in _one_error(status, err)      # the target exists: --force still needed
    status, _, _ = run_cli(["fit", str(folder / "s.csv"), "--json", str(folder / "link.json"),
                            "--follow-symlinks", "--force"])
    assert status == 0 and (folder / "link.json").is_symlink()
    assert (folder / "victim.json").read_text().startswith("{")


def test_out_dir_members_never_lead_outside_the_folder(folder):
    _binary(folder / "b.csv")
    out = folder / "out"
    out.mkdir()
    (out / "models.csv").symlink_to(folder / "victim.json")
    for extra in ([], ["--force", "--follow-symlinks"]):
        status, _, err = run_cli(["irt", "fit", str(folder / "b.csv"), "--out-dir", str(out),
                                  *extra])
        assert "outside" in _one_error(status, err)
        assert (folder / "victim.json").read_text() == "keep"


def test_an_out_dir_that_is_a_link_needs_follow_symlinks(folder):
    _binary(folder / "b.csv")
    (folder / "real").mkdir()
    (folder / "linked").symlink_to(folder / "real")
    (folder / "dangling").symlink_to(folder / "elsewhere" / "new")
    for name in ("linked", "dangling"):
        status, _, err = run_cli(["irt", "fit", str(folder / "b.csv"), "--out-dir",
                                  str(folder / name)])
        assert "symbolic link" in _one_error(status, err)
    assert list((folder / "real").iterdir()) == [] and list((folder / "elsewhere").iterdir()) == []
    status, _, _ = run_cli(["irt", "fit", str(folder / "b.csv"), "--out-dir",
                            str(folder / "linked"), "--follow-symlinks"])
    assert status == 0 and sorted(p.name for p in (folder / "real").iterdir()) == [
        "items.csv", "models.csv"]


def test_bench_report_is_never_written_through_a_link(folder):
    out = folder / "bench"
    out.mkdir()
    (out / "report.md").symlink_to(folder / "victim.json")
    base = ["bench", "--quick", "--family", "ilp-m1", "--backends", "native", "--profile", "low",
            "--jobs", "1", "--no-memory", "--out"]
    for extra in ([], ["--force"], ["--force", "--follow-symlinks"]):
        status, _, err = run_cli([*base, str(out), *extra])
        _one_error(status, err)
        assert (folder / "victim.json").read_text() == "keep"
    (folder / "dangling").symlink_to(folder / "elsewhere" / "b")
    status, _, err = run_cli([*base, str(folder / "dangling")])
    assert "symbolic link" in _one_error(status, err)
    assert list((folder / "elsewhere").iterdir()) == []


def test_audit_outputs_refuse_links(folder):
    log = folder / "log.csv"
    log.write_text("item,grader,label\n" + "".join(f"q{i},g{g},{'ab'[(i + g) % 2]}\n"
                                                   for i in range(6) for g in range(3)))
    for flag, name in (("--json", "o.json"), ("--csv", "o.csv"), ("--plot", "o.png")):
        (folder / name).symlink_to(folder / "victim.json")
        extra = ["--bounds"] if flag == "--csv" else []
        status, _, err = run_cli(["audit", str(log), flag, str(folder / name), "--force", *extra])
        assert "symbolic link" in _one_error(status, err), flag
        assert (folder / "victim.json").read_text() == "keep"


def test_a_link_made_after_the_check_is_not_written_through(tmp_path):
    # the race: the check passed, then someone put a link (or a file) at the path
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    target = tmp_path / "out.txt"
    for force in (False, True):
        with output_policy(force=force, follow_symlinks=False):
            check_output(target, force=force)
            with pytest.raises(InputError):
                with writing(target) as tmp:
                    tmp.write_text("new")
                    target.symlink_to(victim)
        assert victim.read_text() == "keep" and target.is_symlink()
        target.unlink()
    with output_policy(force=False, follow_symlinks=False):
        check_output(target)
        with pytest.raises(InputError, match="appeared"):
            with writing(target) as tmp:
                tmp.write_text("new")
                target.write_text("theirs")
    assert target.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "victim.txt"]  # no temp left


def test_writing_keeps_the_usual_file_mode(tmp_path):
    with writing(tmp_path / "x.txt") as tmp:
        tmp.write_text("x")
    mask = os.umask(0o022)
    os.umask(mask)
    assert (tmp_path / "x.txt").stat().st_mode & 0o777 == 0o666 & ~mask


def test_library_writes_follow_links_as_python_does(tmp_path):
    (tmp_path / "target.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to(tmp_path / "target.txt")
    with writing(tmp_path / "link.txt") as tmp:
        tmp.write_text("new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "target.txt").read_text() == "new"
