"""Each estimator parameter is declared once (``dscir.params.Param``): the
signature, constraints, docstring, command line and each model's configuration
are built from it."""

from __future__ import annotations

import argparse
import dataclasses
import inspect

import pytest
from sklearn.base import clone

import dscir
from dscir.api.lda_params import PARAMS
from dscir.api.mixture_params import DPMM, MIXTURE
from dscir.params import AUTO
from dscir.cli import main
from dscir.cli.params import add_params, check_flags, estimator_kwargs
from dscir.errors import DscirError
from dscir.models.lda import config as lda_config
from dscir.models.mixtures.dp import config as dp_config
from dscir.models.mixtures.finite import config as finite_config


def lda_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(exit_on_error=False)
    add_params(p, PARAMS)
    return p


@pytest.mark.parametrize("cls, params", [(dscir.LDA, PARAMS), (dscir.DPMixture, DPMM),
                                         (dscir.Mixture, MIXTURE)])
def test_the_signature_is_the_declarations(cls, params):
    """Guards against a parameter declared but missing from __init__ (get_params
    would then drop it and clone lose it)."""
    sig = inspect.signature(cls.__init__)
    assert [n for n in sig.parameters if n != "self"] == [p.name for p in params]
    assert {n: v.default for n, v in sig.parameters.items() if n != "self"} == \
        {p.name: p.default for p in params}
    assert clone(cls()).get_params() == cls().get_params()
    assert dscir.LDA(7, "sgrld").get_params()["sampler"] == "sgrld"  # positional as before


def test_get_set_params_and_clone_keep_every_parameter():
    model = dscir.LDA(12, alpha=0.3, tau=None, n_iter=7, placement="driver")
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    copy.set_params(beta=0.2)
    assert (copy.beta, model.beta) == (0.2, AUTO)
    with pytest.raises(DscirError, match="no parameter bogus"):
        model.set_params(bogus=1)


def test_the_docstring_documents_every_parameter():
    doc = dscir.LDA.__doc__
    for p in PARAMS:
        assert f"    {p.name} : {p.help}" in doc


def test_every_flag_reads_back_into_the_estimator():
    """Guards against a flag whose value is dropped or renamed on its way to LDA."""
    args = lda_parser().parse_args(["--topics", "9", "--iterations", "40", "--tau", "none",
                                    "--alpha", "auto", "--beta", "0.25", "--warm-start",
                                    "--kernel", "dense"])
    kw = estimator_kwargs(args, PARAMS)
    assert (kw["n_topics"], kw["n_iter"], kw["tau"], kw["alpha"], kw["beta"]) == \
        (9, 40, None, AUTO, 0.25)
    assert (kw["warm_start"], kw["kernel"]) == (True, "dense")
    defaults = estimator_kwargs(lda_parser().parse_args([]), PARAMS)
    assert defaults == {k: v for k, v in dscir.LDA().get_params().items()
                        if k not in ("sampler_options", "progress")}  # the convention's


@pytest.mark.parametrize("python, flag, value, message", [
    ("n_iter", "--iterations", -1, "must be >= 0, got -1"),
    ("n_topics", "--topics", 1, "must be >= 2, got 1"),
    ("alpha", "--alpha", 0.0, "must be > 0, got 0.0"),
])
def test_an_error_names_what_the_user_typed(python, flag, value, message):
    model = dscir.LDA(**{python: value})
    with pytest.raises(DscirError, match=f"^{python} {message}"):
        model.chain_config()
    with pytest.raises(DscirError, match=f"^{flag} {message}"):
        check_flags(model)



@pytest.mark.parametrize("python, flag, value", [
    ("burn_sweeps", "--burn-sweeps", 1), ("control_variates", "--control-variates", True),
], ids=["burn_sweeps", "control_variates"])
def test_what_only_a_warm_start_uses_is_refused_without_one(python, flag, value):
    """One burn rule: a cold visit always discards half its sweeps, so burn_sweeps
    (like control_variates) without warm_start is one error, not silently ignored."""
    model = dscir.LDA(sweeps=4, policy="reference", **{python: value})
    with pytest.raises(DscirError, match=f"^{python}={value!r} needs warm_start=True$"):
        model.chain_config()
    with pytest.raises(DscirError, match=f"^{flag}={value!r} needs --warm-start$"):
        check_flags(model)
    model.set_params(warm_start=True)
    assert getattr(model.chain_config(), python) == value
    assert model.set_params(burn_sweeps=1).chain_config().burn == 1

def test_the_command_line_names_the_flag(capsys):
    assert main(["fit", "lda", "/nonexistent/store", "--iterations", "-3"]) == 2
    assert "--iterations must be >= 0, got -3" in capsys.readouterr().err


def test_pairs_and_auto_choices_on_the_command_line():
    p = argparse.ArgumentParser(exit_on_error=False)
    add_params(p, DPMM)
    kw = estimator_kwargs(p.parse_args(["--step-sizes", "0.1", "0.2", "--sampler", "auto",
                                        "--alpha-prior", "2", "3"]), DPMM)
    assert (kw["step_sizes"], kw["sampler"], kw["alpha_prior"]) == ((0.1, 0.2), AUTO, (2.0, 3.0))
    assert estimator_kwargs(p.parse_args([]), DPMM) == \
        {k: v for k, v in dscir.DPMixture().get_params().items() if k != "progress"}
    model = dscir.DPMixture(step_sizes=(0.1, -1.0))
    with pytest.raises(DscirError, match=r"^step_sizes\[1\] \(h_DP\) must be > 0"):
        model.chain_config()
    with pytest.raises(DscirError, match=r"^--step-sizes\[1\] \(h_DP\) must be > 0"):
        check_flags(model)


