"""The fit form's value transform: checked as `levy fit --transform`, passed to the fit (in
this process and in the fit pool), and read back from a saved model."""

from __future__ import annotations

import pytest
from levy_dashboard.fitting import fit_pool, fits, saved_models

from levy_core.pipeline import recipe


class Stop(Exception):
    """Raised by the stand-in fit: the arguments got through."""


def test_the_form_refuses_a_bad_transform_by_name() -> None:
    assert fits.transform_error("auto") is None
    assert fits.transform_error("bili=log,albumin=none") is None
    err = fits.transform_error("bili=cube")
    assert err is not None and "'bili=cube'" in err and "Value transform" in err and "--transform" not in err
    assert fits.FitSettings().transform == "auto"
    assert fits.FitSettings(transform="none").key() != fits.FitSettings().key()  # a different cache entry


def test_the_setting_reaches_the_fit(monkeypatch: pytest.MonkeyPatch, fit_obs) -> None:
    seen: list[object] = []

    def fake_fit(obs, **kwargs):
        seen.append(kwargs["transform"])
        raise Stop

    monkeypatch.setattr(recipe, "fit", fake_fit)
    for text, parsed in (("none", "none"), ("a=log, b=none", {"a": "log", "b": "none"})):
        with pytest.raises(Stop):
            fits.fit_model(fit_obs, "hash-" + text, "test", fits.FitSettings(epochs=1, mc_passes=2, transform=text))
        assert seen[-1] == parsed


def test_the_setting_reaches_the_fit_pool(monkeypatch: pytest.MonkeyPatch, fit_obs) -> None:
    submitted: list[dict] = []

    class Pool:
        def submit_fit(self, key, obs, **kwargs):
            submitted.append(kwargs)

        def set_liveness(self, alive):  # the server's check that a fit's session is still there
            pass

    monkeypatch.setattr(fit_pool, "pool", lambda: Pool())
    fits.submit_fit(fit_obs, "hash", fits.FitSettings(epochs=1, mc_passes=2, transform="bili=log1p"))
    assert submitted[-1]["transform"] == {"bili": "log1p"}


def test_a_saved_model_reports_its_transforms(fitted) -> None:
    assert saved_models.saved_settings(fitted).transform == "none"  # the synthetic sample: nothing skewed
