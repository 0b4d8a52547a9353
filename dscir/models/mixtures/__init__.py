"""The mixtures of multinomials over documents: ``finite`` (K fixed clusters) and
``dp`` (a Dirichlet process), with what both use: the configuration's common
fields (``common``), the components' placement (``components``, ``blocks``) and
the default settings policy (``policy``)."""
