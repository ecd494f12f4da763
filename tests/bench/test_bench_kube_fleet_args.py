"""``mkhub bench kube --workers N``'s arguments: a bad one is refused in one line before anything starts."""

from __future__ import annotations

import pytest

from hub.bench.kube_fleet_bench import main


@pytest.mark.parametrize(("argv", "says"), [
    (["--workers", "2", "--dispatcher", "bogus"], "--dispatcher: 'bogus' is none of"),
    (["--workers", "0"], "--workers and --jobs must be at least 1"),
    (["--workers", "2", "--jobs", "0"], "--workers and --jobs must be at least 1"),
])
def test_a_bad_argument_is_refused_with_its_name(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
