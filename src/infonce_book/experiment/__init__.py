"""What every chapter uses: the claims ledger (:mod:`~.ledger`), the result cache (:mod:`~.cache`),
chapter set-up with profile, device and seed (:mod:`~.setup`, :mod:`~.profiles`), paths
(:mod:`~.paths`) and the figure style (:mod:`~.style`). Import from the modules directly; this
package imports nothing, so that the command line (which needs only the paths, profiles and the
ledger) starts fast."""
