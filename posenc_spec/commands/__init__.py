"""The ``posenc-spec`` subcommands, each a thin layer over the library: ``check`` and
``merge`` (:mod:`.check`), ``identify`` (:mod:`.identify`), ``plot`` (:mod:`.plot`),
``snapshot`` (:mod:`.snapshot`) and ``diff`` (:mod:`.diff`); the flags they share are in
:mod:`.arguments`. They sit above the gate and the figures, which never import them."""
