"""CLI behaviour: bad input exits 2 with one line and no traceback."""


from harness.cli.entry import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code, err, *needles):
    assert code == 2
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("harness: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_unknown_suite(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "suite=eb_alfrd", f"out={tmp_path}")
    assert_usage_error(code, err, "eb_alfrd")


def test_unknown_planner_in_registry_gets_did_you_mean(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "planner.name=oracel", f"out={tmp_path}")
    assert_usage_error(code, err, "did you mean 'oracle'")


def test_bad_override_syntax(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "limit=[1,", f"out={tmp_path}")
    assert_usage_error(code, err, "override")


def test_override_of_unknown_key(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "no_such_key=3", f"out={tmp_path}")
    assert_usage_error(code, err, "no_such_key")


def test_a_mistyped_config_key_gets_a_did_you_mean(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "spli=seen", f"out={tmp_path}")
    assert_usage_error(code, err, "Did you mean split?")
    code, _, err = run_cli(capsys, "run", "runner.pipelin=false", f"out={tmp_path}")
    assert_usage_error(code, err, "Did you mean runner.pipeline?")
    code, _, err = run_cli(capsys, "run", "no_such_key=3", f"out={tmp_path}")
    assert_usage_error(code, err, "It is not a config key")
    assert "Did you mean" not in err  # nothing close: no guess


def test_version_prints_the_package_version(capsys):
    import tomllib
    from pathlib import Path

    import pytest

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    version = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]["version"]
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"harness {version}"


def test_type_error_caught_at_load_time(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "limit=abc", f"out={tmp_path}")
    assert_usage_error(code, err, "limit")


def test_sweep_without_multirun_flag(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "planner=oracle,random", f"out={tmp_path}")
    assert_usage_error(code, err, "-m")


def test_unknown_split(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "split=unsen", f"out={tmp_path}")
    assert_usage_error(code, err, "did you mean 'unseen'")


def test_missing_data_path(capsys, tmp_path):
    code, _, err = run_cli(
        capsys, "run", "split=base", f"suite.params.data_dir={tmp_path / 'nowhere'}", f"out={tmp_path}"
    )
    assert_usage_error(code, err, "data_dir")


def test_malformed_episode_file(capsys, tmp_path):
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "splits.json").write_text("{not json")
    code, _, err = run_cli(capsys, "run", "split=base", f"suite.params.data_dir={tmp_path}", f"out={tmp_path}")
    assert_usage_error(code, err, "splits.json")


def test_output_directory_that_cannot_be_created(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, _, err = run_cli(capsys, "run", "limit=1", f"out={blocker / 'sub'}")
    assert_usage_error(code, err, "cannot create output directory")


def test_table_on_missing_store(capsys, tmp_path):
    code, _, err = run_cli(capsys, "table", str(tmp_path / "empty"))
    assert_usage_error(code, err, "no result store")


def test_table_on_unreadable_store(capsys, tmp_path):
    (tmp_path / "results.sqlite").write_bytes(b"garbage" * 100)
    code, _, err = run_cli(capsys, "table", str(tmp_path))
    assert_usage_error(code, err, "not a harness result store")


def test_list_is_instant_and_names_everything(capsys):
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    for name in ("eb_alfred", "oracle", "random", "local", "process"):
        assert name in out


def test_list_name_shows_a_suites_failure_classes(capsys):
    code, out, _ = run_cli(capsys, "list", "eb_alfred")
    assert code == 0
    line = next(l for l in out.splitlines() if "failure classes" in l)
    assert "success" in line and "error" in line and "other" in line
    from harness.registry.catalog import SUITES

    own = SUITES.entry("eb_alfred").failure_classes
    assert own and all(f"{c.name} (its own: {c.label})" in line for c in own)


def test_run_then_table_with_missing_baseline(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "limit=3", "suite.params.render=false", f"out={tmp_path}")
    assert code == 0, err
    # No variant called 'base' and no --baseline: a table without Δ columns, and a note saying so.
    code, out, err = run_cli(capsys, "table", str(tmp_path))
    assert code == 0 and "oracle" in out and "Δ" not in out and "no variant is called 'base'" in err
    # A named baseline that has no records is bad input naming the variants present.
    code, out, err = run_cli(capsys, "table", str(tmp_path), "--baseline", "base")
    assert_usage_error(code, err, "oracle")
    code, out, err = run_cli(capsys, "table", str(tmp_path), "--baseline", "oracle")
    assert code == 0, err
    assert "oracle" in out and "eb_alfred/seen" in out
