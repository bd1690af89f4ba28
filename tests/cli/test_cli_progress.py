"""levy_core.cli.fit.EpochBars: one tqdm bar per model, fed ``levy_core.training.train.Progress`` events,
written to a text stream; a bar closes at the last epoch or on early stopping (eta 0)."""

from __future__ import annotations

import io

from levy_core.cli.fit import EpochBars
from levy_core.training.train import Progress


def progress(model: str, epoch: int, epochs: int, eta: float, loss: float = 0.123456) -> Progress:
    return Progress(model=model, epoch=epoch, epochs=epochs, train_loss=loss, val_loss=loss * 2,
                    best_val_loss=loss * 2, seconds=float(epoch), eta_seconds=eta)


def last_line(text: str, model: str) -> str:
    """The last refresh of ``model``'s bar (tqdm redraws with carriage returns)."""
    return [part for part in text.replace("\n", "\r").split("\r") if part.startswith(f"{model}:")][-1]


def test_bars_name_both_models_and_show_their_final_epoch_counts() -> None:
    stream = io.StringIO()
    bars = EpochBars(stream)
    for epoch in (1, 2, 3):  # runs to its planned end
        bars(progress("levy", epoch, 3, eta=3.0 - epoch + 0.5 if epoch < 3 else 0.5, loss=0.1 / epoch))
    assert bars.bar is None, "closed at the last planned epoch, even with a non-zero eta"
    for epoch in (1, 2, 3, 4):
        bars(progress("softmax", epoch, 7, eta=10.0, loss=0.2))
        assert bars.bar is not None and bars.bar.n == epoch
    bars(progress("softmax", 5, 7, eta=0.0, loss=0.2))  # early stop: no time left
    assert bars.bar is None
    text = stream.getvalue()
    assert "levy:" in text and "softmax:" in text
    assert "3/3" in last_line(text, "levy") and "5/7" in last_line(text, "softmax")
    assert "7/7" not in text, "an early-stopped bar does not claim the planned epochs"
    assert f"loss={0.1 / 3:.4g}" in last_line(text, "levy"), "the latest training loss"
    assert f"val={0.4:.4g}" in last_line(text, "softmax")


def test_a_new_model_closes_the_previous_bar() -> None:
    stream = io.StringIO()
    bars = EpochBars(stream)
    bars(progress("levy", 1, 4, eta=9.0))
    first = bars.bar
    assert first is not None and first.desc == "levy" and first.total == 4
    bars(progress("softmax", 1, 4, eta=9.0))  # the Lévy model stopped without saying so
    assert bars.bar is not first and bars.bar.desc == "softmax" and bars.bar.n == 1
    assert first.disable, "the previous bar was closed"
    bars.close()
    assert bars.bar is None
    bars.close()  # closing twice is harmless
    assert "levy:" in stream.getvalue() and "softmax:" in stream.getvalue()


def test_an_early_stop_on_the_first_epoch_closes_at_once() -> None:
    stream = io.StringIO()
    bars = EpochBars(stream)
    bars(progress("levy", 1, 40, eta=0.0))
    assert bars.bar is None
    assert "1/40" in last_line(stream.getvalue(), "levy")


def test_epochs_skipped_between_events_still_count() -> None:
    stream = io.StringIO()
    bars = EpochBars(stream)
    bars(progress("levy", 2, 6, eta=5.0))  # a callback missed epoch 1
    assert bars.bar.n == 2
    bars(progress("levy", 6, 6, eta=0.0))
    assert bars.bar is None and "6/6" in last_line(stream.getvalue(), "levy")