def test_the_reference_shows_a_table_of_each_declaration():
    """Guards against a parameter or an estimator missing from the API reference."""
    from pathlib import Path

    from dscir.api.params import markdown_table

    page = (Path(__file__).resolve().parents[2] / "docs/api/estimators.md").read_text()
    for module, name, params in (("lda_params", "PARAMS", PARAMS),
                                 ("mixture_params", "DPMM", DPMM),
                                 ("mixture_params", "MIXTURE", MIXTURE)):
        assert f"<!-- dscir-parameters: dscir.api.{module}:{name} -->" in page
        table = markdown_table(params).splitlines()
        assert len(table) == 2 + len(params)
        assert all(row.startswith(f"| `{p.name}` | `{p.default!r}` |")
                   for row, p in zip(table[2:], params))


def _fit_command(name: str) -> argparse.ArgumentParser:
    from dscir.cli import build_parser

    fit = next(a for a in build_parser()._subparsers._group_actions[0].choices["fit"]._actions
               if isinstance(a, argparse._SubParsersAction))
    return fit.choices[name]


def _rendered_reference() -> str:
    """docs/api/estimators.md as MkDocs renders it (the parameter tables filled in)."""
    import importlib.util
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    spec = importlib.util.spec_from_file_location("dscir_docs_hooks", docs / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks.on_page_markdown((docs / "api/estimators.md").read_text(), None, None, None)


def _config_fields(cls) -> set[str]:
    """The fields a chain's configuration records (with its stopping rule for LDA)."""
    if cls is dscir.LDA:
        config = cls(n_iter=AUTO, policy="reference").chain_config()
        return set(config.to_dict()) | {f"stopping:{k}" for k in config.stopping}
    return set(cls().chain_config().to_dict())


@pytest.mark.parametrize("cls, params, command", [
    (dscir.LDA, PARAMS, "lda"), (dscir.DPMixture, DPMM, "dpmm"),
    (dscir.Mixture, MIXTURE, "mixture")])
def test_a_declaration_reaches_every_place_it_is_used(cls, params, command):
    """Adding a parameter is one declaration (plus a configuration field where it is
    one): guards against a declared parameter missing from get_params, the command
    line, the API reference's table or the chain's configuration."""
    from dscir.api.lda_params import SAMPLER_OPTIONS

    flags = {s for a in _fit_command(command)._actions for s in a.option_strings}
    page, fields = _rendered_reference(), _config_fields(cls)
    for p in params:
        assert p.name in cls().get_params()
        assert p.option is None or p.option in flags, p.name
        assert f"| `{p.name}` | `{p.default!r}` |" in page, p.name
        expected = {True: {p.name}, "stopping": {f"stopping:{p.name}"}, False: set()}
        assert (set(p.config) if isinstance(p.config, tuple) else expected[p.config]) \
            <= fields, p.name
    if cls is dscir.LDA:
        for p in SAMPLER_OPTIONS:
            assert p.option in flags and f"| `{p.name}` |" in page


def test_tune_and_quickstart_flags_are_the_declarations_with_their_own_defaults():
    """Guards against a command's own default not reaching its parser (tune's short
    chains would run LDA's 1000 iterations) or a flag read back under another name."""
    from dscir.cli import build_parser
    from dscir.cli.tune import TUNE_DEFAULTS

    parser = build_parser()
    args = parser.parse_args(["tune", "store", "--out", "o", "--topics", "7", "--no-progress"])
    kw = estimator_kwargs(args, PARAMS)
    assert {k: kw[k] for k in TUNE_DEFAULTS} == TUNE_DEFAULTS
    assert (kw["n_topics"], args.progress, kw["sampler"]) == (7, False, "scir")
    args = parser.parse_args(["quickstart", "--iterations", "20"])
    assert estimator_kwargs(args, PARAMS) == {"n_topics": 12, "n_iter": 20, "sweeps": 50,
                                              "seed": 0}


@pytest.mark.parametrize("module, cls, own", [
    (lda_config, lda_config.LDAConfig, {"burn_in", "completion_every", "stopping"}),
    (dp_config, dp_config.DPMMConfig, {"burn_in"}),
    (finite_config, finite_config.MixtureConfig, {"burn_in"})])
def test_a_configuration_is_made_from_its_declarations(module, cls, own):
    """A field per configuration parameter (a pair's two), nothing declared beside
    them but the settings that are not parameters: the policy's required (guards
    against a configuration that runs with 'auto' where the policy never chose),
    the others at their declared default (guards against a second default)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    declared = {}
    for p in module.PARAMS:
        names = (p.name,) if p.config is True else p.config
        values = (p.default,) * len(names) if p.config is True or p.auto else p.default
        declared.update({n: (p, v) for n, v in zip(names, values)})
    assert set(fields) == set(declared) | own
    for name, (p, value) in declared.items():
        if p.auto:
            assert fields[name].default is dataclasses.MISSING, name
        else:
            assert fields[name].default == value, name
    assert all(fields[name].default is not dataclasses.MISSING for name in own)
