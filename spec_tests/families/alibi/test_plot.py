"""``posenc-spec plot`` of ALiBi targets: the slopes per head, the bias matrix and its error in
units of its bound, written as PNGs, with the verdict of the call drawn."""

from __future__ import annotations

from posenc_spec.cli import main


def test_slopes_are_drawn_per_head(impl, capsys):
    """alibi-slopes: slopes.png, and the verdict names how far out of bound the geometric slopes are."""
    assert main(["plot", "impl:geometric_slopes", "--api", "alibi-slopes", "--out", "pictures"]) == 0
    out = capsys.readouterr().out
    assert (impl / "pictures" / "slopes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "at 12 heads under paper, float32: slopes out of bound" in out, out


def test_a_bias_is_drawn_with_its_error_over_its_bound(impl, capsys):
    """alibi-bias: slopes.png, bias.png and bias_difference.png; a conforming module is within bound."""
    assert main(["plot", "impl:Bidirectional", "--api", "alibi-bias", "--signature", "module-ij", "--init",
                 "heads={num_heads}", "--alibi-convention", "bidirectional", "--out", "pictures"]) == 0
    out = capsys.readouterr().out
    assert sorted(path.name for path in (impl / "pictures").iterdir()) == ["bias.png", "bias_difference.png",
                                                                          "slopes.png"]
    assert "every judged element within its bound" in out, out
