"""The experiment cache: keyed by the runner, its configuration (models by their params) and src/."""

import pandas as pd

from infonce_book.experiment.cache import cached
from infonce_book.models import VonMisesFisher


def test_a_model_argument_enters_the_key_by_its_params(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_CACHE_DIR", str(tmp_path))
    calls = []

    @cached
    def table(model, tau):
        calls.append(model.kappa)
        return pd.DataFrame({"kappa": [model.kappa], "tau": [tau]})

    a = table(model=VonMisesFisher(3, 4.0), tau=0.5)
    b = table(model=VonMisesFisher(3, 4.0), tau=0.5)  # an equal model: served from the cache
    c = table(model=VonMisesFisher(3, 2.0), tau=0.5)  # another kappa: computed
    assert calls == [4.0, 2.0] and a.equals(b) and list(c.kappa) == [2.0]
    assert len(list(tmp_path.glob("*.table-*.pkl"))) == 2
    assert table.uncached(VonMisesFisher(3, 1.0), 0.5).kappa.iloc[0] == 1.0 and calls[-1] == 1.0
