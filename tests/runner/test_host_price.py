"""An operator's price for a self-hosted provider's machine becomes that provider's pricing
(runner/host_price.py): provider-sourced, its source shown, shared by vCPU; a bad setting stops
loading the declaration with the variable's name."""

import pytest

from runner import host_price
from runner.declarations import DeclarationError, get_declaration
from runner.pricing import trial_cost_usd

JOB_HOST = {
    "BOXBENCH_HOST_PRICE_PER_HOUR": "0.1664",
    "BOXBENCH_HOST_PRICE_SOURCE": "AWS on-demand, t3.xlarge, us-east-1",
    "BOXBENCH_HOST_PRICE_DATE": "2026-12-01",
    "BOXBENCH_JOB_HOST_CPUS": "4",
}
ALL = [
    *JOB_HOST,
    "BOXBENCH_REMOTE_DOCKER_PRICE_PER_HOUR",
    "BOXBENCH_REMOTE_DOCKER_PRICE_SOURCE",
    "BOXBENCH_REMOTE_DOCKER_PRICE_DATE",
    "BOXBENCH_REMOTE_DOCKER_PRICE_CPUS",
]


@pytest.fixture
def env(monkeypatch):
    for name in ALL:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_without_a_price_the_declarations_stay_unpriced(env):
    for slug in ("local", "docker", "remote-docker"):
        pricing = get_declaration(slug).pricing
        assert pricing["provider_sourced"] is False and pricing["per_vcpu_second"] == 0


def test_a_job_host_price_prices_local_and_docker_by_vcpu(env):
    unpriced, e2b = get_declaration("local"), get_declaration("e2b")
    for name, value in JOB_HOST.items():
        env.setenv(name, value)
    for slug in ("local", "docker"):
        declaration = get_declaration(slug)
        pricing = declaration.pricing
        assert pricing["provider_sourced"] is True and pricing["date"] == "2026-12-01"
        assert "AWS on-demand, t3.xlarge, us-east-1" in pricing["source"]
        assert "BOXBENCH_HOST_PRICE_PER_HOUR" in pricing["source"]
        # A 2-vCPU sandbox held an hour on a 4-vCPU host costs half the host's hour.
        assert trial_cost_usd(pricing, 2, 4096, 3600) == pytest.approx(0.1664 / 2)
    # Another pricing is another definition: stored rows tell the two apart.
    assert get_declaration("local").pricing_digest != unpriced.pricing_digest
    assert get_declaration("remote-docker").pricing["provider_sourced"] is False
    assert get_declaration("e2b").pricing_digest == e2b.pricing_digest  # priced by its own bill


def test_the_remote_engine_host_has_its_own_price_and_vcpus(env):
    env.setenv("BOXBENCH_REMOTE_DOCKER_PRICE_PER_HOUR", "0.40")
    env.setenv("BOXBENCH_REMOTE_DOCKER_PRICE_SOURCE", "Hetzner CCX33 price list")
    env.setenv("BOXBENCH_REMOTE_DOCKER_PRICE_DATE", "2026-11-20")
    with pytest.raises(DeclarationError, match="BOXBENCH_REMOTE_DOCKER_PRICE_CPUS is unset"):
        get_declaration("remote-docker")
    env.setenv("BOXBENCH_REMOTE_DOCKER_PRICE_CPUS", "8")
    pricing = get_declaration("remote-docker").pricing
    assert pricing["provider_sourced"] and "Hetzner CCX33" in pricing["source"]
    assert trial_cost_usd(pricing, 1, 2048, 3600) == pytest.approx(0.05)
    assert get_declaration("local").pricing["provider_sourced"] is False


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("BOXBENCH_HOST_PRICE_PER_HOUR", "cheap", "BOXBENCH_HOST_PRICE_PER_HOUR='cheap' is not a"),
        ("BOXBENCH_HOST_PRICE_PER_HOUR", "-1", "must be a positive number"),
        ("BOXBENCH_HOST_PRICE_PER_HOUR", "nan", "must be a positive number"),
        ("BOXBENCH_HOST_PRICE_PER_HOUR", "0", "must be a positive number"),
        ("BOXBENCH_HOST_PRICE_PER_HOUR", "1e308", "above 10,000 USD per hour"),
        ("BOXBENCH_HOST_PRICE_PER_HOUR", "inf", "must be a positive number"),
        ("BOXBENCH_HOST_PRICE_SOURCE", " ", "BOXBENCH_HOST_PRICE_SOURCE is unset"),
        ("BOXBENCH_HOST_PRICE_DATE", "December", "BOXBENCH_HOST_PRICE_DATE='December' must be"),
        ("BOXBENCH_JOB_HOST_CPUS", "0", "BOXBENCH_JOB_HOST_CPUS='0' must be a positive"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(env, name, value, message):
    for key, good in JOB_HOST.items():
        env.setenv(key, good)
    env.setenv(name, value)
    with pytest.raises(DeclarationError, match=message) as refused:
        get_declaration("local")
    assert "local.yaml" in str(refused.value)


def test_the_hint_names_the_settings_of_self_hosted_providers_only():
    assert "BOXBENCH_HOST_PRICE_PER_HOUR" in host_price.setting_hint("docker")
    assert "BOXBENCH_REMOTE_DOCKER_PRICE_PER_HOUR" in host_price.setting_hint("remote-docker")
    assert host_price.setting_hint("e2b") == ""


@pytest.mark.django_db
def test_a_price_set_after_the_first_run_is_refused_with_what_to_do(env):
    from runner import store
    from runner.catalog import sync_catalog

    sync_catalog(providers=["local"], benchmarks=[])
    for name, value in JOB_HOST.items():
        env.setenv(name, value)
    with pytest.raises(store.DefinitionConflict, match="stored pricing is .digest") as refused:
        sync_catalog(providers=["local"], benchmarks=[])
    assert "keep the setting this database was made with" in str(refused.value)
